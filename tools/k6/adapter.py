"""k6 (Grafana): Go with a JavaScript VM per VU; --vus VUs looping script.js (one GET, no sleep)
for --duration. Figures come from k6's own end-of-test summary (--summary-export JSON); the
per-point --out json would halve k6's throughput, so no per-request log is read.

A login flow (RunSpec.flow, issue 37) runs flow.js instead: each VU keeps its token in its own global
scope; its requests are tagged name:login / name:api_get, and flow.js's empty thresholds on those tags make
k6 keep http_req_duration{name:login} and {name:api_get} in the same summary: the per-step latencies.
"""
import re

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

SUMMARY = "k6-summary.json"
TREND_STATS = "avg,min,med,max,p(50),p(75),p(90),p(95),p(99),count"
START_MARK = re.compile(r"LTH_LOAD_START_MS (\d+)")
# flow.js's tags, whose http_req_duration sub-metrics the summary keeps (its thresholds name them).
STEP_TRENDS = {"login": "http_req_duration{name:login}", "api_get": "http_req_duration{name:api_get}"}


class K6(ToolAdapter):
    name = "k6"
    version_args = ["version"]
    concurrency_model = "--vus VUs looping one GET without sleep (one keep-alive connection each), --duration"
    timing_resolution_ms = 0.000001  # float ms from Go durations (ns)

    open_model = True
    rate_model = ("constant-arrival-rate executor (rate.js), preAllocatedVUs = maxVUs = VUs; an iteration due "
                  "with no free VU is dropped (dropped_iterations), latency counts from the actual send")
    keepalive_off = True   # --no-connection-reuse (the noConnectionReuse option): keep-alive disabled
    tls = True             # --insecure-skip-tls-verify (the insecureSkipTLSVerify option)
    h2 = True   # over TLS k6 negotiates HTTP/2 by ALPN by itself; each VU has its own connections
    h2c = "k6 speaks HTTP/2 only when negotiated over TLS (ALPN): no prior-knowledge cleartext HTTP/2"
    h3 = "k6's HTTP client is Go's net/http, which has no HTTP/3 (QUIC; k6 issue #238: an xk6 extension, not here)"
    h2_connections = "per_vu"
    login_flow = True   # flow.js: the token in the VU's global scope, each step a tag (its own latency trend)

    def command(self, spec: RunSpec) -> list[str]:
        if spec.rate_rps:   # never with a flow: the scenario refuses that (harness/scenarios.py)
            load = ["-e", f"LTH_RATE={spec.rate_rps}", "-e", f"LTH_VUS={spec.vus}", "-e", f"LTH_DURATION={spec.duration_s}"]
            script = "rate.js"
        else:
            load, script = ["--vus", str(spec.vus), "--duration", f"{spec.duration_s}s"], "script.js"
        connection = [*([] if spec.keepalive else ["--no-connection-reuse"]),
                      *(["--insecure-skip-tls-verify"] if spec.tls else [])]
        target = ["-e", f"LTH_URL={spec.url}"]
        if spec.flow is not None:
            f, script = spec.flow, "flow.js"
            env = {"LTH_BASE": spec.base_url, "LTH_LOGIN_METHOD": f.login_method, "LTH_LOGIN_PATH": f.login_path,
                   "LTH_LOGIN_BODY": f.login_body, "LTH_LOGIN_CONTENT_TYPE": f.login_content_type,
                   "LTH_TOKEN_FIELD": f.token_field, "LTH_GET_PATH": f.get_path, "LTH_TOKEN_HEADER": f.token_header,
                   "LTH_RELOGIN_EVERY": str(spec.relogin_every or 0)}
            target = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
        return [
            self.binary, "run", *load, *connection,
            "--summary-export", str(spec.out_dir / SUMMARY), "--summary-trend-stats", TREND_STATS,
            "--no-usage-report", "--quiet", "--no-color", *target,
            str(self.folder / script),
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        summary = output.json(SUMMARY, f"k6 wrote no summary {SUMMARY}")
        try:
            metrics = summary["metrics"]
            reqs, duration = metrics["http_reqs"], metrics["http_req_duration"]
            requests, rate = int(reqs["count"]), float(reqs["rate"])
            lat = {name: float(duration[stat]) for name, stat in (
                ("lat_min_ms", "min"), ("lat_mean_ms", "avg"), ("lat_max_ms", "max"), ("lat_p50_ms", "p(50)"),
                ("lat_p75_ms", "p(75)"), ("lat_p90_ms", "p(90)"), ("lat_p95_ms", "p(95)"), ("lat_p99_ms", "p(99)"))}
        except (ValueError, KeyError, TypeError) as exc:
            raise ParseError(f"{SUMMARY} lacks http_reqs/http_req_duration figures: {exc}") from exc
        # http_req_failed is a Rate metric: "passes" counts the requests that failed.
        errors = int(metrics.get("http_req_failed", {}).get("passes", 0))
        # k6's rate is count / its test run duration (from setup() to the end, graceful stop included).
        measured_s = requests / rate if rate else None
        mark = START_MARK.search(output.stderr + output.stdout)
        load_start_s = None
        if mark and output.launched_at:
            load_start_s = int(mark.group(1)) / 1000 - output.launched_at
        dropped = int(metrics.get("dropped_iterations", {}).get("count", 0))
        notes = [f"k6 dropped {dropped} iterations (due with no free VU: never sent, not in the latencies)"] if dropped else []
        # By the summary's content, not spec.flow: only flow.js's thresholds put the step trends there.
        steps = self._steps(metrics) if any(trend in metrics for trend in STEP_TRENDS.values()) else {}
        return Metrics(
            requests=requests, errors=errors, rps=rate, measured_s=measured_s, load_start_s=load_start_s, notes=notes,
            **lat, **steps,
            source=("k6's own end-of-test summary (--summary-export): http_req_duration trend (every sample kept, "
                    "k6's interpolated percentiles; excludes connection set-up), http_reqs count and rate "
                    "(count / k6's test run duration), errors = http_req_failed passes; load start = "
                    "setup() timestamp" + ("; a flow's requests (logins and GETs) are all in those figures, and its "
                    "steps apart in the sub-metrics http_req_duration{name:login} and {name:api_get} (flow.js's "
                    "request tags; its empty thresholds make the summary keep them)" if steps else "")),
        )

    @staticmethod
    def _steps(metrics: dict) -> dict[str, float]:
        """The per-step p50/p99 of a flow run, from the tag sub-metrics flow.js's thresholds keep in the summary."""
        steps = {}
        for step, trend in STEP_TRENDS.items():
            try:
                values = metrics[trend]
                steps[f"lat_{step}_p50_ms"], steps[f"lat_{step}_p99_ms"] = float(values["p(50)"]), float(values["p(99)"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ParseError(f"{SUMMARY} lacks the flow step's trend {trend}: {exc}") from exc
        return steps
