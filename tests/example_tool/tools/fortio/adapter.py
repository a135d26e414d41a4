"""fortio: Go, -c VUs connections, one goroutine each (its own HTTP/1.1 client), -qps 0: back to back.

The harness's example of a compiled tool (tools/README.md, "Adding a tool" and "Other install kinds": go):
built from the Go module proxy by tools/_lib/go.sh, from the go.mod and go.sum `scripts/go-lock.sh fortio`
makes. Its percentiles are bucketed: fortio keeps a histogram, not the requests' times, and interpolates each
percentile inside its bucket. The buckets are -r wide below 10 x -r (-r 0.0001: 0.1 ms below 1 ms), then
wider (0.2 ms to 2 ms, 0.5 ms to 5 ms, 1 ms to 10 ms, 10 ms to 100 ms); timing_resolution_ms declares the
narrowest, so that a p50 inside the first bucket (any value from 0 to 0.1 ms) is left empty, not shown.
"""
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

RESOLUTION_S = 0.0001     # -r: the width of the lowest buckets (fortio's default, 1 ms, puts a loopback p50 in one)
JSON = "fortio.json"      # its -json file, in the run's folder


class Fortio(ToolAdapter):
    name = "fortio"
    version_args = ["version"]
    concurrency_model = "-c VUs keep-alive connections, one goroutine each, -qps 0 (no pacing), -t duration"
    timing_resolution_ms = RESOLUTION_S * 1000   # percentiles: histogram buckets 0.1 ms wide below 1 ms
    keepalive_off = True      # -keepalive=false: its HTTP/1.1 client opens a connection per request
    tls = True                # -k: no certificate check

    def command(self, spec: RunSpec) -> list[str]:
        return [self.binary, "load", "-c", str(spec.vus), "-t", f"{spec.duration_s}s", "-qps", "0",
                "-timeout", "10s", "-r", str(RESOLUTION_S), "-p", "50,75,90,95,99",
                *([] if spec.keepalive else ["-keepalive=false"]), *(["-k"] if spec.tls else []),
                "-json", str(spec.out_dir / JSON), spec.url]

    def parse(self, output: ToolOutput) -> Metrics:
        result = output.json(JSON, f"fortio wrote no {JSON} (its -json file)")
        try:
            histogram, codes = result["DurationHistogram"], result["RetCodes"]
            requests, measured_s = int(histogram["Count"]), result["ActualDuration"] / 1e9
            answered = sum(int(n) for code, n in codes.items() if 200 <= int(code) < 400)   # -1: no answer
            at = {round(float(p["Percentile"]), 3): p["Value"] * 1000 for p in histogram["Percentiles"]}
            percentiles = {f"lat_p{p}_ms": at[float(p)] for p in (50, 75, 90, 95, 99)}
            low, mean, high = histogram["Min"] * 1000, histogram["Avg"] * 1000, histogram["Max"] * 1000
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"{JSON} lacks DurationHistogram (Count, Min, Avg, Max, Percentiles p50..p99), "
                             f"RetCodes or ActualDuration: {type(exc).__name__}: {exc}") from None
        if requests == 0 or measured_s <= 0:
            raise ParseError(f"{JSON} counts no request ({requests}) or no duration ({measured_s} s)")
        return Metrics(requests=requests, errors=requests - answered, rps=requests / measured_s,
                       measured_s=measured_s, lat_min_ms=low, lat_mean_ms=mean, lat_max_ms=high, **percentiles,
                       source=(f"fortio -json: DurationHistogram (min, mean, max exact; p50..p99 interpolated in "
                               f"its buckets, {RESOLUTION_S * 1000:g} ms wide below 1 ms); requests = its Count "
                               "(not the one warm-up request per connection), errors = those without a 2xx/3xx "
                               "RetCode, rps = Count / ActualDuration"))
