"""The suite: every (scenario, tool) pair, one after the other, each becoming one row.

A run that fails becomes a row with status failed/timeout and the reason; the suite goes on.
"""
from __future__ import annotations

import fcntl
import json
import os
import traceback
import signal
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

import psutil
from rich.console import Console

from harness import PREFIX, bottleneck, environment
from harness.cpus import CpuSplit, choose_split
from harness.adapter import LatencyHistogram, Metrics, RunSpec, ToolAdapter, ToolOutput, below_resolution
from harness.capture import MISSING, Capture, tcpdump_missing
from harness.errors import HarnessError
from harness.failure import cause_line
from harness.execution import Execution, execute
from harness.results import COLUMNS, ResultsFolder, RunRow, withhold_results, write_meta
from harness.sampling import summarise
from harness.shaping import ShaperChoice, choose_shaper, measure_rtt, netem_available, proxy_pids, rtt_ok, shaped
from harness.runtimes import Runtime, Session, make_runtime
from harness.scenarios import Scenario
from harness.target import Target, ensure_allowed
from harness import multigen, openmodel, preflight, stall

console = Console(highlight=False, soft_wrap=True)
LOCK_FILE = Path(f"/tmp/{PREFIX}.lock")
SAMPLE_GAP_WARN_S = 2.5  # top frames further apart than this are reported in the row's notes
SETUP_ESTIMATE_S = 5.0
PROXY_BESIDE_TOOL = ("two machines: Toxiproxy ran beside the tool, on the generator's loopback, and shares its CPUs; "
                     "its CPU is in neither cpu_avg_pct nor target_cpu_pct")  # per-run overhead assumed for the ETA until one run has been timed


@dataclass(frozen=True)
class Plan:
    runtime: str
    tools: list[ToolAdapter]
    scenarios: list[Scenario]
    results_root: Path
    shaper: str = "auto"          # auto | netem | toxiproxy
    resume: Path | None = None    # an existing results folder: skip the runs it finished
    force: bool = False           # with resume: redo finished runs too
    grace_s: float | None = None  # hang detection: seconds past the duration (default max(30, 50%))
    allow_external_target: bool = False
    target_host: str | None = None  # ssh://[user@]host[:port]: Nginx on another machine (harness/runtimes/remote.py)
    generator_hosts: tuple[str, ...] = ()   # ssh:// URLs: the tools run there (harness/runtimes/generator.py)
    repeat: int = 1               # repetitions, interleaved: every tool once, then every tool again
    capture: bool = False         # record the tool's packets with tcpdump: wire_* columns
    keep_pcap: bool = False       # with capture: keep each run's pcap next to its output
    split: CpuSplit = field(default_factory=choose_split)   # target and tool CPU sets (harness/cpus.py)

    def __post_init__(self) -> None:
        for name in ("results_root", "resume"):
            path = getattr(self, name)
            if path is not None and not path.is_absolute():   # tools in containers/on other hosts would miss it
                raise ValueError(f"Plan.{name} must be absolute (resolve it where it enters), got {path}")

    @property
    def runs(self) -> list[tuple[Scenario, ToolAdapter, int]]:
        return [(s, t, r) for r in range(1, self.repeat + 1) for s in self.scenarios for t in self.tools]


def grace_s(duration_s: int, override: float | None = None) -> float:
    """How long past its duration a tool may take before it is killed as hung."""
    return override if override is not None else max(30.0, duration_s * 0.5)


def _single_instance() -> object:
    """One benchmark at a time per machine. LTH_LOCK_WAIT_S=n waits up to n s for the other run to end.
    The holder writes who it is into the lock file, so a refused run can name it."""
    handle = LOCK_FILE.open("a+")
    deadline = time.monotonic() + float(os.environ.get("LTH_LOCK_WAIT_S", "0"))
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise HarnessError(f"another benchmark is running on this machine ({_lock_holder()}): one at a time; "
                                   f"wait for it to end or stop it, then rerun") from None
            time.sleep(1)
    handle.truncate(0)
    handle.write(json.dumps({"pid": os.getpid(), "command": " ".join(psutil.Process().cmdline())[:200],
                             "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
    handle.flush()
    return handle


def _lock_holder() -> str:
    try:
        holder = json.loads(LOCK_FILE.read_text())
        return f"pid {holder['pid']}, `{holder['command']}`, since {holder['since']}"
    except (OSError, ValueError, KeyError):
        return f"{LOCK_FILE} is held"


def _raise_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


# The Metrics fields that are runs.csv columns as they are; notes are joined, load_start_s becomes
# startup_s and source goes to meta.json.
COPIED_METRICS = [f.name for f in fields(Metrics) if f.name in COLUMNS and f.name != "notes"]


def fill_metrics(row: RunRow, adapter: ToolAdapter, spec: RunSpec, execution: Execution, grace: float) -> dict:
    """Parse the tool's output into the row; returns what meta.json should add."""
    output = ToolOutput(spec, execution.stdout, execution.stderr, execution.exit_code or 0, execution.launched_at)
    try:
        metrics = below_resolution(adapter.parse(output), adapter.timing_resolution_ms)
    except Exception as exc:  # noqa: BLE001 - any parser failure is the run's failure, not the suite's
        metrics, row.error = None, (f"could not parse {adapter.name}'s output in {spec.out_dir}: {type(exc).__name__}: "
                                    f"{exc} (its stderr: {cause_line(execution.stderr)})")
    window = None
    if metrics is not None:
        for name in COPIED_METRICS:
            setattr(row, name, getattr(metrics, name))
        row.notes = "; ".join(metrics.notes)
        if metrics.load_start_s is not None and metrics.measured_s is not None:
            row.startup_s = metrics.load_start_s
            window = (metrics.load_start_s, metrics.load_start_s + metrics.measured_s)
    usage = summarise(execution.samples, window)
    row.mem_avg_mb, row.mem_peak_mb, row.cpu_avg_pct = usage.mem_avg_mb, usage.mem_peak_mb, usage.cpu_avg_pct
    row.mem_startup_peak_mb = usage.mem_outside_peak_mb
    if usage.max_gap_s > SAMPLE_GAP_WARN_S or usage.cpu_frames_dropped:
        # Seen in Docker with both cores saturated: top itself stops printing for seconds.
        row.notes = "; ".join(filter(None, [row.notes, f"top sampling stalled: {usage.max_gap_s:.1f} s without a "
                                                       f"frame, memory/CPU rest on {usage.samples} samples"
                                                       + (f", CPU leaves out {usage.cpu_frames_dropped} frame(s) "
                                                          "that came after a stall" if usage.cpu_frames_dropped
                                                          else "")]))
    if execution.timed_out:
        row.status, row.error = "timeout", f"still running {grace:.0f} s after its duration: killed"
    elif execution.exit_code != 0:
        row.status, row.error = "failed", f"exit status {execution.exit_code}: {cause_line(execution.stderr, execution.stdout)}"
    elif metrics is not None:
        row.status = "ok"
    return {"metric_source": metrics.source if metrics else None, "notes": metrics.notes if metrics else [],
            "wall_s": execution.wall_s, "launched_at": execution.launched_at, "samples": usage.samples,
            "load_window_s": window}


def _new_row(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
             repeat: int) -> tuple[Path, RunRow]:
    """The run's folder and its row, status failed until the run proves otherwise."""
    run_dir = folder.run_dir(scenario.id, adapter.name, repeat)
    cpus_target, cpus_tool = runtime.cpu_columns()
    row = RunRow(tool=adapter.name, tool_version=None, runtime=runtime.name, scenario=scenario.id,
                 vus=scenario.vus, rtt_target_ms=scenario.rtt_ms, duration_s=scenario.duration_s, repeat=repeat,
                 started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 run_dir=str(run_dir.relative_to(folder.path)),
                 timing_resolution_ms=adapter.timing_resolution_ms, co_corrected=adapter.co_corrected,
                 cpus_target=cpus_target, cpus_tool=cpus_tool)
    return run_dir, row


def run_one(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
            shaper: str = "none", grace: float | None = None, allow_external_target: bool = False,
            repeat: int = 1, capture: Capture | None = None, baselines: dict[str, dict] | None = None) -> RunRow:
    """One run; ``shaper`` is how the scenario's RTT is made where it needs shaping (netem|toxiproxy).
    Whatever goes wrong becomes the row's status and error; only an interrupt escapes."""
    run_dir, row = _new_row(runtime, adapter, scenario, folder, repeat)
    row.shaper = shaper if scenario.needs_shaping else "none"
    meta: dict = {"concurrency_model": adapter.concurrency_model, "scenario": scenario.model_dump()}
    capture = capture or Capture(enabled=False)
    try:
        with runtime.session(adapter) as session, \
                shaped(session, row.shaper, scenario.rtt_ms, scenario.vus, run_dir) as target:
            ensure_allowed(target.host, allow_external_target, session.explicit_target)
            row.tool_version = session.version(adapter)
            session.verify(target)
            row.rtt_measured_ms = measure_rtt(session, target)
            row.rtt_ok = rtt_ok(row.rtt_measured_ms, scenario.rtt_ms)
            if (run_dir / "shaping.json").is_file():
                meta["shaping"] = json.loads((run_dir / "shaping.json").read_text())
            if not row.rtt_ok:
                console.print(f"   [yellow]warning[/]: measured RTT {row.rtt_measured_ms:.2f} ms misses the "
                              f"target {scenario.rtt_ms} ms by more than max(10%, 0.5 ms); row flagged rtt_ok=false")
            spec = RunSpec(url=target.url, vus=scenario.vus, duration_s=scenario.duration_s,
                           out_dir=run_dir, cpus=session.cpus, rate_rps=openmodel.rate_for(scenario, adapter))
            argv = adapter.command(spec)
            meta["command"], meta["ran_on"] = argv, session.where
            before = target.requests_served()
            grace = grace_s(scenario.duration_s, grace)
            beside_nginx = row.shaper == "toxiproxy" and session.proxy_beside_target
            others = {"nginx": session.target_pids, **({"toxiproxy": proxy_pids} if beside_nginx else {})}
            with stall.injected(session.target_pids, scenario.stall_at_s, scenario.stall_ms,
                                session.remote_freeze) as stalled, \
                    capture.recording(session, target, run_dir):
                execution = execute(session, argv, run_dir, scenario.duration_s + grace, adapter.sampled_process,
                                    others)
            # stub_status counts its own request: `after` includes one status request beyond `before`.
            row.server_requests = target.requests_served() - before - 1
            if baselines is not None and adapter.name not in baselines and execution.exit_code == 0:
                baselines[adapter.name] = {"scenario": scenario.id, **bottleneck.measure_baseline(
                    session, adapter, target.url, run_dir, grace)}
            check_name, target_cores = session.memory_check_name, session.target_cores
            session.save_logs(run_dir)
        meta.update(fill_metrics(row, adapter, spec, execution, grace))
        if row.shaper == "toxiproxy" and not beside_nginx:
            row.notes = "; ".join(filter(None, [row.notes, PROXY_BESIDE_TOOL]))
        openmodel.fill_rate(row, scenario, adapter)
        openmodel.fill_stall(row, scenario, stalled)
        meta.update(bottleneck.fill(row, execution, meta["load_window_s"], runtime.split, check_name, target_cores))
        baseline = (baselines or {}).get(adapter.name)
        if baseline:
            row.mem_per_vu_kb = bottleneck.mem_per_vu_kb(row.mem_avg_mb, baseline["mem_avg_mb"], row.vus)
            row.notes = "; ".join(filter(None, [row.notes, bottleneck.mem_per_vu_note(row.mem_avg_mb,
                                                                                       baseline["mem_avg_mb"])]))
            meta["mem_baseline_1vu"] = baseline
    except HarnessError as exc:
        row.status, row.error = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug or crash in one run must not sink the suite
        row.status, row.error = "failed", f"harness error: {type(exc).__name__}: {exc}"
        meta["traceback"] = traceback.format_exc()
    wire = capture.fill(row)
    if wire:
        meta["wire"] = wire
    _write_meta(run_dir, row, meta)
    return row


def _write_meta(run_dir: Path, row: RunRow, meta: dict) -> None:
    withheld = withhold_results(row)
    write_meta(run_dir, row, {**meta, **({"withheld_figures": withheld} if withheld else {})})


def run_merged(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
               shaper: str = "none", grace: float | None = None, allow_external_target: bool = False,
               repeat: int = 1) -> RunRow:
    """One run spread over every generator host (harness/multigen.py): each part in
    ``generator-<i>/`` with its own meta.json (and its own latency proxy when shaped), the row
    merged from the parts."""
    run_dir, row = _new_row(runtime, adapter, scenario, folder, repeat)
    row.shaper = shaper if scenario.needs_shaping else "none"
    sessions = runtime.sessions(adapter)
    row.generators = len(sessions)
    meta: dict = {"concurrency_model": adapter.concurrency_model, "scenario": scenario.model_dump(), "parts": []}
    try:
        with ExitStack() as stack:
            vus = multigen.split_evenly(scenario.vus, len(sessions))
            rate = openmodel.rate_for(scenario, adapter)
            rates = multigen.split_evenly(rate, len(sessions)) if rate else [None] * len(sessions)
            folders = [run_dir / multigen.PART_DIR.format(index=i + 1) for i in range(len(sessions))]
            for part_dir in folders:
                part_dir.mkdir(exist_ok=True)
            targets = [stack.enter_context(shaped(s, row.shaper, scenario.rtt_ms, n, d))
                       for s, n, d in zip(sessions, vus, folders)]
            for session, target in zip(sessions, targets):
                ensure_allowed(target.host, allow_external_target, session.explicit_target)
                session.verify(target)
            specs = [RunSpec(url=target.url, vus=n, duration_s=scenario.duration_s, cpus=session.cpus, per_request=True,
                             rate_rps=part_rate, out_dir=part_dir)
                     for session, target, n, part_rate, part_dir in zip(sessions, targets, vus, rates, folders)]
            parts = [_new_part(row, *part, adapter) for part in zip(sessions, targets, specs)]
            grace = grace_s(scenario.duration_s, grace)
            before = targets[0].requests_served()
            with stall.injected(sessions[0].target_pids, scenario.stall_at_s, scenario.stall_ms,
                                sessions[0].remote_freeze) as stalled:
                executions = multigen.execute_together(
                    [(s, adapter.command(spec), spec.out_dir) for s, spec in zip(sessions, specs)],
                    scenario.duration_s + grace, adapter.sampled_process)
            row.server_requests = targets[0].requests_served() - before - 1
            sessions[0].save_logs(run_dir)
        histograms = [_fill_part(part, adapter, spec, execution, grace, runtime, session)
                      for part, spec, execution, session in zip(parts, specs, executions, sessions)]
        _merge_parts(row, parts, histograms, [s.generator.ssh.url for s in sessions], meta)
        openmodel.fill_rate(row, scenario, adapter)
        openmodel.fill_stall(row, scenario, stalled)
    except HarnessError as exc:
        row.status, row.error = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - a bug or crash in one run must not sink the suite
        row.status, row.error = "failed", f"harness error: {type(exc).__name__}: {exc}"
        meta["traceback"] = traceback.format_exc()
    _write_meta(run_dir, row, meta)
    return row


def _new_part(row: RunRow, session: Session, target: Target, spec: RunSpec, adapter: ToolAdapter) -> RunRow:
    part = RunRow(**{**{f.name: getattr(row, f.name) for f in fields(RunRow)}, "vus": spec.vus,
                     "run_dir": str(Path(row.run_dir) / spec.out_dir.name)})
    part.tool_version = session.version(adapter)
    part.rtt_measured_ms = measure_rtt(session, target)
    part.rtt_ok = rtt_ok(part.rtt_measured_ms, row.rtt_target_ms)
    return part


def _fill_part(part: RunRow, adapter: ToolAdapter, spec: RunSpec, execution: Execution | BaseException, grace: float,
               runtime: Runtime, session: Session) -> LatencyHistogram | None:
    """One generator's row (in its folder's meta.json) and its latency histogram."""
    if isinstance(execution, BaseException):
        part.status, part.error = "failed", f"{type(execution).__name__}: {execution}"
        write_meta(spec.out_dir, part, {"ran_on": session.where})
        return None
    meta = {"ran_on": session.where, **fill_metrics(part, adapter, spec, execution, grace)}
    meta.update(bottleneck.fill(part, execution, meta["load_window_s"], runtime.split, session.memory_check_name,
                                session.target_cores))
    histogram = None
    if part.status == "ok":
        try:
            histogram = adapter.latency_histogram(ToolOutput(spec, execution.stdout, execution.stderr,
                                                             execution.exit_code or 0, execution.launched_at))
        except Exception as exc:  # noqa: BLE001 - without it the merge keeps counts only
            meta["notes"] = [*meta["notes"], f"no latency histogram: {type(exc).__name__}: {exc}"]
    if histogram is not None:
        multigen.write_histogram(histogram, spec.out_dir)
    write_meta(spec.out_dir, part, meta)
    return histogram


def _merge_parts(row: RunRow, parts: list[RunRow], histograms: list, hosts: list[str], meta: dict) -> None:
    failed = [(host, p) for host, p in zip(hosts, parts) if p.status != "ok"]
    row.tool_version = " / ".join(dict.fromkeys(str(p.tool_version) for p in parts))
    rtts = [p.rtt_measured_ms for p in parts]
    row.rtt_measured_ms, row.rtt_ok = max(rtts), all(p.rtt_ok for p in parts)
    meta["parts"] = [{"host": host, "vus": p.vus, "status": p.status, "requests": p.requests,
                      "rtt_measured_ms": p.rtt_measured_ms, "folder": Path(p.run_dir).name} for host, p in zip(hosts, parts)]
    if failed:
        row.status = "timeout" if any(p.status == "timeout" for _, p in failed) else "failed"
        row.error = "; ".join(f"generator {host}: {p.status}: {p.error}" for host, p in failed)
        return
    figures, how = multigen.merged_figures(parts, histograms)
    for name in COPIED_METRICS:
        if hasattr(figures, name):
            setattr(row, name, getattr(figures, name))
    row.measured_s = max(p.measured_s for p in parts if p.measured_s is not None) if any(p.measured_s for p in parts) else None
    for name in ("mem_avg_mb", "mem_peak_mb", "cpu_avg_pct"):
        values = [getattr(p, name) for p in parts]
        setattr(row, name, None if None in values else sum(values))
    row.tool_saturated = any(p.tool_saturated for p in parts) if all(p.tool_saturated is not None for p in parts) else None
    row.target_cpu_pct, row.target_saturated = parts[0].target_cpu_pct, parts[0].target_saturated   # sampled once
    row.status = "ok"
    row.notes = (f"merged from {len(parts)} generators started together ("
                 + ", ".join(f"{host}: {p.vus} VUs, {p.requests:,} requests" for host, p in zip(hosts, parts))
                 + f"): requests, errors, rps, memory and CPU summed; {how}; RTT: the largest of the parts' "
                 f"({', '.join(f'{r:.2f}' for r in rtts)} ms)")
    meta["metric_source"] = "merged: " + how


def _report(index: int, total: int, scenario: Scenario, adapter: ToolAdapter, runtime: str, eta_s: float) -> None:
    eta = time.strftime("%H:%M:%S", time.gmtime(eta_s))
    console.print(f"[bold]run {index}/{total}[/] {scenario.id} · {adapter.name} · {runtime} "
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
                         if row.wire_requests is not None else ""))
        target = ("target not sampled" if row.target_cpu_pct is None else
                  f"target {_pct(row.target_cpu_pct)} on {row.cpus_target or 'all CPUs'}")
        console.print(f"   CPU: tool {_pct(row.cpu_avg_pct)} on {row.cpus_tool or 'all CPUs'}, {target}: limited by "
                      f"{bottleneck.limited_by(row, all_cpus)}")
    else:
        console.print(f"   [red]{row.status}[/]: {row.error}")


def _choose_shaper(plan: Plan, runtime: Runtime) -> ShaperChoice:
    needs = any(s.needs_shaping and runtime.unsupported_reason(s) is None for s in plan.scenarios)
    if needs and runtime.netem_refused:
        if plan.shaper == "netem":
            raise HarnessError(f"--shaper netem: {runtime.netem_refused}")
        choice = ShaperChoice("toxiproxy", runtime.netem_refused if plan.shaper == "auto" else "requested")
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})")
        return choice
    netem_ok, netem_error = netem_available() if needs else (False, "")
    choice = choose_shaper(plan.shaper, needs, netem_ok, netem_error)
    if needs:
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})")
    return choice


def _open_folder(plan: Plan) -> tuple[ResultsFolder, set[tuple[str, str]]]:
    """A new results folder, or the one being resumed with the (scenario, tool) pairs to skip."""
    if plan.resume is None:
        plan.results_root.mkdir(parents=True, exist_ok=True)
        return ResultsFolder.create(plan.results_root, plan.runtime), set()
    folder = ResultsFolder.open(plan.resume, plan.runtime)
    selected = {(s.id, t.name, r) for s, t, r in plan.runs}
    keep = [r for r in folder.rows()
            if r["status"] in ("ok", "unsupported") and not (plan.force and (r["scenario"], r["tool"], int(r["repeat"])) in selected)]
    folder.rewrite(keep)  # failed/forced rows are redone; their old rows go
    return folder, {(r["scenario"], r["tool"], int(r["repeat"])) for r in keep}


def run_suite(plan: Plan, runtime: Runtime | None = None) -> tuple[ResultsFolder, list[RunRow]]:
    """``runtime``: one made already (the tests' in-process runtime); by default plan.runtime's."""
    runtime = runtime or make_runtime(plan.runtime, plan.results_root, plan.target_host, plan.generator_hosts)
    runtime.split = plan.split
    preflight.check(plan, runtime)
    lock = _single_instance()
    previous = signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        broken = runtime.prepare(plan.tools)
        shaper = _choose_shaper(plan, runtime)
        no_tcpdump = plan.capture and tcpdump_missing()
        if no_tcpdump:
            console.print(MISSING)
        folder, finished = _open_folder(plan)
        console.print(f"results: {folder.path}" + (f" (resuming: {len(finished)} finished runs kept)" if plan.resume else ""))
        if plan.resume is None:
            folder.write_json("environment.json", environment.collect(
                {"runtime": plan.runtime, "shaper": shaper.kind, "shaper_reason": shaper.reason,
                 **plan.split.describe(), **runtime.describe()}))
        runs = [(s, t, r) for s, t, r in plan.runs if (s.id, t.name, r) not in finished]
        rows: list[RunRow] = []
        baselines: dict[str, dict] = {}   # each tool's 1-VU memory, measured once per suite
        overhead_s, started = SETUP_ESTIMATE_S, time.monotonic()
        with runtime:
            if plan.resume is None and (facts := runtime.started_facts()):
                _add_environment(folder, facts)
            for index, (scenario, adapter, repeat) in enumerate(runs, start=1):
                remaining = sum(s.duration_s + overhead_s for s, _, _ in runs[index - 1:])
                _report(index, len(runs), scenario, adapter, plan.runtime, remaining)
                if adapter.unavailable or adapter.name in broken:
                    reason = adapter.unavailable or broken[adapter.name]
                    row = _unrunnable(runtime, adapter, scenario, folder, reason, repeat)
                elif reason := openmodel.unsupported_reason(scenario, adapter) or runtime.unsupported_reason(scenario):
                    row = _unrunnable(runtime, adapter, scenario, folder, reason, repeat, status="unsupported")
                elif runtime.generator_count > 1:
                    row = run_merged(runtime, adapter, scenario, folder, shaper.kind, plan.grace_s,
                                     plan.allow_external_target, repeat)
                else:
                    row = run_one(runtime, adapter, scenario, folder, shaper.kind, plan.grace_s,
                                  plan.allow_external_target, repeat,
                                  Capture(plan.capture, "tcpdump is not installed" if no_tcpdump else "",
                                          keep_pcap=plan.keep_pcap), baselines)
                folder.append(row)
                rows.append(row)
                _summarise(row, len(plan.split.available))
                elapsed = time.monotonic() - started - sum(s.duration_s for s, _, _ in runs[:index])
                overhead_s = max(0.0, elapsed / index)
        return folder, rows
    finally:
        signal.signal(signal.SIGTERM, previous)
        lock.close()


def _add_environment(folder: ResultsFolder, facts: dict) -> None:
    path = folder.path / "environment.json"
    folder.write_json(path.name, {**json.loads(path.read_text()), **facts})


def _unrunnable(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
                reason: str, repeat: int, status: str = "failed") -> RunRow:
    run_dir, row = _new_row(runtime, adapter, scenario, folder, repeat)
    row.status, row.error = status, reason
    if status == "unsupported":
        openmodel.fill_unsupported(row, scenario, adapter)
    write_meta(run_dir, row, {})
    return row
