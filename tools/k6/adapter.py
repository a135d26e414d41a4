"""k6 (Grafana): Go with a JavaScript VM per VU; --vus VUs looping script.js (one GET, no sleep)
for --duration. Figures come from k6's own end-of-test summary (--summary-export JSON); the
per-point --out json would halve k6's throughput, so no per-request log is read.
"""
import re

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

SUMMARY = "k6-summary.json"
TREND_STATS = "avg,min,med,max,p(50),p(75),p(90),p(95),p(99),count"
START_MARK = re.compile(r"LTH_LOAD_START_MS (\d+)")


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
    h2_connections = "per_vu"

    def command(self, spec: RunSpec) -> list[str]:
        if spec.rate_rps:
            load = ["-e", f"LTH_RATE={spec.rate_rps}", "-e", f"LTH_VUS={spec.vus}", "-e", f"LTH_DURATION={spec.duration_s}"]
            script = "rate.js"
        else:
            load, script = ["--vus", str(spec.vus), "--duration", f"{spec.duration_s}s"], "script.js"
        connection = [*([] if spec.keepalive else ["--no-connection-reuse"]),
                      *(["--insecure-skip-tls-verify"] if spec.tls else [])]
        return [
            self.binary, "run", *load, *connection,
            "--summary-export", str(spec.out_dir / SUMMARY), "--summary-trend-stats", TREND_STATS,
            "--no-usage-report", "--quiet", "--no-color", "-e", f"LTH_URL={spec.url}",
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
        return Metrics(
            requests=requests, errors=errors, rps=rate, measured_s=measured_s, load_start_s=load_start_s, notes=notes,
            **lat,
            source=("k6's own end-of-test summary (--summary-export): http_req_duration trend (every sample kept, "
                    "k6's interpolated percentiles; excludes connection set-up), http_reqs count and rate "
                    "(count / k6's test run duration), errors = http_req_failed passes; load start = "
                    "setup() timestamp"),
        )
