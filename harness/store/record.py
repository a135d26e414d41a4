"""What a run stored beside the tool's own files: ``record.json`` in the run's folder.

The runner writes it once the run is over; harness/row derives the row from it and from the raw
files (each part's stdout/stderr, samples*.csv and execution.json), so a results folder can be
re-derived at any time (``python -m harness rederive``). Plain values only: no process, no session.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from harness.cpus import CpuSplit
from harness.files import write_atomic
from harness.store.samples import CpuFrame, Sample, read_csv

SCHEMA_VERSION = 1   # of record.json, execution.json and the derivation; results/<run>/meta.json says which
RECORD = "record.json"
STDOUT, STDERR, SAMPLES = "stdout.txt", "stderr.txt", "samples.csv"
EXECUTION = "execution.json"   # the process's facts beside its output and samples


@dataclass(frozen=True)
class Execution:
    exit_code: int | None
    timed_out: bool
    wall_s: float
    launched_at: float               # epoch seconds
    samples: list[Sample]            # t_s counted from launch
    stdout: str
    stderr: str
    others: dict[str, list[Sample]] | None = None   # further groups sampled alongside (the target)
    affinity: dict[str, dict[int, dict]] | None = None  # group ("" = tool) -> pid -> name, threads, cpus
    cpu_busy: list[CpuFrame] | None = None             # every CPU's busy % per frame (top -1)
    target_cpu_busy: list[CpuFrame] | None = None      # the same on the target's machine, when it is another one
    overtime_s: float = 0.0          # past its deadline, still working, waited for (harness/suite/execution.py)


def save_execution(execution: Execution, folder: Path) -> None:
    """What ``load`` needs beside stdout/stderr/samples*.csv, which execute() writes as it goes."""
    frames = {name: [[f.t_s, f.cpu, f.busy_pct, int(f.first_frame), f.irq_pct] for f in getattr(execution, name)]
              for name in ("cpu_busy", "target_cpu_busy") if getattr(execution, name) is not None}
    (folder / EXECUTION).write_text(json.dumps({
        "exit_code": execution.exit_code, "timed_out": execution.timed_out, "wall_s": execution.wall_s,
        "overtime_s": execution.overtime_s,
        "launched_at": execution.launched_at, "others": sorted(execution.others or {}),
        "affinity": execution.affinity, **frames}) + "\n")


def load_execution(folder: Path) -> Execution:
    """An execution as execute() returned it, from what it stored in ``folder``."""
    record = json.loads((folder / EXECUTION).read_text())
    frames = {name: [CpuFrame(t, cpu, busy, bool(first), irq) for t, cpu, busy, first, irq in record[name]]
              for name in ("cpu_busy", "target_cpu_busy") if record.get(name) is not None}
    affinity = {group: {int(pid): seen for pid, seen in pids.items()}
                for group, pids in (record.get("affinity") or {}).items()}
    return Execution(
        exit_code=record["exit_code"], timed_out=record["timed_out"], wall_s=record["wall_s"],
        launched_at=record["launched_at"], samples=read_csv(folder / SAMPLES),
        stdout=(folder / STDOUT).read_text(errors="replace"), stderr=(folder / STDERR).read_text(errors="replace"),
        others={name: read_csv(folder / f"samples-{name}.csv") for name in record["others"]},
        affinity=affinity, cpu_busy=frames.get("cpu_busy"), target_cpu_busy=frames.get("target_cpu_busy"),
        overtime_s=record.get("overtime_s", 0.0))


@dataclass
class PartRecord:
    """One tool process: the whole run on one generator, or one generator's part of it."""
    folder: str                        # its files, relative to the run's folder ("" : the run's folder)
    host: str                          # where it ran (meta.json's ran_on)
    vus: int
    url: str = ""
    cpus: int = 1
    rate_rps: int | None = None
    per_request: bool = False
    command: list[str] = field(default_factory=list)
    tool_version: str | None = None
    rtt_measured_ms: float | None = None
    memory_check_name: str = "VmRSS"
    target_cores: int | None = None    # the target's machine's CPUs when it is another machine
    shaping: dict | None = None        # shaping.json: how the RTT was made for this part
    executed: bool = False             # execution.json exists: the tool process was started
    histogram: dict | None = None      # several parts: the stored latency histogram (file, total, source) or its error
    error: str | None = None           # why this part did not run (an exception while starting it)
    containers: dict | None = None     # Docker: the generator's and the target's container ids (short)


@dataclass
class RunRecord:
    tool: str
    runtime: str
    scenario: dict                     # Scenario.model_dump()
    repeat: int
    started_at: str
    run_dir: str                       # relative to the results folder
    shaper: str
    cpus_target: str
    cpus_tool: str
    split: dict                        # CpuSplit: available, target, tool (tuples of CPU numbers)
    grace_s: float | None = None
    proxy_beside_tool: bool = False    # two machines: Toxiproxy ran beside the tool
    server_requests: int | None = None
    server_connections: int | None = None   # connections the file server accepted during the run (stub_status)
    # An HTTP/2 scenario: {HTTP version: requests} the file server logged on the tools' port in another version
    # than the scenario's during the run (harness/targets/file_server.py off_protocol_requests); None: not logged.
    server_off_protocol: dict | None = None
    # A flow scenario (issue 37): the API's answers during the run per step and status (harness/flows.py ApiCounts).
    server_api: dict | None = None
    target: dict | None = None         # the running stack: target_stack, target_version (Runtime.target_facts)
    stall: dict | None = None          # StallRecord's fields as it happened
    shaper_load: dict | None = None    # Toxiproxy: the RTT probed during the load (shaping.loaded_probe)
    baseline: str | None = None        # records before 2026-11-27: a 1-VU run's folder; no longer read (analysis/memory.py)
    capture: dict | None = None        # --capture: the wire summary (or why there is none)
    unrunnable: str | None = None      # unsupported/failed before anything ran: the reason
    unrunnable_status: str | None = None
    error: str | None = None           # the run's failure outside the tool (a HarnessError, a crash)
    traceback: str | None = None
    parts: list[PartRecord] = field(default_factory=list)
    phases_s: dict[str, float] = field(default_factory=dict)   # the wall time of each phase of the run (runner.Phases)
    schema_version: int = SCHEMA_VERSION

    @property
    def cpu_split(self) -> CpuSplit:
        return CpuSplit(**{name: tuple(self.split.get(name, ())) for name in ("available", "target", "tool")})

    def save(self, run_dir: Path) -> None:
        write_atomic(run_dir / RECORD, json.dumps(asdict(self), indent=1, default=str) + "\n")

    @classmethod
    def load(cls, run_dir: Path) -> "RunRecord":
        data = json.loads((run_dir / RECORD).read_text())
        known = {f.name for f in fields(cls)}
        record = cls(**{k: v for k, v in data.items() if k in known})
        record.parts = [PartRecord(**part) for part in data.get("parts", [])]
        return record


def split_fields(split: CpuSplit) -> dict:
    return {"available": list(split.available), "target": list(split.target), "tool": list(split.tool)}
