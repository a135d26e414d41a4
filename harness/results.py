"""The results folder: ``results/<UTC timestamp>-<runtime>/`` with ``runs.csv`` (one row per
run, the column names are a contract), ``environment.json``, and per run
``<scenario>/<tool>/`` holding the tool's raw output, the samples and ``meta.json``.
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import HarnessError

# unsupported: a rate scenario and a tool without an open model (the error says so); nothing ran.
STATUSES = ("ok", "failed", "timeout", "unsupported")


@dataclass
class RunRow:
    tool: str
    tool_version: str | None
    runtime: str
    scenario: str
    vus: int
    rtt_target_ms: float
    duration_s: int
    requests: int | None = None
    errors: int | None = None
    rps: float | None = None
    lat_min_ms: float | None = None
    lat_mean_ms: float | None = None
    lat_p50_ms: float | None = None
    lat_p75_ms: float | None = None
    lat_p90_ms: float | None = None
    lat_p95_ms: float | None = None
    lat_p99_ms: float | None = None
    lat_max_ms: float | None = None
    mem_avg_mb: float | None = None
    mem_peak_mb: float | None = None
    cpu_avg_pct: float | None = None
    server_requests: int | None = None
    status: str = "failed"
    error: str = ""
    notes: str = ""                      # the adapter's remarks on this run (e.g. why counts differ)
    shaper: str = "none"                 # how the RTT was made: netem | toxiproxy | none
    rtt_measured_ms: float | None = None # median RTT from the tool's position, before the run
    rtt_ok: bool | None = None           # within max(10%, 0.5 ms) of rtt_target_ms
    lat_added_ms: float | None = None    # tool_error_p50_ms where a capture exists, else empty
    measured_s: float | None = None      # the load window as the tool timed it
    repeat: int = 1                      # repetition number (REPEAT=n runs every tool n times, interleaved)
    startup_s: float | None = None       # launch to first request (tools with a start-up phase)
    mem_startup_peak_mb: float | None = None  # RSS peak outside the load window (start-up, report)
    started_at: str = ""
    run_dir: str = ""                    # relative to the results folder
    # Latency accuracy (issue 10): the tool's clock, and the wire's view of the same run.
    timing_resolution_ms: float | None = None  # 0.001 for µs tools, 1 for whole-ms ones
    co_corrected: bool | None = None     # True: the tool's latency figures are coordinated-omission corrected
    wire_requests: int | None = None     # request/response pairs seen in the packet capture
    wire_p50_ms: float | None = None     # request's first byte out to response's last byte in, on the wire
    wire_p99_ms: float | None = None
    tool_error_p50_ms: float | None = None  # lat_p50_ms - wire_p50_ms
    tool_error_p99_ms: float | None = None  # lat_p99_ms - wire_p99_ms
    # Who is the bottleneck (issue 11): the CPU split and both sides' CPU over the load window.
    cpus_target: str = ""                # CPU list Nginx ran on ("" = no isolation)
    cpus_tool: str = ""                  # CPU list the tool ran on ("" = no isolation)
    target_cpu_pct: float | None = None  # Nginx (master + workers, + Toxiproxy if it shapes) %CPU, 100 = one core
    tool_saturated: bool | None = None   # tool CPU >= 90% of its cores over the load window
    target_saturated: bool | None = None # Nginx CPU >= 90% of its cores over the load window
    req_per_cpu_s: float | None = None   # requests / the tool's CPU-seconds in the load window
    mem_per_vu_kb: float | None = None   # (mem_avg - the tool's 1-VU/idle memory) / VUs
    # Open model and the stall test (issue 13): harness/openmodel.py, harness/stall.py.
    rate_model: str = ""                 # in a rate scenario: how the tool paced it (its options), or why it cannot
    rate_target_rps: float | None = None # the arrival rate asked for (empty: closed model)
    rate_achieved_rps: float | None = None  # requests / the tool's measured window
    rate_ok: bool | None = None          # achieved >= 95% of the target
    stall_ms: int | None = None          # the target was frozen (SIGSTOP) this long during the run
    stall_at_s: float | None = None      # when, in seconds after the tool's launch
    stall_actual_ms: float | None = None # SIGSTOP to SIGCONT as it happened (empty: the stall did not happen)
    expected_p99_ms: float | None = None # p99 a tool timing from intended send times must report (stall.py)
    expected_max_ms: float | None = None


COLUMNS = [f.name for f in fields(RunRow)]


def _cell(value) -> str:
    if value is None:
        return ""                        # a metric the tool does not report stays empty, never 0
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return str(value)


def utc_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


class ResultsFolder:
    def __init__(self, path: Path):
        self.path = path
        self.runs_csv = path / "runs.csv"

    @classmethod
    def create(cls, root: Path, runtime: str) -> "ResultsFolder":
        path = root / f"{utc_stamp()}-{runtime}"
        path.mkdir(parents=True, exist_ok=False)
        folder = cls(path)
        folder._point_latest(root)
        return folder

    def _point_latest(self, root: Path) -> None:
        latest = root / "latest"
        tmp = root / f".latest-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(self.path.name)
        tmp.replace(latest)              # atomic: `latest` is never missing or half-written

    @classmethod
    def open(cls, path: Path, runtime: str) -> "ResultsFolder":
        """An existing folder to resume; it must be one of this runtime's."""
        if not (path / "environment.json").is_file():
            raise HarnessError(f"cannot resume {path}: not a results folder (no environment.json)")
        recorded = json.loads((path / "environment.json").read_text()).get("runtime")
        if recorded != runtime:
            raise HarnessError(f"cannot resume {path} with runtime {runtime}: it was measured with {recorded}")
        return cls(path)

    def rewrite(self, rows: list[dict[str, str]]) -> None:
        """Replace runs.csv atomically (write a temporary file, then rename it over)."""
        tmp = self.runs_csv.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self.runs_csv)

    def run_dir(self, scenario: str, tool: str, repeat: int = 1) -> Path:
        path = self.path / scenario / tool / ("" if repeat == 1 else f"repeat-{repeat}")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def append(self, row: RunRow) -> None:
        """Append one row and fsync, so a crash never loses or corrupts rows already written."""
        new = not self.runs_csv.exists()
        with self.runs_csv.open("a", newline="") as handle:
            writer = csv.writer(handle)
            if new:
                writer.writerow(COLUMNS)
            writer.writerow([_cell(getattr(row, c)) for c in COLUMNS])
            handle.flush()
            os.fsync(handle.fileno())

    def rows(self) -> list[dict[str, str]]:
        if not self.runs_csv.exists():
            return []
        with self.runs_csv.open(newline="") as handle:
            # A row cut short by a crash mid-write has missing fields: it is not a finished run.
            return [r for r in csv.DictReader(handle) if None not in r.values() and r.get("status") in STATUSES]

    def write_json(self, name: str, data: dict) -> None:
        (self.path / name).write_text(json.dumps(data, indent=2, default=str) + "\n")


def write_meta(run_dir: Path, row: RunRow, extra: dict) -> None:
    (run_dir / "meta.json").write_text(json.dumps({"row": asdict(row), **extra}, indent=2, default=str) + "\n")
