"""httperf: C, one process, select() over its connections; it has no duration option.

The harness's example of a wrapped, duration-less tool (tools/README.md, "Adding a tool"):
``timeout --preserve-status -s INT D`` stops it after the duration; httperf prints its summary on
SIGINT and exits 0, so the run is ok. Memory and CPU count httperf alone (sampled_process), not
`timeout`, in the run and in its 1-VU baseline.
"""
import re
from urllib.parse import urlsplit

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

TOTAL = re.compile(r"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s", re.M)
REPLY_TIME = re.compile(r"^Reply time \[ms\]: response ([\d.]+) transfer ([\d.]+)", re.M)
STATUS = re.compile(r"^Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)", re.M)
ERRORS = re.compile(r"^Errors: total (\d+)", re.M)


class Httperf(ToolAdapter):
    name = "httperf"
    version_args = ["-V"]
    concurrency_model = "--num-conns VUs keep-alive connections opened at once, endless calls each; timeout -s INT"
    timing_resolution_ms = 0.1          # it prints reply times with one decimal
    reports_percentiles = False         # mean reply time only
    sampled_process = "httperf"         # not `timeout`
    # Issue 23: each declared after a real run (tools/README.md, "Keep-alive off and TLS").
    keepalive_off = ("httperf 0.9.0 opens connections at a fixed --rate up to --num-conns: with --num-calls 1 "
                     "it becomes an open-loop connection-rate test, not VUs users each reconnecting")
    tls = True                          # --ssl; httperf does not verify the server's certificate

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        port = url.port or (443 if spec.tls else 80)
        return ["timeout", "--preserve-status", "-s", "INT", str(spec.duration_s),
                self.binary, "--hog", "--server", url.hostname, "--port", str(port), "--uri", url.path,
                *(["--ssl"] if spec.tls else []),
                "--num-conns", str(spec.vus), "--num-calls", "1000000000", "--rate", str(max(100, 10 * spec.vus))]

    def parse(self, output: ToolOutput) -> Metrics:
        total, reply_time = TOTAL.search(output.stdout), REPLY_TIME.search(output.stdout)
        status, errors = STATUS.search(output.stdout), ERRORS.search(output.stdout)
        if not (total and reply_time and status and errors):
            raise ParseError("httperf printed no summary (Total / Reply time / Reply status / Errors lines)")
        replies, measured_s = int(total.group(3)), float(total.group(4))
        failed = int(errors.group(1)) + sum(int(status.group(i)) for i in (1, 3, 4, 5))
        return Metrics(requests=replies, errors=failed, rps=replies / measured_s, measured_s=measured_s,
                       lat_mean_ms=float(reply_time.group(1)) + float(reply_time.group(2)),
                       source="httperf's text summary")
