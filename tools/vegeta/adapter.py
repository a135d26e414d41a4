"""vegeta: Go, an open-model attacker run here as a closed model: -rate=0 with a fixed number of
workers (-workers = -max-workers = VUs), each sending its next request when the previous one is
answered, over one shared net/http connection pool capped at VUs connections.

The attack writes vegeta's binary results file; after the attack, still inside the same command
(so it runs where the tool runs, host or container), `vegeta report -type=json` writes vegeta's
own summary and, at the same time on the other core, `vegeta encode -to csv` the per-request log, of
which the first three columns are kept (timestamp, status, latency; gzip -1), and the binary file is
removed. Both decode every result: the work grows with the requests (330k results: report 2.4 s, encode
with cut and gzip 5.7 s, one after the other 8.1 s; side by side 5.7 s here), which is why a tool still
working past its grace is waited for (harness/suite/execution.py).
"""
import gzip
import warnings

import numpy as np

from harness.stats import DEFINITION, latency_metrics
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

RESULTS, REPORT, REQUESTS = "vegeta.bin", "vegeta-report.json", "vegeta-requests.csv.gz"


# $1 url, $2 VUs, $3 duration (s), $4 output folder, $5 rate (0: closed model, else requests/s). The binary results file takes ~300 bytes per
# request (it keeps every response's headers): it is reduced to the CSV (~10 bytes per request
# gzipped) and removed. Written to disk during the attack, processed only after it. ``options``: extra
# attack flags, each followed by a space.
def script(binary: str, options: str = "") -> str:
    return f"""set -e
printf 'GET %s\\n' "$1" | {binary} attack {options}-rate="$5" -workers="$2" -max-workers="$2" -max-connections="$2" \\
  -duration="$3s" -timeout=10s -max-body=0 -output "$4/{RESULTS}"
{binary} report -type=json -output "$4/{REPORT}" "$4/{RESULTS}" &
report=$!
{binary} encode -to csv "$4/{RESULTS}" | cut -d, -f1-3 | gzip -1 > "$4/{REQUESTS}"
wait $report
rm -f "$4/{RESULTS}"
"""


class Vegeta(ToolAdapter):
    name = "vegeta"
    version_args = ["-version"]
    concurrency_model = ("-rate=0 (no pacing) with -workers = -max-workers = VUs, each one request at a time, "
                         "on a shared keep-alive pool capped at VUs connections (-max-connections)")
    timing_resolution_ms = 0.000001  # ns in its CSV

    open_model = True
    rate_model = ("-rate=<rate>/s with -workers = -max-workers = -max-connections = VUs; a tick waits for a free "
                  "worker and latency counts from the actual send")
    keepalive_off = True   # -keepalive=false (net/http DisableKeepAlives)
    # -insecure: no certificate check; -http2=false keeps HTTP/1.1 even if the server offers h2 (ALPN).
    tls = True
    # -http2=true: ALPN over TLS, a connection per VU (the transport dials one for each request started before the
    # first is up; measured: 20 for 20); -h2c: prior knowledge over http://, every worker on one connection
    # (measured: 1 for 20).
    h2 = True
    h2c = True
    h3 = "Go's net/http, which vegeta is built on, has no HTTP/3 (QUIC) (vegeta issue #431)"
    h2_connections = {"h2": "per_vu", "h2c": "one"}
    login_flow = ("vegeta's CLI sends the targets it is given: no answer is read into a later request (its Go "
                  "library could; this lineup runs the CLI)")

    @staticmethod
    def attack_options(spec: RunSpec) -> str:
        http2 = {"h2": ["-http2=true"], "h2c": ["-h2c"]}.get(spec.protocol, ["-http2=false"] if spec.tls else [])
        flags = ([] if spec.keepalive else ["-keepalive=false"]) + (["-insecure"] if spec.tls else []) + http2
        return "".join(f"{flag} " for flag in flags)

    def command(self, spec: RunSpec) -> list[str]:
        return ["sh", "-c", script(self.binary, self.attack_options(spec)), "vegeta", spec.url, str(spec.vus),
                str(spec.duration_s), str(spec.out_dir), str(spec.rate_rps or 0)]

    def parse(self, output: ToolOutput) -> Metrics:
        path = output.file(REQUESTS)
        if not path.is_file():
            raise ParseError(f"vegeta wrote no per-request log {REQUESTS}")
        try:
            with gzip.open(path, "rt") as handle, warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)       # "input contained no data"
                # Columns: start (epoch ns), status code (0 = no response), latency (ns).
                table = np.loadtxt(handle, delimiter=",", dtype=np.int64, ndmin=2)
        except (OSError, EOFError, ValueError) as exc:
            raise ParseError(f"{REQUESTS} is not vegeta's per-request CSV: {exc}") from exc
        if table.size == 0 or table.shape[1] != 3:
            raise ParseError(f"{REQUESTS} holds no request")
        starts_ns, codes, latencies_ns = table[:, 0], table[:, 1], table[:, 2]
        first_ns = int(starts_ns.min())
        measured_s = int((starts_ns + latencies_ns).max() - first_ns) / 1e9
        requests = len(table)
        notes = self._check_report(output, requests)
        return latency_metrics(
            latencies_ns / 1e6,
            requests=requests,
            # vegeta's own rule: a result is an error unless its status is 2xx/3xx (0 = no response).
            errors=int(np.count_nonzero((codes < 200) | (codes >= 400))),
            rps=requests / measured_s if measured_s > 0 else None,
            measured_s=measured_s,
            # Timestamps are epoch ns: the load window is exact even though sh and the report follow it.
            load_start_s=first_ns / 1e9 - output.launched_at if output.launched_at else None,
            source=(f"vegeta encode -to csv per-request log (ns): {DEFINITION}; "
                    "rps = requests / (last response end - first request start); "
                    "errors = status not 2xx/3xx (vegeta's own success rule); "
                    f"checked against vegeta report -type=json ({REPORT}, t-digest percentiles)"),
            notes=notes,
        )

    @staticmethod
    def _check_report(output: ToolOutput, requests: int) -> list[str]:
        """vegeta's own JSON summary must count the same requests as the per-request log."""
        report = output.json(REPORT, f"vegeta wrote no JSON report {REPORT}")
        if report.get("requests") != requests:
            raise ParseError(f"{REPORT} counts {report.get('requests')} requests, {REQUESTS} {requests}")
        return [f"vegeta errors: {'; '.join(report['errors'][:3])}"] if report.get("errors") else []
