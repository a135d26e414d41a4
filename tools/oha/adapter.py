"""oha: Rust (tokio + hyper), a fixed pool of keep-alive connections, JSON summary.

Figures come from oha's JSON report (--output-format json -o oha.json). oha keeps every request's
result and computes its percentiles over all of them (exact, not bucketed). With -z on HTTP/1,
requests still in flight at the deadline are aborted and reported as "aborted due to deadline":
they are neither counted as requests nor as errors here (the server did count them).
"""
import sqlite3
from collections import Counter

from harness.tools import LatencyHistogram, Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

REPORT = "oha.json"
REQUESTS_DB = "oha.db"      # with RunSpec.per_request: every succeeded request (oha --db-url)
DEADLINE_ABORT = "aborted due to deadline"


class Oha(ToolAdapter):
    name = "oha"
    concurrency_model = "-c VUs keep-alive connections, -z duration, tokio worker threads = cores (oha's default)"
    timing_resolution_ms = 0.000001  # float seconds from Rust Durations (ns)

    open_model = True
    rate_co_corrected = True
    rate_model = ("-q <rate> --latency-correction (latency counts from each request's intended send time), "
                  "-c VUs connections")
    keepalive_off = True   # --disable-keepalive (HTTP/1 only; oha speaks HTTP/1.1 unless told otherwise)
    tls = True             # --insecure: accept the self-signed certificate
    # --http2 (hyper's HTTP/2: ALPN over https://, prior knowledge over http://); -c connections x -p requests
    # in flight on each (oha runs c x p workers).
    h2 = True
    h2c = True
    # --http-version 3: oha built with its http3 feature (tool.toml features), QUIC by quinn; a connection per VU.
    h3 = True
    login_flow = ("oha sends one fixed request (a fixed body, a URL it may randomise by pattern): no answer is "
                  "read into a later request")

    @staticmethod
    def connection_options(spec: RunSpec) -> list[str]:
        http2 = ["--http2", "-p", str(spec.streams)] if spec.http2 else []
        http3 = ["--http-version", "3"] if spec.protocol == "h3" else []
        return [*([] if spec.keepalive else ["--disable-keepalive"]), *(["--insecure"] if spec.tls else []), *http2,
                *http3]

    def wind_down_s(self, protocol: str) -> float:
        """HTTP/3: oha waits ~30 s for the server to close each QUIC connection after -z (oha #835)."""
        return 40.0 if protocol == "h3" else 0.0

    def command(self, spec: RunSpec) -> list[str]:
        rate = ["-q", str(spec.rate_rps), "--latency-correction"] if spec.rate_rps else []
        per_request = ["--db-url", str(spec.out_dir / REQUESTS_DB)] if spec.per_request else []
        return [self.binary, "--no-tui", "-c", str(spec.connections), "-z", f"{spec.duration_s}s", *rate, *per_request,
                *self.connection_options(spec), "--output-format", "json", "-o", str(spec.out_dir / REPORT), spec.url]

    def latency_histogram(self, output: ToolOutput) -> LatencyHistogram | None:
        """From oha's per-request database (written after the load), to the microsecond; the database
        (~100 bytes a request) is removed once read: the histogram written next to it replaces it."""
        path = output.file(REQUESTS_DB)
        if not path.is_file():
            return None
        with sqlite3.connect(path) as db:
            counts = Counter(round(seconds * 1000.0, 3) for (seconds,) in db.execute("SELECT duration FROM oha"))
        path.unlink()
        return LatencyHistogram(dict(counts), total=sum(counts.values()),
                                source=f"oha: every succeeded request's duration from --db-url {REQUESTS_DB}, to the us")

    def parse(self, output: ToolOutput) -> Metrics:
        data = output.json(REPORT, f"oha wrote no JSON report {REPORT}")
        try:
            return self._metrics(data, output.spec.duration_s if output.spec.protocol == "h3" else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"{REPORT} lacks a field oha writes: {type(exc).__name__}: {exc}") from None

    @staticmethod
    def _metrics(data: dict, h3_duration_s: int | None = None) -> Metrics:
        """``h3_duration_s``: an HTTP/3 run's -z. After it, oha 1.16 waits for the server to close each QUIC
        connection, which Caddy leaves to its ~30 s idle timeout: summary.total then holds that wait (oha #835),
        and the load window is the -z duration."""
        summary, pct = data["summary"], data["latencyPercentiles"]
        statuses = {int(code): int(n) for code, n in data["statusCodeDistribution"].items()}
        errors_by_kind = {kind: int(n) for kind, n in data.get("errorDistribution", {}).items()}
        aborted = errors_by_kind.pop(DEADLINE_ABORT, 0)
        responses = sum(statuses.values())
        if responses == 0:
            raise ParseError(f"{REPORT}: no response (errors: {errors_by_kind or 'none'})")
        failed_status = sum(n for code, n in statuses.items() if not 200 <= code < 400)
        requests = responses + sum(errors_by_kind.values())
        measured_s, notes, load_start_s = float(summary["total"]), [], None
        if h3_duration_s is not None and measured_s > h3_duration_s:
            notes.append(f"HTTP/3: oha's summary.total is {measured_s:.1f} s for -z {h3_duration_s} s (it waits for "
                         "the server to close its QUIC connections, oha #835): rps, CPU and memory over the -z "
                         "duration from launch")
            # The load window is then the first -z seconds (oha starts in milliseconds), not the idle wait after.
            measured_s, load_start_s = float(h3_duration_s), 0.0
        ms = lambda seconds: float(seconds) * 1000.0  # noqa: E731
        if aborted:
            notes.append(f"{aborted} requests in flight at the deadline were aborted by oha (not counted; "
                         "the server counted them)")
        return Metrics(
            requests=requests, errors=failed_status + sum(errors_by_kind.values()),
            rps=requests / measured_s, measured_s=measured_s, load_start_s=load_start_s,
            lat_min_ms=ms(summary["fastest"]), lat_mean_ms=ms(summary["average"]), lat_max_ms=ms(summary["slowest"]),
            lat_p50_ms=ms(pct["p50"]), lat_p75_ms=ms(pct["p75"]), lat_p90_ms=ms(pct["p90"]),
            lat_p95_ms=ms(pct["p95"]), lat_p99_ms=ms(pct["p99"]),
            source="oha's JSON report (oha.json): requests = statusCodeDistribution + errorDistribution without "
                   "'aborted due to deadline'; min/mean/max = summary fastest/average/slowest, p50-p99 = "
                   "latencyPercentiles (oha's exact percentiles over every response, s -> ms); rps = requests / "
                   "summary.total (oha's own requestsPerSec also counts the deadline-aborted requests)",
            notes=notes,
        )
