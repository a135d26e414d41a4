"""h2load (nghttp2): C++, libev event loop per thread; here in HTTP/1.1 mode (--h1).

Figures come from h2load's per-request log (--log-file: start time in us since the epoch,
HTTP status (-1 for a failed stream), microseconds until the end of the response), through
harness.stats.latency_metrics; the load window is the -D main duration, which h2load times itself.
"""
import re

import numpy as np

from harness.stats import latency_metrics
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

LOG_FILE = "h2load-requests.tsv"
# "finished in 5.00s, 41403.40 req/s, 8.93MB/s"
FINISHED = re.compile(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", re.MULTILINE)
# "requests: 207017 total, 207037 started, 207017 done, 207017 succeeded, 0 failed, 0 errored, 0 timeout"
REQUESTS = re.compile(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                      r"(\d+) errored, (\d+) timeout", re.MULTILINE)
WINDOW_TOLERANCE = 0.02   # log span vs -D duration, relative


def read_log(path) -> np.ndarray:
    """The per-request log as an (n, 3) int array: start (us since epoch), status, duration (us)."""
    try:
        rows = np.loadtxt(path, dtype=np.int64, delimiter="\t", usecols=(0, 1, 2), ndmin=2)
    except ValueError as exc:
        raise ParseError(f"{LOG_FILE} does not parse: {exc}") from None
    return rows.reshape(-1, 3)


class H2load(ToolAdapter):
    name = "h2load"
    concurrency_model = ("-c VUs HTTP/1.1 keep-alive connections (--h1, no pipelining), -t min(VUs, cores) threads; "
                         "HTTP/2: -c VUs/streams connections with -m streams requests in flight each")
    timing_resolution_ms = 0.001  # --log-file durations in us

    rate_model = "closed model only: h2load's -r/--rate starts CONNECTIONS per second (each then runs closed-loop), not requests"
    keepalive_off = ("h2load 1.52.0 has no option to close connections after each request; with -H 'Connection: close' "
                     "it reconnects, but in timing-based mode (-D) its clients keep reconnecting after the duration "
                     "and it never exits")
    # --h1 (= --npn-list=http/1.1) keeps HTTP/1.1 over TLS too (ALPN offers http/1.1 only); h2load does
    # not verify the server's certificate.
    tls = True
    # HTTP/2 is h2load's own protocol: h2 by ALPN over https://, h2c with prior knowledge over http://.
    h2 = True
    h2c = True
    h3 = ("Debian's nghttp2-client 1.52 is built without QUIC (ngtcp2, nghttp3): h2load --npn-list h3 fails "
          "every request")
    login_flow = ("h2load sends fixed requests (-i a list of URIs, -d a fixed body): no answer is read into a "
                  "later request")

    def command(self, spec: RunSpec) -> list[str]:
        threads = max(1, min(spec.connections, spec.cpus))
        protocol = [] if spec.http2 else ["--h1"]
        # -D: timing-based run of exactly the duration (no --warm-up-time: it would add a phase).
        return [
            self.binary, *protocol, "-c", str(spec.connections), "-t", str(threads), "-m", str(spec.streams),
            "-D", str(spec.duration_s), "--log-file", str(spec.out_dir / LOG_FILE), spec.url,
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        finished = FINISHED.search(output.stdout)
        if finished is None:
            raise ParseError("h2load printed no 'finished in' summary")
        path = output.file(LOG_FILE)
        if not path.is_file():
            raise ParseError(f"h2load wrote no per-request log {LOG_FILE} (--log-file)")
        rows = read_log(path)
        if len(rows) == 0:
            raise ParseError(f"{LOG_FILE} is empty: no request finished")
        # In timing-based mode (-D) h2load counts only requests done within the main duration, which
        # its own timer ends (clients are stopped then; in-flight requests are dropped), and divides by
        # that duration for its req/s. "finished in" also covers connecting and stopping.
        measured_s = float(output.spec.duration_s)
        status = rows[:, 1]
        errors = int(np.count_nonzero((status < 200) | (status >= 400)))
        requests = len(rows)
        notes = []
        counted = REQUESTS.search(output.stdout)
        if counted and int(counted.group(3)) != requests:
            notes.append(f"h2load's summary says {counted.group(3)} requests done, its log holds {requests}")
        window_s = (rows[:, 0] + rows[:, 2]).max() / 1e6 - rows[:, 0].min() / 1e6
        if abs(window_s - measured_s) > WINDOW_TOLERANCE * measured_s:
            notes.append(f"the per-request log spans {window_s:.2f} s, h2load's main duration is {measured_s:g} s")
        return latency_metrics(
            rows[:, 2] / 1000.0,
            requests=requests, errors=errors, rps=requests / measured_s if measured_s > 0 else None,
            measured_s=measured_s,
            source=f"h2load --log-file per-request log ({LOG_FILE}, us): requests, errors (status -1 or not "
                   "2xx/3xx), latency via harness.stats.latency_metrics; rps = logged requests / the -D main duration "
                   "(h2load's own req/s uses it too)",
            notes=notes,
        )
