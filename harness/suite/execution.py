"""Running a tool process (or one per generator, started together): start it, sample it, stop it at
its deadline, and store what happened (execution.json) beside its output.

The deadline (duration + grace) detects a hung tool. Some tools work after their load, for as long as the
requests they sent take to process (vegeta decodes every result twice, for its report and its per-request
log: ~17 s per million here; Gatling writes its report): a 300 s run at 100k rps must not be killed for
that. So a tool past its deadline that is still working, its processes busy (top's %CPU) or its run
folder growing, is waited for, a few seconds at a time, up to ``overtime_s`` more; a tool doing neither
is hung and stopped at once."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from pathlib import Path

from harness.cpus import format_cpus, observer_on
from harness.processes import ended_within, signals_deferred
from harness.runtimes.base import Session
from harness.sampling import PidSource, TopSampler
from harness.store.hdr import write_histogram
from harness.store.record import SAMPLES, STDERR, STDOUT, Execution, Observer, save_execution
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec, ToolOutput

FIRST_FRAME_TIMEOUT_S = 15.0
OVERTIME_CHECK_S = 5.0    # a tool past its deadline is looked at this often
WORKING_CPU_PCT = 10.0    # its processes' average %CPU over the last look, at least, to count as working


def execute(session: Session, argv: list[str], run_dir: Path, timeout_s: float,
            sampled_process: str | None = None, others: dict[str, PidSource] | None = None,
            overtime_s: float = 0.0) -> Execution:
    """Run the tool; memory and CPU count ``sampled_process`` only when given (a wrapped tool);
    ``others`` (the target) are sampled from the same top frames; past ``timeout_s``, a tool still
    working may go on for ``overtime_s``."""
    # top on the target's machine streams before the tool starts: its ssh handshake and first frame
    # (whose CPU figure is dropped) must not compete with the load nor fall inside its window.
    remote_target = session.target_sampler()
    with observer_on(session.split.tool), remote_target or nullcontext():
        harness_ns = time.process_time_ns()   # every thread's, ended ones too
        if remote_target is not None:
            remote_target.wait_first_frame(FIRST_FRAME_TIMEOUT_S)
        started, launched_at = time.monotonic(), time.time()
        timed_out, overtime = False, 0.0
        with (run_dir / STDOUT).open("w") as out, (run_dir / STDERR).open("w") as err:
            proc = session.popen(argv, out, err, run_dir)
            if remote_target is not None:
                remote_target.restart_clock()
            tool_pids = session.pids(proc)
            try:
                with session.sampler(session.sampled_pids(proc, sampled_process), others or {}, session.memory_check) \
                        as sampler:
                    timed_out, overtime = wait_while_working(proc, timeout_s, overtime_s, sampler, run_dir)
                    if timed_out:
                        session.stop(proc, tool_pids())
            except BaseException:        # Ctrl-C / SIGTERM, or a sampler that failed: never leave the tool running
                with signals_deferred():
                    _stop_keeping_the_cause(session, proc, tool_pids)
                raise
        observer = Observer(sampler.top_cpus or format_cpus(session.split.tool), _seconds(sampler.top_cpu_ns),
                            (time.process_time_ns() - harness_ns) / 1e9, time.monotonic() - started)
    session.finish(proc)    # before the output is read: a remote tool's files come back here
    sampler.write_csv(run_dir / SAMPLES)
    for name in others or {}:
        sampler.write_csv(run_dir / f"samples-{name}.csv", name)
    groups = {name: sampler.groups[name] for name in others or {}}
    if remote_target is not None:
        remote_target.write_csv(run_dir / "samples-nginx.csv")
        groups["nginx"] = remote_target.samples
    execution = Execution(
        exit_code=proc.returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - started,
        overtime_s=round(overtime, 1),
        launched_at=launched_at,
        samples=sampler.samples,
        stdout=(run_dir / STDOUT).read_text(errors="replace"),
        stderr=(run_dir / STDERR).read_text(errors="replace"),
        others=groups,
        affinity=sampler.affinity,
        cpu_busy=sampler.cpu_busy,
        target_cpu_busy=remote_target.cpu_busy if remote_target is not None else None,
        observer=observer,
    )
    save_execution(execution, run_dir)
    return execution


def _seconds(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e9


def wait_while_working(proc: subprocess.Popen, timeout_s: float, overtime_s: float, sampler: TopSampler,
                       run_dir: Path) -> tuple[bool, float]:
    """Wait for the tool to its deadline, then on while it works (see the module): (timed out, seconds it
    was waited for past the deadline, working)."""
    started = time.monotonic()
    deadline, limit = started + timeout_s, started + timeout_s + overtime_s
    look = max(started, deadline - OVERTIME_CHECK_S)   # the folder's size a look before the deadline
    if ended_within(proc, look - started):
        return False, 0.0
    size, look = folder_bytes(run_dir), deadline
    while True:
        if ended_within(proc, look - time.monotonic()):
            return False, max(0.0, time.monotonic() - deadline)
        now = folder_bytes(run_dir)
        working = now > size or (sampler.cpu_since(OVERTIME_CHECK_S) or 0.0) >= WORKING_CPU_PCT
        if not working or time.monotonic() >= limit:
            return True, max(0.0, look - deadline)
        size, look = now, min(time.monotonic() + OVERTIME_CHECK_S, limit)


def folder_bytes(folder: Path) -> int:
    """The bytes the files under ``folder`` hold now (a tool's output as it writes it)."""
    total = 0
    for path in folder.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:     # removed while listed (vegeta's results file)
            continue
    return total


def _stop_keeping_the_cause(session: Session, proc: subprocess.Popen, tool_pids: PidSource) -> None:
    """Stop the tool on the way out of an interrupt or a failure; a stop that fails too (e.g. an ssh
    stop script left unanswered) is printed, and the first cause (Ctrl-C: exit 130) goes on. The
    runtime's own cleanup, on leaving the suite, removes what is still there."""
    try:
        session.stop(proc, tool_pids())
    except Exception as exc:  # noqa: BLE001 - must not replace the exception being handled
        print(f"warning: stopping the tool failed ({exc}); the runtime's cleanup removes it", file=sys.stderr)


def execute_together(runs: list[tuple[Session, list[str], Path]], timeout_s: float,
                     sampled_process: str | None, overtime_s: float = 0.0) -> list[Execution | BaseException]:
    """Every (session, argv, folder) at once, one thread each; a part that fails to run gives its exception."""
    results: list[Execution | BaseException] = [RuntimeError("did not run")] * len(runs)

    def one(index: int, session: Session, argv: list[str], folder: Path) -> None:
        try:
            results[index] = execute(session, argv, folder, timeout_s, sampled_process, overtime_s=overtime_s)
        except BaseException as exc:  # noqa: BLE001 - reported as that part's failure
            results[index] = exc

    threads = [threading.Thread(target=one, args=(i, *run), daemon=True) for i, run in enumerate(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def store_latency_log(adapter: ToolAdapter, spec: RunSpec, execution: Execution) -> dict | None:
    """A part's latencies as an HdrHistogram log beside its output (latency.hlog: for the merge of several
    generators, and for whoever reads HdrHistogram logs), where its tool gives a histogram or per-request log
    without being asked for more than its run (oha's per-request database: several generators only). For a part
    that ended ok: the runner's parts and the Kubernetes route's gathered ones alike."""
    try:
        histogram = adapter.latency_histogram(ToolOutput(spec, execution.stdout, execution.stderr,
                                                         execution.exit_code or 0, execution.launched_at))
    except Exception as exc:  # noqa: BLE001 - without it the merge keeps counts only
        return {"error": f"{type(exc).__name__}: {exc}"}
    if histogram is None:
        return None
    return write_histogram(histogram, spec.out_dir, adapter.timing_resolution_ms, execution.launched_at,
                           spec.duration_s)
