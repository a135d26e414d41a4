package lth;

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import io.gatling.javaapi.core.*;
import io.gatling.javaapi.http.*;
import java.net.URI;
import java.time.Duration;

/**
 * lth: -Dlth.vus users injected at once, each looping one GET of -Dlth.url for -Dlth.duration
 * seconds over its own keep-alive connection; with -Dlth.keepalive=false every request says
 * "Connection: close", so each one goes over a new connection; with -Dlth.http2=true the users speak
 * HTTP/2 over TLS (enableHttp2: ALPN), each on its own connection.
 */
public class LthSimulation extends Simulation {

  private static final URI TARGET = URI.create(System.getProperty("lth.url", "http://127.0.0.1:80/"));
  private static final int VUS = Integer.getInteger("lth.vus", 20);
  private static final int DURATION_S = Integer.getInteger("lth.duration", 10);
  private static final boolean KEEPALIVE = !"false".equals(System.getProperty("lth.keepalive", "true"));
  // Printed when keep-alive is off: the adapter checks it (an install older than this source would
  // ignore -Dlth.keepalive and keep the connections open).
  static final String CLOSE_MARK = "LTH_CONNECTION_CLOSE";
  private static final boolean HTTP2 = Boolean.getBoolean("lth.http2");
  static final String HTTP2_MARK = "LTH_HTTP2";

  private static String path() {
    String path = TARGET.getRawPath().isEmpty() ? "/" : TARGET.getRawPath();
    return TARGET.getRawQuery() == null ? path : path + "?" + TARGET.getRawQuery();
  }

  /** The HTTP protocol of every lth simulation (LthFlowSimulation's too): base URL, keep-alive, HTTP/2. */
  static HttpProtocolBuilder protocol() {
    HttpProtocolBuilder protocol =
        http.baseUrl(TARGET.getScheme() + "://" + TARGET.getRawAuthority())
            // no request to gatling.io before the run
            .disableWarmUp()
            // every request goes to the server (no If-None-Match/If-Modified-Since, no 304s)
            .disableCaching();
    if (HTTP2) {
      System.out.println(HTTP2_MARK);
      protocol = protocol.enableHttp2();
    }
    if (KEEPALIVE) {
      return protocol;
    }
    System.out.println(CLOSE_MARK);
    return protocol.connectionHeader("close");
  }

  private final ScenarioBuilder scenario =
      scenario("lth").during(Duration.ofSeconds(DURATION_S)).on(exec(http("GET").get(path())));

  {
    setUp(scenario.injectOpen(atOnceUsers(VUS))).protocols(protocol());
  }
}
