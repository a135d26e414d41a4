"""The suite: every (scenario, tool) pair, one after the other, each becoming one row.

A run that fails becomes a row with status failed/timeout and the reason; the suite goes on.
"""
from __future__ import annotations

import fcntl
import signal
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from harness import PREFIX, environment
from harness.adapter import ParseError, RunSpec, ToolAdapter, ToolOutput
from harness.errors import HarnessError
from harness.execution import Execution, execute
from harness.results import ResultsFolder, RunRow, write_meta
from harness.sampling import summarise
from harness.shaping import ShaperChoice, choose_shaper, measure_rtt, netem_available, rtt_ok, shaped
from harness.runtimes import Runtime, make_runtime
from harness.scenarios import Scenario

console = Console(highlight=False, soft_wrap=True)
LOCK_FILE = Path(f"/tmp/{PREFIX}.lock")
SETUP_ESTIMATE_S = 5.0  # per-run overhead assumed for the ETA until one run has been timed


@dataclass(frozen=True)
class Plan:
    runtime: str
    tools: list[ToolAdapter]
    scenarios: list[Scenario]
    results_root: Path
    shaper: str = "auto"          # auto | netem | toxiproxy

    @property
    def runs(self) -> list[tuple[Scenario, ToolAdapter]]:
        return [(s, t) for s in self.scenarios for t in self.tools]


def grace_s(duration_s: int) -> float:
    """How long past its duration a tool may take before it is killed as hung."""
    return max(30.0, duration_s * 0.5)


def _single_instance() -> object:
    handle = LOCK_FILE.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise HarnessError(f"another harness run holds {LOCK_FILE}: only one benchmark at a time on a machine") from None
    return handle


def _raise_on_sigterm(*_: object) -> None:
    raise KeyboardInterrupt


def fill_metrics(row: RunRow, adapter: ToolAdapter, spec: RunSpec, execution: Execution) -> dict:
    """Parse the tool's output into the row; returns what meta.json should add."""
    output = ToolOutput(spec, execution.stdout, execution.stderr, execution.exit_code or 0, execution.launched_at)
    try:
        metrics = adapter.parse(output)
    except (ParseError, ValueError, KeyError) as exc:
        metrics, row.error = None, f"could not parse {adapter.name}'s output: {exc}"
    window = None
    if metrics is not None:
        for name in ("requests", "errors", "rps", "measured_s", "lat_min_ms", "lat_mean_ms", "lat_p50_ms",
                     "lat_p75_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms"):
            setattr(row, name, getattr(metrics, name))
        if metrics.load_start_s is not None and metrics.measured_s is not None:
            row.startup_s = metrics.load_start_s
            window = (metrics.load_start_s, metrics.load_start_s + metrics.measured_s)
    usage = summarise(execution.samples, window)
    row.mem_avg_mb, row.mem_peak_mb, row.cpu_avg_pct = usage.mem_avg_mb, usage.mem_peak_mb, usage.cpu_avg_pct
    row.mem_startup_peak_mb = usage.mem_outside_peak_mb
    if execution.timed_out:
        row.status, row.error = "timeout", f"still running {grace_s(spec.duration_s):.0f} s after its duration: killed"
    elif execution.exit_code != 0:
        last = (execution.stderr.strip().splitlines() or ["no stderr"])[-1]
        row.status, row.error = "failed", f"exit status {execution.exit_code}: {last[:300]}"
    elif metrics is not None:
        row.status = "ok"
    return {"metric_source": metrics.source if metrics else None, "notes": metrics.notes if metrics else [],
            "wall_s": execution.wall_s, "samples": usage.samples}


def run_one(runtime: Runtime, adapter: ToolAdapter, scenario: Scenario, folder: ResultsFolder,
            shaper: str = "none") -> RunRow:
    """One run; ``shaper`` is how the scenario's RTT is made where it needs shaping (netem|toxiproxy)."""
    run_dir = folder.run_dir(scenario.id, adapter.name)
    row = RunRow(tool=adapter.name, tool_version=None, runtime=runtime.name, scenario=scenario.id,
                 vus=scenario.vus, rtt_target_ms=scenario.rtt_ms, duration_s=scenario.duration_s,
                 shaper=shaper if scenario.needs_shaping else "none",
                 started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 run_dir=str(run_dir.relative_to(folder.path)))
    meta: dict = {"concurrency_model": adapter.concurrency_model, "scenario": scenario.model_dump()}
    try:
        with runtime.session(adapter) as session, \
                shaped(session, row.shaper, scenario.rtt_ms, scenario.vus, run_dir) as target:
            row.tool_version = session.version(adapter)
            target.verify()
            row.rtt_measured_ms = measure_rtt(session, target)
            row.rtt_ok = rtt_ok(row.rtt_measured_ms, scenario.rtt_ms)
            if not row.rtt_ok:
                console.print(f"   [yellow]warning[/]: measured RTT {row.rtt_measured_ms:.2f} ms misses the "
                              f"target {scenario.rtt_ms} ms by more than max(10%, 0.5 ms); row flagged rtt_ok=false")
            spec = RunSpec(url=target.url, vus=scenario.vus, duration_s=scenario.duration_s,
                           out_dir=run_dir, cpus=session.cpus)
            argv = adapter.command(spec)
            meta["command"] = argv
            before = target.requests_served()
            execution = execute(session, argv, run_dir, scenario.duration_s + grace_s(scenario.duration_s))
            # stub_status counts its own request: `after` includes one status request beyond `before`.
            row.server_requests = target.requests_served() - before - 1
            session.save_logs(run_dir)
        meta.update(fill_metrics(row, adapter, spec, execution))
    except HarnessError as exc:
        row.status, row.error = "failed", str(exc)
    if row.lat_p50_ms is not None and row.rtt_measured_ms is not None:
        row.lat_added_ms = row.lat_p50_ms - row.rtt_measured_ms
    write_meta(run_dir, row, meta)
    return row


def _report(index: int, total: int, scenario: Scenario, adapter: ToolAdapter, runtime: str, eta_s: float) -> None:
    eta = time.strftime("%H:%M:%S", time.gmtime(eta_s))
    console.print(f"[bold]run {index}/{total}[/] {scenario.id} · {adapter.name} · {runtime} "
                  f"({scenario.duration_s} s) · ETA {eta}")


def _summarise(row: RunRow) -> None:
    if row.status == "ok":
        console.print(f"   ok: {row.rps:,.0f} rps, p50 {row.lat_p50_ms} ms (RTT {row.rtt_measured_ms:.2f} ms, "
                      f"{row.shaper}), server counted {row.server_requests:,} of {row.requests:,}, "
                      f"mem {row.mem_avg_mb or 0:.1f} MiB")
    else:
        console.print(f"   [red]{row.status}[/]: {row.error}")


def _choose_shaper(plan: Plan) -> ShaperChoice:
    needs = any(s.needs_shaping for s in plan.scenarios)
    netem_ok, netem_error = netem_available() if needs else (False, "")
    choice = choose_shaper(plan.shaper, needs, netem_ok, netem_error)
    if needs:
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})")
    return choice


def run_suite(plan: Plan) -> tuple[ResultsFolder, list[RunRow]]:
    lock = _single_instance()
    previous = signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        runtime = make_runtime(plan.runtime, plan.results_root)
        runtime.prepare(plan.tools)
        shaper = _choose_shaper(plan)
        plan.results_root.mkdir(parents=True, exist_ok=True)
        folder = ResultsFolder.create(plan.results_root, plan.runtime)
        console.print(f"results: {folder.path}")
        folder.write_json("environment.json", environment.collect(
            {"runtime": plan.runtime, "shaper": shaper.kind, "shaper_reason": shaper.reason, **runtime.describe()}))
        rows = []
        runs = plan.runs
        overhead_s, started = SETUP_ESTIMATE_S, time.monotonic()
        with runtime:
            for index, (scenario, adapter) in enumerate(runs, start=1):
                remaining = sum(s.duration_s + overhead_s for s, _ in runs[index - 1:])
                _report(index, len(runs), scenario, adapter, plan.runtime, remaining)
                row = run_one(runtime, adapter, scenario, folder, shaper.kind)
                folder.append(row)
                rows.append(row)
                _summarise(row)
                overhead_s = max(0.0, (time.monotonic() - started - sum(s.duration_s for s, _ in runs[:index])) / index)
        return folder, rows
    finally:
        signal.signal(signal.SIGTERM, previous)
        lock.close()
