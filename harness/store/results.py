"""The results folder: ``results/<UTC timestamp>-<runtime>/`` with ``runs.csv`` (one row per
run, the column names are a contract), ``environment.json``, and per run
``<scenario>/<tool>/`` holding the tool's raw output, the samples and ``meta.json``.
"""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
from dataclasses import MISSING, asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import HarnessError
from harness.files import write_atomic
from harness.store.figures import Figures, column
from harness.store.record import SCHEMA_VERSION
from harness.store.declarations import DECLARATIONS_JSON
from harness.store.safe import empty_dir_inside, make_dir_inside, write_text_inside

# unsupported: a rate scenario and a tool without an open model (the error says so); nothing ran.
STATUSES = ("ok", "failed", "timeout", "unsupported")
ENVIRONMENT_JSON = "environment.json"
# What a results folder (and its root) holds besides the scenario folders: no scenario id may take these names.
RESERVED_NAMES = frozenset({"runs.csv", "runs.csv.tmp", "runs.csv.before-rederive", ENVIRONMENT_JSON, "capacity.json",
                            "overhead.json", DECLARATIONS_JSON, "report", "by-hand", "latest"})


@dataclass
class RunSetup:
    """What was run: the first columns of every row."""

    tool: str = column("the tool id (a variant has its own: locust-http)", MISSING)
    tool_version: str | None = column("the version the tool printed", MISSING)
    runtime: str = column("host or docker", MISSING)
    scenario: str = column("the scenario id, e.g. vu20-rtt0.1", MISSING)
    vus: int = column("virtual users: connections held for the whole run (a rate run's cap)", MISSING)
    rtt_target_ms: float = column("the round-trip time the scenario asks for, ms", MISSING)
    duration_s: int = column("how long the tool was asked to run, s", MISSING)


@dataclass
class RunRow(Figures, RunSetup):
    """One runs.csv row: RunSetup's columns, the tool's Figures, then what the harness measured.
    The column order is a contract: new columns go last."""

    mem_avg_mb: float | None = column("the tool's average RSS over the load window, MiB")
    mem_peak_mb: float | None = column("the tool's peak RSS over the load window, MiB")
    cpu_avg_pct: float | None = column("the tool's average CPU over the load window, 100 = one core")
    server_requests: int | None = column("requests Nginx served during the run (its stub_status), less the harness's "
                                          "own RTT probe under the load (Toxiproxy)")
    status: str = column("ok, failed, timeout or unsupported", "failed")
    error: str = column("why the run did not succeed (empty when ok)", "")
    notes: str = column("the adapter's and the runner's remarks on this run (e.g. why counts differ)", "")
    shaper: str = column("how the RTT was made: netem, toxiproxy or none", "none")
    rtt_measured_ms: float | None = column("median RTT from the tool's position, before the run, ms")
    rtt_ok: bool | None = column("rtt_measured_ms within max(10%, 0.5 ms) of rtt_target_ms")
    lat_added_ms: float | None = column("tool_error_p50_ms where a capture exists, else empty")
    measured_s: float | None = column("the load window as the tool timed it, s")
    repeat: int = column("repetition number (--repeat n runs every tool n times, interleaved)", 1)
    startup_s: float | None = column("launch to first request, s (tools with a start-up phase)")
    mem_startup_peak_mb: float | None = column("the tool's peak RSS outside the load window (start-up, report), MiB")
    started_at: str = column("when the run started, UTC, ISO 8601", "")
    run_dir: str = column("the run's folder, relative to the results folder", "")
    # Latency accuracy (issue 10): the tool's clock, and the wire's view of the same run.
    timing_resolution_ms: float | None = column("the tool's clock step: 0.001 for µs tools, 1 for whole-ms ones")
    co_corrected: bool | None = column("true: the tool's latency figures are coordinated-omission corrected")
    wire_requests: int | None = column("request/response pairs seen in the packet capture (--capture), less "
                                        "the harness's own RTT probe under the load (Toxiproxy)")
    wire_p50_ms: float | None = column("median of request's first byte out to response's last byte in, on the wire, ms")
    wire_p99_ms: float | None = column("the same, 99th percentile, ms")
    tool_error_p50_ms: float | None = column("lat_p50_ms - wire_p50_ms")
    tool_error_p99_ms: float | None = column("lat_p99_ms - wire_p99_ms")
    # Who is the bottleneck (issue 11): the CPU split and both sides' CPU over the load window.
    cpus_target: str = column("CPU list Nginx ran on (empty: no isolation; on another machine: all of that one's)", "")
    cpus_tool: str = column("CPU list the tool ran on (empty: no isolation; on another machine: all of that one's)", "")
    target_cpu_pct: float | None = column("Nginx's CPU (master + workers, + Toxiproxy if it shapes), 100 = one core")
    tool_saturated: bool | None = column("the tool's CPU >= 90% of its cores over the load window")
    target_saturated: bool | None = column("Nginx's CPU >= 90% of its cores over the load window")
    req_per_cpu_s: float | None = column("requests / the tool's CPU-seconds in the load window")
    # Open model and the stall test (issue 13): harness/row/rate.py, harness/row/stall.py.
    rate_model: str = column("in a rate scenario: how the tool paced it (its options), or why it cannot", "")
    rate_target_rps: float | None = column("the arrival rate asked for (empty: closed model)")
    rate_achieved_rps: float | None = column("requests / the tool's measured window")
    rate_ok: bool | None = column("achieved >= 95% of the target rate")
    stall_ms: int | None = column("the target was frozen (SIGSTOP) this long during the run, ms")
    stall_at_s: float | None = column("when, in seconds after the tool's launch")
    stall_actual_ms: float | None = column("SIGSTOP to SIGCONT as it happened, ms (empty: the stall did not happen)")
    expected_p99_ms: float | None = column("p99 a tool timing from intended send times must report (stall.py)")
    expected_max_ms: float | None = column("max a tool timing from intended send times must report (stall.py)")
    # Several generator hosts (issue 14): harness/row/merge.py.
    generators: int = column("generator hosts whose parts make this row (1: one tool process; more: merged)", 1)
    # Structured where notes used to be parsed (issue 22): harness/row.
    limited_by: str | None = column("which side limited the run, a code: tool, target, tool and target, shaper, shared "
                                    "CPUs, other processes (on the machine), neither (the RTT or the tool's own "
                                    "limits), not measured, n/a (docs/methodology.md: Who is the bottleneck)")
    lat_below_resolution: str | None = column("latency columns emptied because they were below the tool's timing "
                                              "resolution, a JSON list")
    wire_connect_ms: float | None = column("p50 (nearest rank) TCP handshake on the wire (client SYN to server "
                                           "SYN-ACK), ms: ~ the RTT when the shaper delays the handshake (netem), "
                                           "~0 when it does not (Toxiproxy)")
    # The shaper as a bottleneck (issue 25): harness/row/bottleneck.py fill_shaper.
    shaper_cpu_pct: float | None = column("Toxiproxy's CPU over the load window, 100 = one core (also in target_cpu_pct); "
                                          "empty for netem, which is the kernel's")
    rtt_loaded_ms: float | None = column("Toxiproxy: median RTT through it, probed while the tool ran "
                                         "(shaping.loaded_probe), ms")
    shaper_added_ms: float | None = column("Toxiproxy: rtt_loaded_ms - rtt_measured_ms: what the shaped path added under "
                                           "this load (Toxiproxy's queue, and Nginx's on the CPUs it shares), ms")
    # Schedule fidelity of a rate run with a capture (harness/network/fidelity.py): when the requests left, on the wire.
    wire_rate_rps: float | None = column("a rate run with --capture: the rate its requests left at on the wire, "
                                         "(requests - 1) / first to last request sent, rps")
    wire_rate_cv: float | None = column("the same: std / mean of the rates in each full 100 ms window (0: even)")
    wire_rate_min_window_rps: float | None = column("the same: the slowest 100 ms window's rate, rps")
    wire_gap_cv: float | None = column("the same: std / mean of the gaps between consecutive requests (uniform "
                                       "schedule 0, Poisson 1)")
    wire_schedule: str | None = column("the same: one line judging the gaps, windows and rate against the tool's "
                                       "declared schedule (rate_schedule: uniform or poisson)")
    # Targets as adapters (issue 23): harness/targets/, harness/row/target.py.
    target: str = column("the scenario's target (targets/<id>/): nginx, or a proxy in front of it", "nginx")
    keepalive: bool = column("false: the tool was told to open a new TCP connection for every request", True)
    tls: bool = column("true: HTTPS to a throw-away self-signed certificate (not verified by the tool)", False)
    backend_delay_ms: str | None = column("the file server slept this long per request, ms: fixed (50) or uniform "
                                          "(0..1000)")
    target_stack: str | None = column("what served the run: each server's version and CPUs, where TLS ends, the delay")
    target_version: str | None = column("the version of the scenario's target (the proxy's, behind which Nginx serves)")
    server_connections: int | None = column("TCP connections the Nginx file server accepted during the run (its "
                                            "stub_status; behind a proxy: the proxy's connections to it)")
    proxy_cpu_pct: float | None = column("a proxy target's CPU over the load window, 100 = one core (also in "
                                         "target_cpu_pct; the file server's is the difference)")
    wire_connections: int | None = column("TCP connections the tool opened on the wire (--capture)")
    wire_requests_per_connection: float | None = column("wire_requests / wire_connections: 1.0 when keep-alive is "
                                                        "really off")
    # Memory that grows within a run (issue 35): harness/sampling.py growth.
    mem_growth_mb_per_s: float | None = column("the slope of the tool's RSS over its load window (least squares over "
                                               "top's frames, 3 at least), MiB/s: memory that grows with time or "
                                               "requests at a fixed VU count")
    # HTTP/2 (issue 38): harness/row/target.py check_protocol.
    protocol: str = column("the HTTP version the tool was told to speak: http/1.1, h2 (over TLS, ALPN) or h2c "
                           "(cleartext, prior knowledge)", "http/1.1")
    streams: int = column("HTTP/2: the requests in flight per connection asked for (vus / streams connections)", 1)
    server_off_protocol_requests: int | None = column("an HTTP/2 scenario: requests the file server answered on the "
                                                      "tools' port in another HTTP version (its log; 0 when every "
                                                      "request was HTTP/2)")
    wire_h2_connections: int | None = column("an HTTP/2 scenario with --capture: connections that opened in HTTP/2 on "
                                             "the wire (the h2c preface, or a TLS ClientHello offering h2 by ALPN)")
    # Scripted flows (issue 37): harness/flows.py, harness/row/target.py check_flow.
    flow: str | None = column("the scripted flow each VU ran (harness/flows.py: login = log in, then GET the API "
                              "with the token); empty: one GET of the file")
    relogin_every: int | None = column("the flow: GETs after which a VU logs in again (empty: once per VU)")
    server_logins: int | None = column("a flow: logins the API answered 200 (each issued a new token)")
    server_logins_refused: int | None = column("a flow: logins the API refused (401)")
    server_api_gets: int | None = column("a flow: GETs of the API answered 200 (the token verified)")
    server_api_gets_refused: int | None = column("a flow: GETs of the API refused (401: no token, or one this "
                                                 "suite's target did not issue)")
    lat_login_p50_ms: float | None = column("a flow: the login step's median, as the tool timed it (tools that time "
                                            "steps apart), ms")
    lat_login_p99_ms: float | None = column("a flow: the login step's 99th percentile, ms")
    lat_api_get_p50_ms: float | None = column("a flow: the API GET step's median, ms")
    lat_api_get_p99_ms: float | None = column("a flow: the API GET step's 99th percentile, ms")
    lat_p99_9_ms: float | None = column("99.9th percentile response time, ms: where the harness reads the tool's every "
                                        "latency (its per-request log or histogram; the same nearest rank), else empty")
    schema_version: int = column("the results schema the row was written in (harness/store/upgrade.py reads older "
                                 "rows as the current one; empty in folders before 2: read as 1)", SCHEMA_VERSION)


COLUMNS = [f.name for f in fields(RunRow)]
# What a run measured: a figure only when it ran ok. A failed or timed-out run keeps them in meta.json
# ("withheld") for diagnosis, never in runs.csv where they would read as results.
CONTEXT_COLUMNS = {*(f.name for f in fields(RunSetup)), "status", "error", "notes", "shaper", "rtt_measured_ms", "rtt_ok",
                   "repeat", "started_at", "run_dir", "timing_resolution_ms", "co_corrected", "cpus_target",
                   "cpus_tool", "rate_model", "rate_target_rps", "stall_ms", "stall_at_s", "generators",
                   "target", "keepalive", "tls", "backend_delay_ms", "protocol", "streams", "target_stack",
                   "target_version", "flow", "relogin_every", "schema_version"}
RESULT_COLUMNS = [c for c in COLUMNS if c not in CONTEXT_COLUMNS]


def withhold_results(row: RunRow) -> dict:
    """Empty a run's measured columns unless it ran ok; returns the values taken out (for meta.json)."""
    if row.status == "ok":
        return {}
    taken = {c: getattr(row, c) for c in RESULT_COLUMNS if getattr(row, c) is not None}
    for name in taken:
        setattr(row, name, None)
    return taken


def _cell(value) -> str:
    if value is None:
        return ""                        # a metric the tool does not report stays empty, never 0
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return str(value)


def utc_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


class ResultsFolder:
    def __init__(self, path: Path, latest_root: Path | None = None):
        self.path = path
        self.runs_csv = path / "runs.csv"
        # A new folder becomes ``latest_root/latest`` with its first row, not before: a suite that stops
        # before any run (a runtime that does not start) leaves `latest`, and its report, where they were.
        self._latest_root = latest_root

    @classmethod
    def create(cls, root: Path, runtime: str) -> "ResultsFolder":
        path = root / f"{utc_stamp()}-{runtime}"
        path.mkdir(parents=True, exist_ok=False)
        return cls(path, latest_root=root)

    def _point_latest(self, root: Path) -> None:
        latest = root / "latest"
        tmp = root / f".latest-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(self.path.name)
        tmp.replace(latest)              # atomic: `latest` is never missing or half-written

    def discard(self) -> None:
        """Remove this new, run-less folder (the suite stopped before its first run; `latest` never moved)."""
        shutil.rmtree(self.path, ignore_errors=True)

    @classmethod
    def open(cls, path: Path, runtime: str) -> "ResultsFolder":
        """An existing folder to resume; it must be one of this runtime's."""
        recorded = read_environment(path).get("runtime")
        if recorded != runtime:
            raise HarnessError(f"cannot resume {path} with runtime {runtime}: it was measured with {recorded}")
        return cls(path)

    def rewrite(self, rows: list[dict[str, str]]) -> None:
        """Replace runs.csv atomically."""
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        write_text_inside(self.path, self.runs_csv.name, text.getvalue())

    def replace(self, rows: list[RunRow]) -> None:
        """runs.csv made of ``rows`` (re-derived), atomically."""
        self.rewrite([{c: _cell(getattr(row, c)) for c in COLUMNS} for row in rows])

    def run_dir(self, scenario: str, tool: str, repeat: int = 1) -> Path:
        """The run's folder, made where missing; a symbolic link on the way is refused (harness/store/safe.py)."""
        return make_dir_inside(self.path, Path(scenario, tool, "" if repeat == 1 else f"repeat-{repeat}"))

    def fresh_run_dir(self, scenario: str, tool: str, repeat: int = 1) -> Path:
        """The run's folder, emptied of an earlier attempt's files (a failed run redone on resume, or
        --force): a tool appending to its log must not find the old one there. Repeat 1's folder keeps
        the other repetitions' folders, which live inside it. A link on the way is refused, and a link
        inside is removed, never followed."""
        return empty_dir_inside(self.path, Path(scenario, tool, "" if repeat == 1 else f"repeat-{repeat}"),
                                keep=lambda name: repeat == 1 and name.startswith("repeat-"))

    def append(self, row: RunRow) -> None:
        """Append one row and fsync, so a crash never loses or corrupts rows already written."""
        new = not self.runs_csv.exists()
        fd = os.open(self.runs_csv, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with open(fd, "a", newline="") as handle:
            writer = csv.writer(handle)
            if new:
                writer.writerow(COLUMNS)
            writer.writerow([_cell(getattr(row, c)) for c in COLUMNS])
            handle.flush()
            os.fsync(handle.fileno())
        if self._latest_root is not None:
            self._point_latest(self._latest_root)
            self._latest_root = None

    def rows(self) -> list[dict[str, str]]:
        if not self.runs_csv.exists():
            return []
        with self.runs_csv.open(newline="") as handle:
            # A row cut short by a crash mid-write has missing fields: it is not a finished run.
            return [r for r in csv.DictReader(handle) if None not in r.values() and r.get("status") in STATUSES]

    def write_json(self, name: str, data: dict | list) -> None:
        write_text_inside(self.path, name, json.dumps(data, indent=2, default=str) + "\n")


def read_environment(folder: Path) -> dict:
    """A results folder's environment.json, to resume it: a mapping, or a one-line HarnessError."""
    path = folder / ENVIRONMENT_JSON
    if not path.is_file():
        raise HarnessError(f"cannot resume {folder}: not a results folder (no {ENVIRONMENT_JSON})")
    try:
        text = path.read_bytes()
        environment = json.loads(text) if text.strip() else {}
    except (OSError, ValueError) as exc:   # ValueError: not JSON, or not UTF-8
        raise HarnessError(f"cannot resume {folder}: its {ENVIRONMENT_JSON} is unreadable ({exc}); "
                           f"start a new results folder (leave out --resume)") from None
    if not text.strip():
        raise HarnessError(f"cannot resume {folder}: its {ENVIRONMENT_JSON} is empty (the run that made it was "
                           f"stopped while writing it?); start a new results folder (leave out --resume)")
    if not isinstance(environment, dict):
        raise HarnessError(f"cannot resume {folder}: its {ENVIRONMENT_JSON} holds a {type(environment).__name__}, "
                           f"not a mapping; start a new results folder (leave out --resume)")
    return environment



def write_meta(run_dir: Path, row: RunRow, extra: dict) -> None:
    write_atomic(run_dir / "meta.json", json.dumps({"row": asdict(row), **extra}, indent=2, default=str) + "\n")


def read_meta_row(run_dir: Path) -> RunRow:
    """The row write_meta stored in ``run_dir``, exactly (runs.csv rounds to 6 digits); columns it
    predates take their defaults, but a row stored without schema_version stays of its version, 1
    (harness/store/upgrade.py), not today's."""
    stored = {"schema_version": 1, **json.loads((run_dir / "meta.json").read_text())["row"]}
    return RunRow(**{name: value for name, value in stored.items() if name in COLUMNS})


def columns_markdown() -> str:
    """The README's column table, from the columns' docs (tests/test_results.py keeps the two equal)."""
    rows = [f"| `{f.name}` | {f.metadata['doc']} |" for f in fields(RunRow)]
    return "\n".join(["| column | meaning |", "|---|---|", *rows]) + "\n"
