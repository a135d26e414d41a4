"""bombardier: Go with fasthttp, -c VUs connections, each one goroutine sending requests back to back."""
import json

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput


class Bombardier(ToolAdapter):
    name = "bombardier"
    concurrency_model = "-c VUs keep-alive connections (fasthttp client), one goroutine each, -d duration"
    timing_resolution_ms = 0.001  # its latency histogram is in us

    open_model = True
    rate_model = "-r <rate> (bombardier's rate limiter over the -c VUs connections), latency counts from the actual send"
    # bombardier's --disableKeepAlives applies to its net/http clients only; its help says to send
    # `Connection: close` with the default fasthttp client, which then closes after each response.
    keepalive_off = True
    tls = True   # --insecure: no certificate check (bombardier verifies by default)
    # --http2 (net/http instead of fasthttp): ALPN over TLS; a connection per VU, as hey's (measured: 20 for 20).
    h2 = True
    h3 = "Go's net/http, which bombardier is built on, has no HTTP/3 (QUIC)"
    h2c = "bombardier's --http2 is HTTP/2 over TLS only: no prior-knowledge cleartext HTTP/2"
    h2_connections = "per_vu"
    login_flow = "bombardier sends one fixed request over and over: no answer is read into a later request"

    def command(self, spec: RunSpec) -> list[str]:
        rate = ["-r", str(spec.rate_rps)] if spec.rate_rps else []
        connection = [*([] if spec.keepalive else ["-H", "Connection: close"]), *(["--insecure"] if spec.tls else []),
                      *(["--http2"] if spec.protocol == "h2" else [])]
        # -p r: print only the result (no progress bar); -l: latency percentiles in the JSON.
        # -t 10s: the default 2 s timeout would turn slow responses into errors (wrk uses 10 s too).
        return [self.binary, "-c", str(spec.vus), "-d", f"{spec.duration_s}s", "-t", "10s", *rate, *connection,
                "-o", "json", "-p", "r", "-l", spec.url]

    def parse(self, output: ToolOutput) -> Metrics:
        start = output.stdout.find("{")
        if start < 0:
            raise ParseError("bombardier printed no JSON result")
        try:
            result = json.loads(output.stdout[start:])["result"]
            latency = result["latency"]
            pct = latency["percentiles"]
        except (ValueError, KeyError) as exc:
            raise ParseError(f"bombardier's JSON lacks result/latency/percentiles: {exc}") from exc
        buckets = ("req1xx", "req2xx", "req3xx", "req4xx", "req5xx", "others")
        requests = sum(result[k] for k in buckets)   # "others": no status (transport errors)
        measured_s = result["timeTakenSeconds"]
        return Metrics(
            requests=requests,
            errors=requests - result["req2xx"] - result["req3xx"],
            rps=requests / measured_s if measured_s else None,
            measured_s=measured_s,
            # bombardier reports microseconds.
            lat_mean_ms=latency["mean"] / 1000, lat_max_ms=latency["max"] / 1000,
            lat_p50_ms=pct["50"] / 1000, lat_p75_ms=pct["75"] / 1000, lat_p90_ms=pct["90"] / 1000,
            lat_p95_ms=pct["95"] / 1000, lat_p99_ms=pct["99"] / 1000,
            source=("bombardier -o json -l: its own exact per-microsecond latency histogram (mean, max, "
                    "p50..p99, rank = round(p x count)); no minimum reported; requests = all status classes + "
                    "others, rps = requests / timeTakenSeconds"),
        )
