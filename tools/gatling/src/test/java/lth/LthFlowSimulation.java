package lth;

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import io.gatling.javaapi.core.*;
import io.gatling.javaapi.http.*;
import java.time.Duration;

/**
 * lth's login flow (harness/flows.py, issue 37): -Dlth.vus users injected at once, each logging in (POST the JSON
 * -Dlth.login_body to -Dlth.login_path), keeping the token its JSON answer holds in -Dlth.token_field in its own
 * session (jsonPath check, saveAs), and looping GETs of -Dlth.get_path with the token as header -Dlth.token_header
 * for -Dlth.duration seconds; with -Dlth.relogin_every=N (> 0) it logs in again after every N GETs. The requests
 * are named "login" and "get": simulation.log times each step apart. -Dlth.url is the base URL (scheme://host:port);
 * keep-alive and HTTP/2 as in LthSimulation (the same protocol).
 */
public class LthFlowSimulation extends Simulation {

  private static final int VUS = Integer.getInteger("lth.vus", 20);
  private static final int DURATION_S = Integer.getInteger("lth.duration", 10);
  private static final String LOGIN_PATH = System.getProperty("lth.login_path", "/api/auth/login");
  private static final String LOGIN_BODY = System.getProperty("lth.login_body", "{}");
  private static final String LOGIN_CONTENT_TYPE = System.getProperty("lth.login_content_type", "application/json");
  private static final String TOKEN_FIELD = System.getProperty("lth.token_field", "token");
  private static final String GET_PATH = System.getProperty("lth.get_path", "/api/contact");
  private static final String TOKEN_HEADER = System.getProperty("lth.token_header", "Authorization");
  private static final int RELOGIN_EVERY = Integer.getInteger("lth.relogin_every", 0);
  // Printed with the flow's shape: the adapter checks it (an install older than this source has no flow).
  static final String FLOW_MARK = "LTH_FLOW";

  // The body is sent as is (a function, not Gatling EL); the token is kept in the user's session.
  private static final ChainBuilder LOGIN =
      exec(http("login").post(LOGIN_PATH).header("Content-Type", LOGIN_CONTENT_TYPE).body(StringBody(session -> LOGIN_BODY))
              .check(jsonPath("$." + TOKEN_FIELD).saveAs("token")))
          // a user whose login failed has no token to carry: it stops (the API's counts judge the run)
          .exitHereIfFailed();
  private static final ChainBuilder GET = exec(http("get").get(GET_PATH).header(TOKEN_HEADER, "#{token}"));

  private static ScenarioBuilder flow() {
    Duration duration = Duration.ofSeconds(DURATION_S);
    ScenarioBuilder flow = scenario("lth-flow");
    System.out.println(FLOW_MARK + " relogin_every=" + RELOGIN_EVERY);
    if (RELOGIN_EVERY > 0) {
      return flow.during(duration).on(LOGIN, repeat(RELOGIN_EVERY).on(GET));
    }
    return flow.exec(LOGIN).during(duration).on(GET);
  }

  {
    setUp(flow().injectOpen(atOnceUsers(VUS))).protocols(LthSimulation.protocol());
  }
}
