"""The Grinder 3.11: Java + Jython 2.5 scripts, one worker thread per VU, per-test data log.

The login flow (RunSpec.flow, harness/flows.py): -Dgrinder.lth.loginUrl and its companions switch lth.py to the
flow: each worker thread (its own TestRunner, which keeps its token) logs in with Test 2 "login", reads the token
from the JSON answer, and GETs the API with Test 3 "API GET", logging in again after grinder.lth.reloginEvery GETs.
The data log has one row per request with its test number: the overall figures are over every row (logins and
GETs), and lat_login_p50/p99 and lat_api_get_p50/p99 are the same percentiles over the rows of each test.
"""
from __future__ import annotations

import csv

from harness.stats import DEFINITION, latency_metrics
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

HOST_ID = "lth"                      # grinder.hostID: names the worker "lth-0" on every machine
DATA_LOG = f"{HOST_ID}-0-data.log"   # worker process 0's per-test log in grinder.logDirectory
SAFETY_S = 10                        # grinder.duration: only a safety net past the script's own deadline
STEP_TESTS = {"login": 2, "api_get": 3}   # lth.py's Test numbers of the flow's steps (the plain GET is Test 1)


class Grinder(ToolAdapter):
    name = "grinder"
    @property
    def version_command(self) -> list[str]:
        return [self.binary, "-cp", self.classpath, "LthGrinder", "--version"]

    @property
    def classpath(self) -> str:
        """install.sh's home: lib/ (Maven Central jars) + wrap/ (the start-up class)."""
        return f"{self.home}/wrap:{self.home}/lib/*"
    concurrency_model = ("one worker process with grinder.threads = VUs threads, each one Grinder run that loops "
                         "GETs on its own keep-alive connection until the duration has passed since its start")
    timing_resolution_ms = 1  # 'Test time' in whole ms

    rate_model = 'closed model only: worker threads loop the test; The Grinder has no arrival-rate option'
    keepalive_off = True   # -Dgrinder.lth.close=true: lth.py sends Connection: close (no keep-alive switch)
    tls = True             # The Grinder's HTTP plugin trusts every server certificate
    h2 = h2c = h3 = "The Grinder's HTTPClient speaks HTTP/1.1 only"
    login_flow = True      # -Dgrinder.lth.loginUrl...: lth.py's flow (Test 2 login, Test 3 API GET, a token per thread)

    def command(self, spec: RunSpec) -> list[str]:
        url, flow = spec.url, []
        if spec.flow is not None:
            f = spec.flow
            url = spec.base_url + f.get_path
            flow = [f"-Dgrinder.lth.loginUrl={spec.base_url}{f.login_path}",
                    f"-Dgrinder.lth.loginMethod={f.login_method}", f"-Dgrinder.lth.loginBody={f.login_body}",
                    f"-Dgrinder.lth.loginContentType={f.login_content_type}",
                    f"-Dgrinder.lth.tokenField={f.token_field}", f"-Dgrinder.lth.tokenHeader={f.token_header}",
                    f"-Dgrinder.lth.reloginEvery={spec.relogin_every or 0}"]
        return [
            # wrap/ first: the logback-worker.xml there replaces Grinder's own (no per-request INFO line).
            self.binary, "-cp", self.classpath,
            f"-Dgrinder.threads={spec.vus}", f"-Dgrinder.hostID={HOST_ID}",
            f"-Dgrinder.script={self.folder / 'lth.py'}",
            f"-Dgrinder.logDirectory={spec.out_dir}",
            f"-Dgrinder.duration={(spec.duration_s + SAFETY_S) * 1000}",
            f"-Dgrinder.lth.url={url}",
            f"-Dgrinder.lth.durationMs={spec.duration_s * 1000}",
            *([] if spec.keepalive else ["-Dgrinder.lth.close=true"]),
            *flow,
            "LthGrinder", str(self.folder / "grinder.properties"),
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        path = output.file(DATA_LOG)
        if not path.is_file():
            raise ParseError(f"The Grinder wrote no data log {DATA_LOG}")
        starts, ends, times, tests = [], [], [], []
        errors = new_connections = 0
        with path.open(newline="", errors="replace") as handle:
            reader = csv.reader(handle, skipinitialspace=True)
            header = next(reader, None)
            if not header or "Test time" not in header:
                raise ParseError(f"{DATA_LOG} has no header row")
            col = {name: i for i, name in enumerate(header)}
            for row in reader:
                if len(row) < len(header):
                    continue
                try:
                    start, elapsed = int(row[col["Start time (ms since Epoch)"]]), int(row[col["Test time"]])
                    status, test = int(row[col["HTTP response code"]]), int(row[col["Test"]])
                    new, failed = int(row[col["New connections"]]), int(row[col["Errors"]])
                except (KeyError, ValueError):      # a record cut short (The Grinder killed mid-write), or mangled
                    raise ParseError(f"{DATA_LOG} line {reader.line_num}: unreadable test record") from None
                starts.append(start)
                ends.append(start + elapsed)
                times.append(float(elapsed))
                tests.append(test)
                new_connections += new
                if failed or not 200 <= status < 400:
                    errors += 1
        if not times:
            raise ParseError(f"{DATA_LOG} holds no test record (no request completed)")
        first, last = min(starts) / 1000.0, max(ends) / 1000.0
        measured_s = last - first
        if measured_s <= 0:
            raise ParseError(f"{DATA_LOG}: empty load window")
        notes = ["latencies are whole milliseconds (The Grinder's data log resolution)"]
        if not output.spec.keepalive:
            notes.append(f"{new_connections} new connections for {len(times)} requests (keep-alive off)")
        elif new_connections > output.spec.vus:
            notes.append(f"{new_connections} new connections for {output.spec.vus} threads (keep-alive broken?)")
        steps = {step: [t for t, test in zip(times, tests) if test == number] for step, number in STEP_TESTS.items()}
        flow = any(steps.values())   # the flow's tests are in the log (lth.py ran the flow)
        metrics = latency_metrics(
            times, requests=len(times), errors=errors, rps=len(times) / measured_s, measured_s=measured_s,
            load_start_s=first - output.launched_at if output.launched_at > 0 else None,
            source=f"The Grinder's per-test data log ({DATA_LOG}): requests, errors (Errors column or a status "
                   f"outside 2xx/3xx); {DEFINITION} over 'Test time' (whole ms); load window = first start to last "
                   "start + test time, rps = requests / that window (JVM and Jython start-up excluded)"
                   + ("; the flow's steps: the same percentiles over the rows of Test 2 (login) and Test 3 (API GET)"
                      if flow else ""),
            notes=notes,
        )
        if flow:
            step_figures(metrics, steps)
        return metrics


def step_figures(metrics: Metrics, steps: dict[str, list[float]]) -> None:
    """lat_<step>_p50/p99_ms: the same percentiles over each step's test times. A 0 (under The Grinder's 1 ms) stays
    0 here: the runner empties it and names it, as for the overall figures (harness/store/figures.py TIMED_FIELDS)."""
    for step, values in steps.items():
        figures = latency_metrics(values) if values else Metrics()
        for p in (50, 99):
            setattr(metrics, f"lat_{step}_p{p}_ms", getattr(figures, f"lat_p{p}_ms"))
