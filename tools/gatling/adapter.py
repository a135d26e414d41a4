"""Gatling: Scala/Java on Netty (event loops), a Java DSL simulation, one virtual user per connection."""
from collections import Counter

from harness.stats import DEFINITION, latency_metrics
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput
from tools.gatling import simlog

SIMULATION = "lth.LthSimulation"   # src/test/java/lth/LthSimulation.java, compiled at install
FLOW_SIMULATION = "lth.LthFlowSimulation"   # src/test/java/lth/LthFlowSimulation.java: the login flow (issue 37)
FLOW_MARK = "LTH_FLOW"               # the flow simulation prints it (with relogin_every) as it loads
STEPS = {"login": "login", "api_get": "get"}   # Metrics' lat_<step>_* -> the flow simulation's request name
CLOSE_MARK = "LTH_CONNECTION_CLOSE"  # the simulation prints it when -Dlth.keepalive=false took effect
HTTP2_MARK = "LTH_HTTP2"             # and this when -Dlth.http2=true did
# The JVM options gatling-maven-plugin 4.21 forks Gatling with on Java 17 (GatlingConstants.
# DEFAULT_JVM_OPTIONS_GATLING), minus -XX:+HeapDumpOnOutOfMemoryError (a 1 GB dump in the cwd).
JVM = ["-Xmx1G", "-XX:MaxInlineLevel=20", "-XX:MaxTrivialSize=12",
       "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED"]
# Nothing but the target may be contacted: no usage analytics, no warm-up request to gatling.io
# (also set in gatling.conf and the simulation), and Gatling's unconditional "is there a newer
# release?" query to https://repo1.maven.org at start-up is sent to a closed local port (the
# target's requests go through Gatling's own client, which does not read these JVM proxy properties:
# an https target is not affected, checked).
OFFLINE = ["-Dgatling.data.enableAnalytics=false", "-Dgatling.http.warmUpUrl=",
           "-Dhttps.proxyHost=127.0.0.1", "-Dhttps.proxyPort=9"]


class Gatling(ToolAdapter):
    name = "gatling"
    concurrency_model = "atOnceUsers(VUs), each looping one GET during(duration) over its own keep-alive connection"
    timing_resolution_ms = 1  # simulation.log holds whole-ms timestamps

    rate_model = 'supports an open model (constantUsersPerSec injection, or throttle); not wired in this harness yet'
    # -Dlth.keepalive=false: the simulation sets connectionHeader("close") (Gatling has no keep-alive
    # switch); Gatling then closes each connection after its response.
    keepalive_off = True
    # Gatling trusts every certificate by default (gatling.ssl.useInsecureTrustManager = true, no
    # hostname verification) and speaks HTTP/1.1 unless enableHttp2 is set.
    tls = True
    # -Dlth.http2=true: enableHttp2 in the simulation (ALPN over TLS), each user on its own connection.
    h2 = True
    h2c = "Gatling speaks HTTP/2 only when negotiated over TLS (ALPN): no prior-knowledge cleartext HTTP/2"
    h3 = "Gatling 3's HTTP client (Netty) speaks HTTP/1.1 and HTTP/2 only: no HTTP/3 (QUIC)"
    h2_connections = "per_vu"
    # LthFlowSimulation: each user's own session keeps its token (jsonPath check, saveAs), the GET sends it as
    # "#{token}"; login once, then during(D) GETs, or during(D) { login, repeat(N) GET }. The flow's fields go in
    # as -D properties (no file written); the requests are named "login" and "get", timed apart in simulation.log.
    login_flow = True

    def command(self, spec: RunSpec) -> list[str]:
        if spec.flow is None:
            url, simulation, flow = spec.url, SIMULATION, []
        else:
            f = spec.flow
            url, simulation = spec.base_url, FLOW_SIMULATION
            flow = [f"-Dlth.login_path={f.login_path}", f"-Dlth.login_body={f.login_body}",
                    f"-Dlth.login_content_type={f.login_content_type}", f"-Dlth.token_field={f.token_field}",
                    f"-Dlth.get_path={f.get_path}", f"-Dlth.token_header={f.token_header}",
                    f"-Dlth.relogin_every={spec.relogin_every or 0}"]
        return [
            "java", *JVM, *OFFLINE,
            f"-Dlth.url={url}", f"-Dlth.vus={spec.vus}", f"-Dlth.duration={spec.duration_s}", *flow,
            *([] if spec.keepalive else ["-Dlth.keepalive=false"]), *(["-Dlth.http2=true"] if spec.http2 else []),
            "-cp", f"{self.home}/classes:{self.home}/lib/*", "io.gatling.app.Gatling",
            "--simulation", simulation, "--results-folder", str(spec.out_dir),
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        if not output.spec.keepalive and CLOSE_MARK not in output.stdout:
            raise ParseError(f"keep-alive off, but the simulation did not print {CLOSE_MARK}: the installed "
                             "classes predate -Dlth.keepalive (rerun tools/gatling/install.sh)")
        if output.spec.http2 and HTTP2_MARK not in output.stdout:
            raise ParseError(f"HTTP/2, but the simulation did not print {HTTP2_MARK}: the installed classes predate "
                             "-Dlth.http2 (rerun tools/gatling/install.sh)")
        if output.spec.flow is not None and FLOW_MARK not in output.stdout:
            raise ParseError(f"a flow, but the simulation did not print {FLOW_MARK}: the installed classes predate "
                             f"{FLOW_SIMULATION} (rerun tools/gatling/install.sh)")
        logs = sorted(output.spec.out_dir.glob("*/simulation.log"))
        if len(logs) != 1:
            raise ParseError(f"expected one <run>/simulation.log in the run folder, found {len(logs)}")
        try:
            log = simlog.read(logs[0])
        except simlog.SimulationLogError as exc:
            raise ParseError(f"{logs[0].name}: {exc}") from None
        if not log.starts:
            raise ParseError("simulation.log holds no request records")
        first, last = min(log.starts), max(log.ends)
        measured_s = (last - first) / 1000.0
        requests = len(log.starts)
        notes = [f"JVM: {' '.join(JVM)} (gatling-maven-plugin's defaults)",
                 f"{log.users_started} users started, {log.users_ended} ended (VUs {output.spec.vus})"]
        if log.messages:
            notes.append("KO: " + "; ".join(f"{n} x {m}" for m, n in sorted(log.messages.items(), key=lambda i: -i[1])[:5]))
        if log.errors:
            notes.append(f"{log.errors} error records (crashes outside requests)")
        steps, step_source = {}, ""
        # The flow simulation's log, whether or not the spec says flow (the row's rebuilt RunSpec may not).
        if output.spec.flow is not None or log.simulation == FLOW_SIMULATION:
            steps = self._steps(log)
            step_source = ("; a flow: the overall figures cover every request (logins and GETs), lat_login_* and "
                           "lat_api_get_* the requests named \"login\" and \"get\" (the same percentile definition)")
            notes.append("flow requests: " + ", ".join(f"{n} {name}" for name, n in sorted(Counter(log.names).items())))
        return latency_metrics(
            [end - start for start, end in zip(log.starts, log.ends)],
            requests=requests,
            errors=log.ok.count(False),
            rps=requests / measured_s if measured_s > 0 else None,
            measured_s=measured_s,
            load_start_s=(log.run_start_ms + first) / 1000.0 - output.launched_at if output.launched_at else None,
            source=(f"Gatling {log.gatling_version}'s binary simulation.log read record by record (tools/gatling/simlog.py): "
                    f"latency = end - start per request (whole ms: Gatling records milliseconds), {DEFINITION}; "
                    "errors = KO requests; load window = first request start to last request end; rps = requests / window; "
                    f"load_start_s = first request start - launch; JVM {' '.join(JVM[:1])}{step_source}"),
            notes=notes,
            **steps,
        )

    @staticmethod
    def _steps(log: simlog.SimulationLog) -> dict[str, float | None]:
        """lat_<step>_p50_ms and _p99_ms from the requests of each step's name (None where there is none)."""
        figures = {}
        for step, name in STEPS.items():
            latencies = [end - start for n, start, end in zip(log.names, log.starts, log.ends) if n == name]
            m = latency_metrics(latencies)
            figures[f"lat_{step}_p50_ms"], figures[f"lat_{step}_p99_ms"] = m.lat_p50_ms, m.lat_p99_ms
        return figures
