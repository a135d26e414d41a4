"""The suite: every (scenario, tool) pair, one after the other, each becoming one row.

A run that fails becomes a row with status failed/timeout and the reason; the suite goes on.
``opened`` holds what a suite needs around its runs (pre-flight, the lock, the runtime, the results
folder) and ``Bench.run`` runs one pair in it: run_suite and the capacity search (capacity_run.py) share both.
"""
from __future__ import annotations

import json
import signal
import statistics
import time
import traceback
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from rich.console import Console
from rich.markup import escape

from harness import environment
from harness.errors import HarnessError
from harness.flows import FLOWS
from harness.network.capture import MISSING, Capture, tcpdump_missing
from harness.network.shaping import (ShaperChoice, choose_shaper, loaded_probe, measured_rtt, netem_available,
                                     proxy_pids, shaped)
from harness.row import derive_stored, merge, rtt_ok
from harness.runtimes import Runtime, Session, make_runtime
from harness.scenarios import Scenario
from harness.store.record import Execution, PartRecord, RunRecord, split_fields
from harness.store.results import ResultsFolder, RunRow, read_meta_row
from harness.store.stall import StallRecord
from harness.suite import preflight, stall
from harness.suite.execution import execute, execute_together, split_evenly
from harness.store.lock import Held, acquire, folder_lock, record_folder
from harness.suite.plan import Plan
from harness.targets import Setup
from harness.targets.file_server import Target, ensure_allowed
from harness.tools import capabilities, openmodel
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec, ToolOutput

# Markup ([bold], [red]) only in the harness's own words: text from outside (a path, an error, a host) is
# escaped or printed with markup=False, or a `[/x]` in it would raise MarkupError mid-suite.
console = Console(highlight=False, soft_wrap=True)
SETUP_ESTIMATE_S = 5.0   # per-run overhead assumed for the ETA until one run has been timed
PART_DIR = "generator-{index}"   # a part's folder when several generators share a run


def grace_s(duration_s: int, override: float | None = None) -> float:
    """How long past its duration a tool may take before it is killed as hung."""
    return override if override is not None else max(30.0, duration_s * 0.5)


OVERTIME_GRACES = 4   # past its grace, a tool still working after its load may go on this many graces more


INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _raise_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


def _record(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
            repeat: int, shaper: str = "none") -> tuple[Path, RunRecord]:
    """The run's folder and its record, before anything has run."""
    run_dir = folder.fresh_run_dir(scenario.id, adapter.name, repeat)
    cpus_target, cpus_tool = runtime.cpu_columns()
    return run_dir, RunRecord(tool=adapter.name, runtime=runtime.name, scenario=scenario.model_dump(), repeat=repeat,
                              started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              run_dir=str(run_dir.relative_to(folder.path)),
                              shaper=shaper if scenario.needs_shaping else "none", cpus_target=cpus_target,
                              cpus_tool=cpus_tool, split=split_fields(runtime.split))


@dataclass
class Phases:
    """The wall time of each phase of one run (record.json's phases_s; meta.json's overhead_s is
    every phase but the load): where the harness's own time around the tool goes."""
    seconds: dict[str, float]
    _started: dict[str, float] = field(default_factory=dict)   # a phase timed across callbacks: when it began

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        self.start(name)
        try:
            yield
        finally:
            self.stop(name)

    def start(self, name: str) -> None:
        self._started[name] = time.monotonic()

    def stop(self, name: str) -> None:
        started = self._started.pop(name, None)
        if started is not None:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - started, 3)


def run_one(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
            shaper: str = "none", grace: float | None = None, allow_external_target: bool = False,
            repeat: int = 1, capture: Capture | None = None) -> RunRow:
    """One run, on every generator the runtime has (one, or several whose parts are merged);
    ``shaper`` is how the scenario's RTT is made where it needs shaping (netem|toxiproxy). The run
    stores its raw files and record.json; its row is derived from them (harness/row). Whatever goes
    wrong becomes the row's status and error; only an interrupt escapes."""
    run_dir, record = _record(runtime, adapter, scenario, folder, repeat, shaper)
    record.grace_s = grace_s(scenario.duration_s, grace) + adapter.wind_down_s(scenario.protocol)
    phases = Phases(record.phases_s)
    with phases.timed("target_facts"):
        record.target = runtime.target_facts() or None
    capture = capture or Capture(enabled=False)
    try:
        with ExitStack() as stack:
            # Callbacks run last-in first-out: "stop" starts before the sessions end and stops after.
            stack.callback(phases.stop, "stop")
            with phases.timed("start"):
                sessions = stack.enter_context(runtime.parts(adapter))
            stack.callback(phases.start, "stop")
            executions = _execute(record, sessions, adapter, scenario, run_dir, capture, allow_external_target,
                                  phases)
            with phases.timed("logs"):
                sessions[0].save_logs(run_dir)
    except HarnessError as exc:
        record.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug or crash in one run must not sink the suite
        record.error, record.traceback = f"harness error: {type(exc).__name__}: {exc}", traceback.format_exc()
    record.capture = _capture_summary(capture)
    return _derive(record, adapter, run_dir, folder)


def _capture_summary(capture: Capture) -> dict | None:
    """The capture's summary for the record; a failure reading it (a corrupted pcap, a bug) is the row's note,
    never the suite's end."""
    try:
        return capture.summary()
    except Exception as exc:  # noqa: BLE001 - the run's figures stand without the wire's
        return {"error": f"harness error: {type(exc).__name__}: {exc}"}


def _execute(record: RunRecord, sessions: list[Session], adapter: ToolAdapter, scenario: Scenario, run_dir: Path,
             capture: Capture, allow_external_target: bool, phases: Phases) -> list[Execution | BaseException]:
    """Shape, verify and probe from every generator, run the tool on all of them at once, and
    note every fact into ``record``; returns each part's execution (or why it did not run)."""
    several = len(sessions) > 1
    folders = [PART_DIR.format(index=i + 1) if several else "" for i in range(len(sessions))]
    rate = openmodel.rate_for(scenario, adapter)
    vus = split_evenly(scenario.vus, len(sessions))
    rates = split_evenly(rate, len(sessions)) if rate else [None] * len(sessions)
    for session in sessions:   # before the harness's own traffic too (the calibration's probes); the shaped one in _part
        ensure_allowed(session.target.host, allow_external_target, session.explicit_target)
    with ExitStack() as stack:
        stack.callback(phases.stop, "unshape")
        targets = []
        with phases.timed("shape"):
            for session, part_vus, part_folder in zip(sessions, vus, folders):
                (run_dir / part_folder).mkdir(exist_ok=True)
                targets.append(stack.enter_context(shaped(session, record.shaper, scenario.rtt_ms, part_vus,
                                                          run_dir / part_folder)))
        stack.callback(phases.start, "unshape")
        with phases.timed("probe"):
            for session, target, part_vus, part_rate, part_folder in zip(sessions, targets, vus, rates, folders):
                record.parts.append(_part(session, target, adapter, part_vus, part_rate, part_folder, several,
                                          allow_external_target, run_dir, scenario.rtt_ms))
        record.proxy_beside_tool = record.shaper == "toxiproxy" and not sessions[0].proxy_beside_target
        specs = [RunSpec(url=p.url, vus=p.vus, duration_s=scenario.duration_s, out_dir=run_dir / p.folder,
                         cpus=p.cpus, rate_rps=p.rate_rps, per_request=p.per_request, keepalive=scenario.keepalive,
                         protocol=scenario.protocol, streams=scenario.streams,
                         flow=FLOWS.get(scenario.flow or ""), relogin_every=scenario.relogin_every)
                 for p in record.parts]
        for part, spec in zip(record.parts, specs):
            part.command = adapter.command(spec)
        before, logged_before = targets[0].counters(), targets[0].protocol_log_size()
        api_before = targets[0].api_log_size()
        with phases.timed("load"):
            executions, stalled = _load(record, sessions, adapter, scenario, run_dir, capture, targets[0], specs, rate)
        # stub_status counts its own request and connection: `after` includes one of each beyond `before`.
        after = targets[0].counters()
        record.server_requests = after.requests - before.requests - 1
        record.server_connections = after.accepts - before.accepts - 1
        record.server_off_protocol = targets[0].off_protocol_requests(logged_before)
        api = targets[0].api_counts(api_before)
        record.server_api = asdict(api) if api is not None else None
        record.stall = stalled.to_dict() if stalled is not None else None
        for part, spec, execution in zip(record.parts, specs, executions):
            part.executed = not isinstance(execution, BaseException)
            if not part.executed:
                part.error = f"{type(execution).__name__}: {execution}"
            elif execution.exit_code == 0 and not execution.timed_out:
                part.histogram = _store_histogram(adapter, spec, execution)
    return executions


def _load(record: RunRecord, sessions: list[Session], adapter: ToolAdapter, scenario: Scenario, run_dir: Path,
          capture: Capture, target: Target, specs: list[RunSpec], rate: int | None
          ) -> tuple[list[Execution | BaseException], StallRecord | None]:
    """The tool on every generator at once, with the stall injected where the scenario asks; one generator's
    run is also captured and probed under the load (the shaper's RTT)."""
    session, deadline_s, overtime_s = sessions[0], scenario.duration_s + record.grace_s, OVERTIME_GRACES * record.grace_s
    with stall.injected(session.target_pids, scenario.stall_at_s, scenario.stall_ms, session.remote_freeze) as stalled:
        if len(sessions) > 1:   # the wire capture records one generator's link: not here yet
            return execute_together([(s, p.command, spec.out_dir) for s, p, spec in zip(sessions, record.parts, specs)],
                                    deadline_s, adapter.sampled_process, overtime_s), stalled
        others = {"nginx": session.target_pids, **({"proxy": session.proxy_pids} if session.proxy_pids() else {}),
                  **({"toxiproxy": proxy_pids} if record.shaper == "toxiproxy" and session.proxy_beside_target else {})}
        paced = (rate, adapter.rate_schedule) if rate else None
        with capture.recording(session, target, run_dir, paced), \
                loaded_probe(session, target, record.shaper, scenario.rtt_ms, scenario.duration_s) as under_load:
            executions = [execute(session, record.parts[0].command, run_dir, deadline_s, adapter.sampled_process,
                                  others, overtime_s)]
        record.shaper_load = under_load
    return executions, stalled


def _store_histogram(adapter: ToolAdapter, spec: RunSpec, execution: Execution) -> dict | None:
    """A part's latencies as an HdrHistogram log beside its output (latency.hlog: for the merge of several
    generators, and for whoever reads HdrHistogram logs), where its tool gives a histogram or per-request
    log without being asked for more than its run (oha's per-request database: several generators only)."""
    try:
        histogram = adapter.latency_histogram(ToolOutput(spec, execution.stdout, execution.stderr,
                                                         execution.exit_code or 0, execution.launched_at))
    except Exception as exc:  # noqa: BLE001 - without it the merge keeps counts only
        return {"error": f"{type(exc).__name__}: {exc}"}
    if histogram is None:
        return None
    return merge.write_histogram(histogram, spec.out_dir, adapter.timing_resolution_ms, execution.launched_at,
                                 spec.duration_s)


def _part(session: Session, target: Target, adapter: ToolAdapter, vus: int, rate: int | None, part_folder: str,
          several: bool, allow_external_target: bool, run_dir: Path, rtt_ms: float) -> PartRecord:
    ensure_allowed(target.host, allow_external_target, session.explicit_target)
    part = PartRecord(folder=part_folder, host=session.where, vus=vus, url=target.url, cpus=session.cpus,
                      rate_rps=rate, per_request=several, memory_check_name=session.memory_check_name,
                      target_cores=session.target_cores, containers=getattr(session, "containers", None))
    part.tool_version = _version(session, adapter)
    session.verify(target)
    shaping = run_dir / part_folder / "shaping.json"
    part.shaping = json.loads(shaping.read_text()) if shaping.is_file() else None
    part.rtt_measured_ms = measured_rtt(session, target, rtt_ms, part.shaping)
    if not rtt_ok(part.rtt_measured_ms, rtt_ms):
        console.print(f"   [yellow]warning[/]: measured RTT {part.rtt_measured_ms:.2f} ms from "
                      f"{escape(session.where)} misses the target {rtt_ms} ms by more than max(10%, 0.5 ms); "
                      f"row flagged rtt_ok=false")
    return part


_VERSIONS: dict[tuple[str, str, str], str] = {}


def _version(session: Session, adapter: ToolAdapter) -> str:
    """The tool's version where it runs, asked once per suite (a JVM tool's answer takes a second or more)."""
    key = (type(session).__name__, session.where, adapter.name)
    if key not in _VERSIONS:
        _VERSIONS[key] = session.version(adapter)
    return _VERSIONS[key]


def _derive(record: RunRecord, adapter: ToolAdapter, run_dir: Path, folder: ResultsFolder) -> RunRow:
    record.save(run_dir)
    derived = derive_stored(record, adapter, run_dir)
    derived.write(run_dir)
    return derived.row


def eta_text(seconds: float) -> str:
    """'01:02:03', and days in front beyond 24 h ('1 d 11:00:00'): a clock of gmtime wrapped at a day."""
    whole = max(0, round(seconds))
    days, rest = divmod(whole, 86_400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days} d {clock}" if days else clock


def _report(index: int, total: int, scenario: Scenario, adapter: ToolAdapter, runtime: str, eta_s: float) -> None:
    eta = eta_text(eta_s)
    console.print(f"[bold]run {index}/{total}[/] {escape(scenario.id)} · {escape(adapter.name)} · {runtime} "
                  f"({scenario.duration_s} s) · ETA {eta}")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}%"


def _summarise(row: RunRow, all_cpus: int) -> None:
    if row.status == "ok":
        console.print(f"   ok: {row.rps:,.0f} rps, p50 {_ms(row.lat_p50_ms)} ms (RTT {row.rtt_measured_ms:.2f} ms, "
                      f"{row.shaper}), server counted {row.server_requests:,} of {row.requests:,}, "
                      + (f"mem {row.mem_avg_mb:.1f} MiB" if row.mem_avg_mb is not None else "mem not sampled")
                      + (f", wire: {row.wire_requests:,} requests, p50 {_ms(row.wire_p50_ms)} ms"
                         if row.wire_requests is not None else ""), markup=False)
        target = ("target not sampled" if row.target_cpu_pct is None else
                  f"target {_pct(row.target_cpu_pct)} on {row.cpus_target or 'all CPUs'}")
        shaper = (f", Toxiproxy {_pct(row.shaper_cpu_pct)} and RTT {_ms(row.rtt_loaded_ms)} ms under the load"
                  if row.shaper == "toxiproxy" else "")
        console.print(f"   CPU: tool {_pct(row.cpu_avg_pct)} on {row.cpus_tool or 'all CPUs'}, {target}{shaper}: "
                      f"limited by {row.limited_by}", markup=False)
    else:
        console.print(f"   [red]{row.status}[/]: {escape(row.error)}")


def _choose_shaper(plan: Plan, runtime: Runtime) -> ShaperChoice:
    needs = any(s.needs_shaping and runtime.unsupported_reason(s) is None for s in plan.scenarios)
    if needs and runtime.netem_refused:
        if plan.shaper == "netem":
            raise HarnessError(f"--shaper netem: {runtime.netem_refused}")
        choice = ShaperChoice("toxiproxy", runtime.netem_refused if plan.shaper == "auto" else "requested")
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})", markup=False)
        return choice
    netem_ok, netem_error = netem_available() if needs else (False, "")
    choice = choose_shaper(plan.shaper, needs, netem_ok, netem_error)
    if needs:
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})", markup=False)
    return choice


def _open_folder(plan: Plan) -> tuple[ResultsFolder, set[tuple[str, str]]]:
    """A new results folder, or the one being resumed with the (scenario, tool) pairs to skip."""
    if plan.resume is None:
        plan.results_root.mkdir(parents=True, exist_ok=True)
        return ResultsFolder.create(plan.results_root, plan.runtime), set()
    folder = ResultsFolder.open(plan.resume, plan.runtime)
    selected = {(s.id, t.name, r) for s, t, r in plan.runs}
    keep = [r for r in folder.rows() if _kept(r, selected, plan.force, plan.keep_unselected)]
    folder.rewrite(keep)  # failed/forced rows are redone; their old rows go
    return folder, {_key(r) for r in keep if r["status"] in ("ok", "unsupported")}


def _key(row: dict[str, str]) -> tuple[str, str, int]:
    return row["scenario"], row["tool"], int(row["repeat"])


def _kept(row: dict[str, str], selected: set[tuple[str, str, int]], force: bool, keep_unselected: bool) -> bool:
    """A resumed folder's ok or unsupported row stays unless --force redoes it; a failed one goes (it is redone),
    but with ``keep_unselected`` only if this suite selects it."""
    if keep_unselected and _key(row) not in selected:
        return True
    return row["status"] in ("ok", "unsupported") and not (force and _key(row) in selected)


@dataclass
class Bench:
    """An open suite: the runtime entered, the lock held, the results folder open. ``run`` is one
    (scenario, tool) pair as the suite runs it: a row whatever happens, appended to runs.csv."""
    plan: Plan
    runtime: Runtime
    folder: ResultsFolder
    finished: set[tuple[str, str, int]]   # resuming: the (scenario, tool, repeat) runs kept from before
    broken: dict[str, str]                # tools the runtime could not prepare, with why
    shaper: ShaperChoice
    no_tcpdump: bool

    def _shaper_reason(self, scenario: Scenario) -> str | None:
        """Why the chosen shaper cannot make this scenario's RTT (None: it can, or none is needed)."""
        if scenario.protocol == "h3" and scenario.needs_shaping and self.shaper.kind == "toxiproxy":
            return ("HTTP/3 is QUIC over UDP, and Toxiproxy shapes TCP only: an h3 run at an RTT needs netem "
                    "(a kernel with sch_netem, or make test-netem's VM)")
        return None

    def cannot_run(self, adapter: ToolAdapter) -> str | None:
        """Why the tool cannot run here at all (None: it can)."""
        return adapter.unavailable or self.broken.get(adapter.name)

    def run(self, scenario: Scenario, adapter: ToolAdapter, repeat: int = 1) -> RunRow:
        plan = self.plan
        if reason := self.cannot_run(adapter):
            row = _unrunnable(self.runtime, adapter, scenario, self.folder, reason, repeat)
        elif reason := (capabilities.unsupported_reason(scenario, adapter) or self.runtime.unsupported_reason(scenario)
                        or self._shaper_reason(scenario)):
            row = _unrunnable(self.runtime, adapter, scenario, self.folder, reason, repeat, status="unsupported")
        elif reason := self._use_target(scenario):
            row = _unrunnable(self.runtime, adapter, scenario, self.folder, reason, repeat)
        else:
            row = run_one(self.runtime, adapter, scenario, self.folder, self.shaper.kind, plan.grace_s,
                          plan.allow_external_target, repeat,
                          Capture(plan.capture, "tcpdump is not installed" if self.no_tcpdump else "",
                                  keep_pcap=plan.keep_pcap))
        self.folder.append(row)
        _summarise(row, len(plan.split.available))
        return row

    def _use_target(self, scenario: Scenario) -> str | None:
        """Start the scenario's target stack (if another one runs); why it cannot start, if it cannot."""
        try:
            self.runtime.use_target(Setup.of(scenario))
        except HarnessError as exc:
            return f"target {Setup.of(scenario).describe()} did not start: {exc}"
        return None

    def stored(self, scenario_id: str, tool: str, repeat: int = 1) -> RunRow | None:
        """The row of a run the resumed folder finished (None: it is to be run)."""
        if (scenario_id, tool, repeat) not in self.finished:
            return None
        return read_meta_row(self.folder.run_dir(scenario_id, tool, repeat))


@contextmanager
def opened(plan: Plan, runtime: Runtime | None = None, lock: Held | None = None) -> Iterator[Bench]:
    """Pre-flight, the single-instance lock, SIGINT and SIGTERM as an interrupt, the tools prepared, the shaper
    chosen, the results folder opened (or resumed) and the runtime entered, for as long as the suite runs.
    ``lock``: the machine's lock held already by the caller, for several suites in a row (the overhead check,
    harness/suite/overhead_check.py: nothing else may run between its pairs); it stays held after the suite."""
    preflight.check_resume(plan)      # bad input: before the runtime is made, the pre-flight and the lock
    # The folder the tools write into, mounted into containers: a resumed one may live outside results_root.
    root = plan.resume.parent if plan.resume is not None else plan.results_root
    runtime = runtime or make_runtime(plan.runtime, root, plan.target_host, plan.generator_hosts, plan.swarm)
    runtime.split = plan.split
    runtime.target_ids = frozenset(s.target for s in plan.scenarios)
    preflight.check(plan, runtime)
    ours = lock is None
    lock = acquire() if ours else lock
    # Every interrupting signal stops the suite alike: SIGTERM, and SIGINT even when inherited ignored (a harness
    # started in the background by a shell without job control, or by a supervisor, then sent `kill -INT`).
    previous = {sig: signal.signal(sig, _raise_on_sigterm) for sig in INTERRUPTS}
    try:
        broken = runtime.prepare(plan.tools)
        shaper = _choose_shaper(plan, runtime)
        no_tcpdump = plan.capture and tcpdump_missing()
        if no_tcpdump:
            console.print(MISSING, markup=False)
        folder, finished = _open_folder(plan)
        record_folder(lock, folder.path)
        resuming = f" (resuming: {len(finished)} finished runs kept)" if plan.resume else ""
        console.print(f"results: {folder.path}{resuming}", markup=False)
        if plan.resume is None:
            folder.write_json("environment.json", environment.collect(
                {"runtime": plan.runtime, "shaper": shaper.kind, "shaper_reason": shaper.reason,
                 **plan.split.describe(), **runtime.describe()}))
        with folder_lock(folder.path), runtime:
            if plan.resume is None and (facts := runtime.started_facts()):
                _add_environment(folder, facts)
            try:
                _check_targets(plan, runtime)
            except HarnessError:
                if plan.resume is None:       # bad input: leave no empty folder
                    folder.discard()
                raise
            yield Bench(plan, runtime, folder, finished, broken, shaper, no_tcpdump)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if ours:
            lock.close()


def _check_targets(plan: Plan, runtime: Runtime) -> None:
    """Every target setup the suite needs, started and checked once before the first run (a proxy
    that does not serve the file stops the suite here, in one line, rather than failing every run)."""
    setups = dict.fromkeys(Setup.of(s) for s in plan.scenarios if runtime.unsupported_reason(s) is None)
    if len(setups) <= 1 and Setup() in setups:
        return
    for setup in setups:
        try:
            runtime.use_target(setup)
            runtime.check_target()
        except HarnessError as exc:
            raise HarnessError(f"target {setup.describe()} failed its pre-flight check: {exc}") from None


def run_suite(plan: Plan, runtime: Runtime | None = None,
              lock: Held | None = None) -> tuple[ResultsFolder, list[RunRow]]:
    """``runtime``: one made already (the tests' in-process runtime); by default plan.runtime's. ``lock``: the
    machine's lock, held by the caller (see opened)."""
    with opened(plan, runtime, lock) as bench:
        runs = [(s, t, r) for s, t, r in plan.runs if (s.id, t.name, r) not in bench.finished]
        rows: list[RunRow] = []
        beyond_s: list[float] = []   # each run's wall time beyond its duration (the ETA learns from them)
        for index, (scenario, adapter, repeat) in enumerate(runs, start=1):
            overhead_s = statistics.mean(beyond_s) if beyond_s else SETUP_ESTIMATE_S
            remaining = sum(s.duration_s + overhead_s for s, _, _ in runs[index - 1:])
            _report(index, len(runs), scenario, adapter, plan.runtime, remaining)
            started = time.monotonic()
            rows.append(bench.run(scenario, adapter, repeat))
            beyond_s.append(max(0.0, time.monotonic() - started - scenario.duration_s))
        _print_overhead(bench.folder, rows, beyond_s)
        return bench.folder, rows


def _print_overhead(folder: ResultsFolder, rows: list[RunRow], beyond_s: list[float]) -> None:
    """The harness's own time around the runs that ran: the median per run, and by phase (meta.json overhead_s)."""
    phases: dict[str, list[float]] = {}
    for row in rows:
        meta = folder.path / row.run_dir / "meta.json"
        overhead = json.loads(meta.read_text()).get("overhead_s", {}) if row.run_dir and meta.is_file() else {}
        for name, seconds in overhead.items():
            phases.setdefault(name, []).append(seconds)
    if not phases.get("total"):
        return
    by_phase = ", ".join(f"{name} {statistics.median(values):.2f}" for name, values in phases.items()
                         if name not in ("total", "tool_beyond_duration"))
    console.print(f"harness time per run (median over {len(phases['total'])} runs): {statistics.median(phases['total']):.1f} s "
                  f"around the tool ({by_phase}); {statistics.median(beyond_s):.1f} s beyond the duration "
                  f"with the tool's own start-up and the parsing (meta.json overhead_s)", markup=False)


def _add_environment(folder: ResultsFolder, facts: dict) -> None:
    path = folder.path / "environment.json"
    folder.write_json(path.name, {**json.loads(path.read_text()), **facts})


def _unrunnable(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
                reason: str, repeat: int, status: str = "failed") -> RunRow:
    run_dir, record = _record(runtime, adapter, scenario, folder, repeat)
    record.unrunnable, record.unrunnable_status = reason, status
    return _derive(record, adapter, run_dir, folder)
