"""ApacheBench (ab): C, a single thread, fixed concurrency."""
import csv
import re

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

PERCENTILE_FILE = "ab-percentiles.csv"
# ab sizes its per-request table from -n up front; this bound is far above what one ab thread
# can reach, so -t (the duration) is what ends the run.
MAX_RATE_PER_S = 100_000


def _field(stdout: str, label: str) -> str | None:
    match = re.search(rf"^{re.escape(label)}:\s+([\d.]+)", stdout, re.MULTILINE)
    return match.group(1) if match else None


def _float(text: str | None) -> float | None:
    return float(text) if text is not None else None


class ApacheBench(ToolAdapter):
    name = "ab"
    version_args = ["-V"]
    concurrency_model = "-c VUs keep-alive connections (-k), one thread; -t duration with a huge -n"
    timing_resolution_ms = 0.001  # ab -e CSV: ms with 3 decimals (ab times requests in us)

    rate_model = 'closed model only: -c concurrent requests, ab has no rate option'
    keepalive_off = True   # no -k: ab then sends HTTP/1.0 without Keep-Alive and connects for each request
    tls = True             # ab (built with OpenSSL) does not verify the server's certificate
    h2 = h2c = h3 = "ab speaks HTTP/1.0 with keep-alive only"
    login_flow = ("ab sends one fixed request over and over (-p gives a fixed body): no answer is read into a "
                  "later request")

    def command(self, spec: RunSpec) -> list[str]:
        # -n must follow -t: -t resets the request count to 50000.
        return [
            self.binary, *(["-k"] if spec.keepalive else []), "-q", "-r", "-c", str(spec.vus), "-t", str(spec.duration_s),
            "-n", str(spec.duration_s * MAX_RATE_PER_S),
            "-e", str(spec.out_dir / PERCENTILE_FILE), spec.url,
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        text = output.stdout
        complete, taken = _field(text, "Complete requests"), _field(text, "Time taken for tests")
        if complete is None or taken is None:
            raise ParseError("ab printed no 'Complete requests'/'Time taken' summary")
        failed = int(_field(text, "Failed requests") or 0)
        non_2xx = int(_field(text, "Non-2xx responses") or 0)
        percentiles = self._percentiles(output)
        requests, measured_s = int(complete), float(taken)
        keep_alive = int(_field(text, "Keep-Alive requests") or 0)
        notes = [] if keep_alive == requests or not output.spec.keepalive else \
            [f"only {keep_alive} of {requests} requests used keep-alive"]
        return Metrics(
            requests=requests,
            errors=failed + non_2xx,
            rps=_float(_field(text, "Requests per second")),
            measured_s=measured_s,
            lat_min_ms=percentiles[0], lat_p50_ms=percentiles[50], lat_p75_ms=percentiles[75],
            lat_p90_ms=percentiles[90], lat_p95_ms=percentiles[95], lat_p99_ms=percentiles[99],
            lat_max_ms=percentiles[100],
            source="percentiles, min, max: ab -e CSV (us resolution); no mean: ab measures none finer than whole "
                   "ms (its 'Connection Times' table), and its 'Time per request' is computed (concurrency x time "
                   "taken / requests), so it is only noted; rps: ab's 'Requests per second'",
            notes=notes + [f"ab's 'Time per request' {_field(text, 'Time per request')} ms is computed "
                           "(concurrency x time taken / requests), not measured: the mean is left empty"],
        )

    def _percentiles(self, output: ToolOutput) -> dict[int, float]:
        path = output.file(PERCENTILE_FILE)
        if not path.is_file():
            raise ParseError(f"ab wrote no percentile file {PERCENTILE_FILE}")
        with path.open(errors="replace") as handle:
            rows = list(csv.reader(handle))[1:]
        try:
            values = {int(float(p)): float(ms) for p, ms in rows}
        except (ValueError, OverflowError):   # cut short (ab killed mid-write), or not ab's
            raise ParseError(f"{PERCENTILE_FILE} holds a row that is not 'percentile,ms'") from None
        if len(values) < 101:
            raise ParseError(f"{PERCENTILE_FILE} holds {len(values)} of 101 percentile rows")
        return values
