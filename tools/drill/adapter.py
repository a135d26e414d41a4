"""drill: Rust (tokio current-thread runtime, reqwest), a fixed count of plan iterations.

drill has no duration option and prints its summary (--stats) only after its last iteration, so
run.sh gives it a count it cannot reach and ends it with `timeout` after the duration. The
figures come from the line drill prints for every request in its default (non-quiet) output,
with --nanosec: status and time-to-last-byte in ns. Those lines go to drill-requests.log; the
window's start and end (epoch s, around the drill process) are in drill-window.txt.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from harness.adapter import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput
from harness.stats import DEFINITION, latency_metrics

DRILL = "/opt/lth/cargo/bin/drill"        # install.sh and the Dockerfile both put it here
REQUESTS_LOG, WINDOW = "drill-requests.log", "drill-window.txt"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "lth                       http://198.18.0.2:80/style.css 200 OK 214119ns"
REQUEST_LINE = re.compile(r"^lth\s+\S+ (\d{3})\b.* (\d+)ns$")
ERROR_LINE = re.compile(r"^Error (connecting|reading body) ")


def read_requests(path: Path) -> tuple[list[float], int, int]:
    """(latencies ms of every response, responses with a status outside 2xx/3xx, transport errors)."""
    latencies: list[float] = []
    bad_status = transport_errors = 0
    with path.open(errors="replace") as handle:
        for raw in handle:
            line = ANSI.sub("", raw.rstrip("\n"))
            match = REQUEST_LINE.match(line)
            if match:
                latencies.append(int(match.group(2)) / 1e6)
                if not 200 <= int(match.group(1)) < 400:
                    bad_status += 1
            elif ERROR_LINE.match(line):
                transport_errors += 1
    return latencies, bad_status, transport_errors


def read_window(path: Path) -> float | None:
    marks = {}
    for line in path.read_text().splitlines():
        what, _, value = line.partition(" ")
        try:
            marks[what] = float(value)
        except ValueError:
            continue
    if "start" in marks and "end" in marks and marks["end"] > marks["start"]:
        return marks["end"] - marks["start"]
    return None


class Drill(ToolAdapter):
    name = "drill"
    version_command = [DRILL, "--version"]
    concurrency_model = ("concurrency=VUs iterations in flight (one GET each, a shared keep-alive client pool), "
                         "one thread; a count it cannot reach, ended by `timeout` after the duration")

    rate_model = 'closed model only: concurrency users iterating the plan, drill has no arrival-rate option'

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        base = f"{url.scheme}://{url.netloc}"
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        return [str(self.folder / "run.sh"), str(spec.out_dir), base, path, str(spec.vus), str(spec.duration_s)]

    def parse(self, output: ToolOutput) -> Metrics:
        log = output.file(REQUESTS_LOG)
        if not log.is_file():
            raise ParseError(f"drill's output {REQUESTS_LOG} is missing (run.sh did not run drill)")
        latencies, bad_status, transport_errors = read_requests(log)
        if not latencies:
            raise ParseError(f"{REQUESTS_LOG} holds no request line (no request completed)")
        window = output.file(WINDOW)
        measured_s = read_window(window) if window.is_file() else None
        notes = []
        if measured_s is None:
            measured_s = float(output.spec.duration_s)
            notes.append(f"no start/end marks in {WINDOW}: rps uses the configured duration")
        requests = len(latencies) + transport_errors
        return latency_metrics(
            latencies, requests=requests, errors=bad_status + transport_errors, rps=requests / measured_s,
            measured_s=measured_s,
            source=f"drill's per-request lines ({REQUESTS_LOG}; default output with --nanosec: status and "
                   f"time to last byte in ns): requests, non-2xx/3xx, 'Error ...' lines; {DEFINITION}; "
                   f"rps = requests / the time between run.sh's marks around drill ({WINDOW}); drill's own "
                   "summary (--stats) is never printed, since `timeout` ends it",
            notes=notes,
        )
