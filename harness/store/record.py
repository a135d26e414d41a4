"""What a run stored beside the tool's own files: ``record.json`` in the run's folder.

The runner writes it once the run is over; harness/row derives the row from it and from the raw
files (each part's stdout/stderr, samples*.csv and execution.json), so a results folder can be
re-derived at any time (``python -m harness rederive``). Plain values only: no process, no session.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import get_type_hints

from pydantic import ConfigDict, TypeAdapter, ValidationError, create_model

from harness.cpus import CpuSplit
from harness.files import write_atomic
from harness.store.samples import CpuFrame, Sample, read_csv

# Of the results: record.json, execution.json, the derivation and the row; meta.json and each runs.csv row say
# which (the versions and the upgrade of older rows: harness/store/upgrade.py).
SCHEMA_VERSION = 2
RECORD = "record.json"
STDOUT, STDERR, SAMPLES = "stdout.txt", "stderr.txt", "samples.csv"
EXECUTION = "execution.json"   # the process's facts beside its output and samples


@dataclass(frozen=True)
class Observer:
    """What the harness's own observation cost during a run's load (issue 53): the CPU seconds of its top and of
    the harness's process (every thread: the one reading top's frames, the one waiting on the tool), and the CPUs
    both were held to ("": any)."""
    cpus: str
    top_cpu_s: float | None      # None: top ran on another machine (ssh)
    harness_cpu_s: float
    wall_s: float

    def share(self) -> float | None:
        """Both together, as a share of one CPU over the load (0.01: 1% of a CPU)."""
        if self.top_cpu_s is None or self.wall_s <= 0:
            return None
        return (self.top_cpu_s + self.harness_cpu_s) / self.wall_s


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
    observer: Observer | None = None  # the harness's observation's own cost during the load


def save_execution(execution: Execution, folder: Path) -> None:
    """What ``load`` needs beside stdout/stderr/samples*.csv, which execute() writes as it goes."""
    frames = {name: [[f.t_s, f.cpu, f.busy_pct, int(f.first_frame), f.irq_pct] for f in getattr(execution, name)]
              for name in ("cpu_busy", "target_cpu_busy") if getattr(execution, name) is not None}
    write_atomic(folder / EXECUTION, json.dumps({
        "exit_code": execution.exit_code, "timed_out": execution.timed_out, "wall_s": execution.wall_s,
        "overtime_s": execution.overtime_s,
        "launched_at": execution.launched_at, "others": sorted(execution.others or {}),
        "affinity": execution.affinity, **frames,
        **({"observer": asdict(execution.observer)} if execution.observer else {})}) + "\n")


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
        overtime_s=record.get("overtime_s", 0.0),
        observer=Observer(**record["observer"]) if record.get("observer") else None)


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
    spec: dict | None = None           # the RunSpec the tool was given (RunSpec.to_record); None: stored before it


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
    capture: dict | None = None        # --capture: the wire summary (or why there is none)
    unrunnable: str | None = None      # unsupported/failed before anything ran: the reason
    unrunnable_status: str | None = None
    error: str | None = None           # the run's failure outside the tool (a HarnessError, a crash)
    traceback: str | None = None
    parts: list[PartRecord] = field(default_factory=list)
    phases_s: dict[str, float] = field(default_factory=dict)   # the wall time of each phase of the run (run.Phases)
    # The adapter's declarations the row reads (ToolAdapter.declarations()) as they were at run time; None: stored
    # before they were recorded (the derivation takes today's adapter's).
    declarations: dict | None = None
    schema_version: int = SCHEMA_VERSION

    @property
    def cpu_split(self) -> CpuSplit:
        return CpuSplit(**{name: tuple(self.split.get(name, ())) for name in ("available", "target", "tool")})

    def save(self, run_dir: Path) -> None:
        write_atomic(run_dir / RECORD, json.dumps(asdict(self), indent=1, default=str) + "\n")

    @classmethod
    def load(cls, run_dir: Path) -> "RunRecord":
        """The record ``run_dir`` stored, each field of its type (a results folder may come from elsewhere):
        a ValueError in one line names the first field that is not."""
        data = json.loads((run_dir / RECORD).read_bytes())
        if not isinstance(data, dict):
            raise ValueError(f"{RECORD} holds a {type(data).__name__}, not a mapping")
        known = {f.name for f in fields(cls)}
        checked = _checked(_RECORD_TYPES, {k: v for k, v in data.items() if k in known}, "")
        record = cls(**{k: v for k, v in data.items() if k in known and k != "parts"})
        record.parts = [PartRecord(**_checked(_PART_TYPES, part, f"parts.{index}."))
                        for index, part in enumerate(checked.get("parts", []))]
        _check_facts(record)
        return record


def split_fields(split: CpuSplit) -> dict:
    return {"available": list(split.available), "target": list(split.target), "tool": list(split.tool)}


# What load() checks, field by field, strictly (a number is no text, text no number): json's own types.
def _strict_fields(cls: type, **overrides: object) -> TypeAdapter:
    """A validator of a mapping holding ``cls``'s fields, each strictly of its declared type."""
    hints = {**get_type_hints(cls), **overrides}
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return TypeAdapter(create_model(f"{cls.__name__}Fields", __config__=ConfigDict(strict=True, extra="ignore"),
                                    **{f.name: (hints[f.name], ... if f.name in required else None)
                                       for f in fields(cls)}))


_PART_TYPES = _strict_fields(PartRecord)
_RECORD_TYPES = _strict_fields(RunRecord, parts=list)
_COUNTS = TypeAdapter(dict[str, int])
API_COUNTS = ("logins_ok", "logins_refused", "gets_ok", "gets_refused")


def _checked(types: TypeAdapter, data: object, prefix: str) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"{prefix.rstrip('.') or 'the record'}: a mapping is needed (got {type(data).__name__})")
    try:
        types.validate_python(data, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = prefix + ".".join(str(p) for p in first["loc"])
        got = first.get("input")
        shown = "" if isinstance(got, (dict, list)) else f" (got {repr(got)[:60]})"
        raise ValueError(f"{where}: {first['msg']}{shown}") from None
    return data


def _check_facts(record: RunRecord) -> None:
    """The free-form facts the derivation reads numbers from: each of the shape it reads."""
    for name in ("server_off_protocol", "server_api"):
        value = getattr(record, name)
        if value is not None:
            _checked(_COUNTS, value, f"{name}.")
    if record.server_api is not None and (missing := [k for k in API_COUNTS if k not in record.server_api]):
        raise ValueError(f"server_api: {missing[0]} is missing (the API's counts: {', '.join(API_COUNTS)})")
    paced = (record.capture or {}).get("paced")
    if paced is not None and not (isinstance(paced, dict) and type(paced.get("rate_rps")) is int
                                  and isinstance(paced.get("schedule"), str)):
        raise ValueError("capture.paced: the rate and schedule a paced run asked for are needed "
                         "({\"rate_rps\": int, \"schedule\": str})")
    port = (record.capture or {}).get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise ValueError(f"capture.port: a TCP port number is needed (got {repr(port)[:60]})")
    for part in record.parts:
        folder = Path(part.folder)
        if folder.is_absolute() or ".." in folder.parts:
            raise ValueError(f"parts[].folder {part.folder!r} leads outside the run's folder")
