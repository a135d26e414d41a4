"""wrk: C, event loop per thread, a fixed pool of keep-alive connections.

wrk 4.1.0 applies a coordinated-omission correction to its latency histogram before done() sees
it (wrk.c: ``stats_correct(statistics.latency, runtime_us / (complete / connections))``), so its
own figures are not measurements. report.lua dumps that histogram; :func:`uncorrect` inverts the
correction exactly and the figures here are the raw, measured latencies. See tools/wrk/README.md.
"""
import json
from pathlib import Path

from harness.stats import histogram_metrics
from harness.tools import LatencyHistogram, Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

MARKER, HISTOGRAM = "LTH_JSON ", "LTH_HIST"
SCRIPTS = Path(__file__).resolve().parent   # report.lua and flow.lua (also for a test's tool built on this one)
Histogram = dict[int, int]   # latency in us -> count


def correction_interval_us(duration_us: int, requests: int, connections: int) -> int:
    """wrk's expected interval: integer divisions, as in wrk.c (0: wrk made no correction)."""
    per_connection = requests // connections
    return duration_us // per_connection if per_connection > 0 else 0


def correct(raw: Histogram, interval: int) -> Histogram:
    """wrk's stats_correct(): every value n >= 2e adds its count at n-e, n-2e, ... while > e."""
    corrected = dict(raw)
    for n, count in raw.items():
        m = n - interval
        while interval > 0 and n >= 2 * interval and m > interval:
            corrected[m] = corrected.get(m, 0) + count
            m -= interval
    return corrected


def uncorrect(corrected: Histogram, interval: int) -> Histogram:
    """The measured histogram D from wrk's corrected one C: D[m] = C[m] - C[m+e] for m > e, else C[m].
    Buckets below the raw minimum (where the correction also adds counts) may be left out of C:
    D is 0 there, and no D[m] at or above the minimum needs them."""
    if interval <= 0:
        return dict(corrected)
    raw = {m: c - corrected.get(m + interval, 0) if m > interval else c for m, c in corrected.items()}
    negative = [m for m, c in raw.items() if c < 0]
    if negative:
        raise ParseError(f"wrk's histogram does not invert with interval {interval} us (negative count at {negative[0]} us)")
    return {m: c for m, c in raw.items() if c > 0}


def read_histogram(line: str) -> tuple[Histogram, bool]:
    """The dumped buckets, and whether the dump is complete (else report.lua cut it: lowest buckets only)."""
    _, state, *pairs = line.split()
    if state not in ("complete", "cut"):
        raise ParseError(f"wrk's {HISTOGRAM} line does not parse: state {state!r}")
    try:
        return {int(us): int(count) for us, count in (pair.split(":") for pair in pairs)}, state == "complete"
    except ValueError as exc:
        raise ParseError(f"wrk's {HISTOGRAM} line does not parse: {exc}") from None


def known_raw(corrected: Histogram, interval: int, complete: bool) -> Histogram:
    """The raw histogram; from a cut dump, only the values whose D[m] needs no missing bucket."""
    if complete or not corrected:
        return uncorrect(corrected, interval)
    last = max(corrected)
    known_upto = max(min(last, interval), last - interval) if interval > 0 else last
    return {m: c for m, c in uncorrect(corrected, interval).items() if m <= known_upto}


def _line(stdout: str, marker: str) -> str:
    line = next((l for l in stdout.splitlines() if l.startswith(marker)), None)
    if line is None:
        raise ParseError(f"wrk printed no {marker.strip()} line (report.lua done() hook did not run)")
    return line


class Wrk(ToolAdapter):
    name = "wrk"
    version_args = ["-v"]
    # The study ran wrk with threads = connections. wrk is an event loop per thread and its own
    # docs advise about one thread per core; 1000 threads on 2 cores measures the scheduler, not
    # wrk. So: threads = min(VUs, cores), connections = VUs (each held open for the whole run).
    concurrency_model = "connections = VUs, threads = min(VUs, cores)"
    # At its duration wrk stops its event loops and reports; the requests still in flight are neither
    # timed nor counted, and their connections close only at exit (an RST ~2 s later at 1,000 of them).
    # Measured (delay0-1000-vu1000, 3 s): 5,662 requests in its report, 6,662 pairs on the wire.
    stops_timing_before_closing = True
    timing_resolution_ms = 0.001  # its histogram is in us
    co_corrected = False          # the harness undoes wrk's correction (see the module's doc)

    # wrk.c corrects its latency histogram after the run (stats_correct with the mean interval per
    # connection), so a closed-loop wrk still shows a stall in its percentiles.
    rate_model = ("closed model only: wrk has no rate option (wrk2's -R adds one; wrk2 is not in this lineup); "
                  "wrk back-fills its histogram for coordinated omission after the run (stats_correct)")
    # wrk has no keep-alive option, but reconnects when a response does not keep the connection alive
    # (wrk.c response_complete: http_should_keep_alive -> reconnect_socket): `Connection: close` does it.
    keepalive_off = True
    tls = True   # wrk (built with OpenSSL) does not verify the server's certificate
    h2 = h2c = h3 = "wrk speaks HTTP/1.1 only (HTTP/2 is wrk issues #254 and #499)"

    login_flow = True   # flow.lua: request() and response() (see its comments for what wrk's Lua allows)

    def command(self, spec: RunSpec) -> list[str]:
        threads = max(1, min(spec.vus, spec.cpus))
        close = [] if spec.keepalive else ["-H", "Connection: close"]
        if spec.flow is None:
            script, target = [str(SCRIPTS / "report.lua"), spec.url], []
        else:
            f = spec.flow
            script = [str(SCRIPTS / "flow.lua"), spec.base_url]
            target = ["--", f.login_path, f.login_body, f.login_content_type, f.token_field, f.get_path,
                      f.token_header, str(spec.relogin_every or 0), str(spec.vus // threads)]
        return [self.binary, f"-t{threads}", f"-c{spec.vus}", f"-d{spec.duration_s}s", "--timeout", "10s", *close,
                "-s", *script, *target]

    @staticmethod
    def _read(output: ToolOutput) -> tuple[dict, Histogram, Histogram, bool, int]:
        """wrk's summary, its corrected and the raw histogram, whether the dump is complete, and the interval."""
        try:
            data = json.loads(_line(output.stdout, MARKER)[len(MARKER):])
        except json.JSONDecodeError as exc:      # the summary line cut short (wrk killed mid-write)
            raise ParseError(f"wrk's summary line ({MARKER.strip()}) is not JSON: {exc}") from None
        corrected, complete = read_histogram(_line(output.stdout, HISTOGRAM))
        interval = correction_interval_us(data["duration_us"], data["requests"], output.spec.vus)
        return data, corrected, known_raw(corrected, interval, complete), complete, interval

    def latency_histogram(self, output: ToolOutput) -> LatencyHistogram:
        data, _, raw, complete, _ = self._read(output)
        recorded = sum(raw.values())
        return LatencyHistogram({us / 1000.0: count for us, count in raw.items()},
                                total=recorded if complete else max(recorded, data["requests"]),
                                source="wrk: its histogram (us) with the correction inverted")

    def parse(self, output: ToolOutput) -> Metrics:
        data, corrected, raw, complete, interval = self._read(output)
        measured_s = data["duration_us"] / 1e6
        own = data["latency_us"]
        notes = [f"wrk's own figures are coordinated-omission corrected (interval {interval} us): mean "
                 f"{own['mean'] / 1000:.3f}, p50 {own['p50'] / 1000:.3f}, p99 {own['p99'] / 1000:.3f} ms; "
                 "the row holds the raw latencies recovered from its histogram"]
        recorded = sum(raw.values())
        if not complete:
            notes.append(f"report.lua cut its histogram dump at {max(corrected)} us (CPU budget): the raw "
                         f"latencies of {recorded} of {data['requests']} requests are known, so the mean and the "
                         "percentiles beyond them are left empty")
        elif recorded != data["requests"]:
            notes.append(f"the raw histogram holds {recorded} latencies for {data['requests']} requests")
        return histogram_metrics(
            {us / 1000.0: count for us, count in raw.items()},
            total=max(recorded, data["requests"]) if not complete else None,
            lat_max_ms=own["max"] / 1000,     # the correction never adds above the raw maximum
            requests=data["requests"],
            errors=sum(data["errors"].values()),
            rps=data["requests"] / measured_s if measured_s else None,
            measured_s=measured_s,
            source="wrk's latency histogram (us) dumped by report.lua done(), with wrk 4.1.0's coordinated-"
                   "omission correction inverted (raw latencies; tools/wrk/README.md); nearest-rank "
                   "percentiles; rps = requests / wrk's duration",
            notes=notes,
        )
