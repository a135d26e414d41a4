"""Running one tool process: start it, sample it, stop it at its deadline."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from harness.cleanup import signals_deferred
from harness.runtimes.base import Session
from harness.sampling import CpuFrame, PidSource, Sample

STDOUT, STDERR, SAMPLES = "stdout.txt", "stderr.txt", "samples.csv"
FIRST_FRAME_TIMEOUT_S = 15.0


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


def signal_pids(pids: set[int], sig: int) -> None:
    """Send ``sig`` to every pid; a process already gone is skipped."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop_tool(proc: subprocess.Popen, pids: set[int]) -> None:
    """SIGTERM the tool's processes, then SIGKILL whatever is left after 5 s."""
    signal_pids(pids, signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    signal_pids(pids, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


def execute(session: Session, argv: list[str], run_dir: Path, timeout_s: float,
            sampled_process: str | None = None, others: dict[str, PidSource] | None = None) -> Execution:
    """Run the tool; memory and CPU count ``sampled_process`` only when given (a wrapped tool);
    ``others`` (the target) are sampled from the same top frames."""
    # top on the target's machine streams before the tool starts: its ssh handshake and first frame
    # (whose CPU figure is dropped) must not compete with the load nor fall inside its window.
    remote_target = session.target_sampler()
    with remote_target or nullcontext():
        if remote_target is not None:
            remote_target.wait_first_frame(FIRST_FRAME_TIMEOUT_S)
        started, launched_at = time.monotonic(), time.time()
        timed_out = False
        with (run_dir / STDOUT).open("w") as out, (run_dir / STDERR).open("w") as err:
            proc = session.popen(argv, out, err, run_dir)
            if remote_target is not None:
                remote_target.restart_clock()
            tool_pids = session.pids(proc)
            try:
                with session.sampler(session.sampled_pids(proc, sampled_process), others or {}, session.memory_check) \
                        as sampler:
                    try:
                        proc.wait(timeout=timeout_s)
                    except subprocess.TimeoutExpired:
                        timed_out = True
                        session.stop(proc, tool_pids())
            except BaseException:        # Ctrl-C / SIGTERM, or a sampler that failed: never leave the tool running
                with signals_deferred():
                    session.stop(proc, tool_pids())
                raise
    session.finish(proc)    # before the output is read: a remote tool's files come back here
    sampler.write_csv(run_dir / SAMPLES)
    for name in others or {}:
        sampler.write_csv(run_dir / f"samples-{name}.csv", name)
    groups = {name: sampler.groups[name] for name in others or {}}
    if remote_target is not None:
        remote_target.write_csv(run_dir / "samples-nginx.csv")
        groups["nginx"] = remote_target.samples
    return Execution(
        exit_code=proc.returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - started,
        launched_at=launched_at,
        samples=sampler.samples,
        stdout=(run_dir / STDOUT).read_text(errors="replace"),
        stderr=(run_dir / STDERR).read_text(errors="replace"),
        others=groups,
        affinity=sampler.affinity,
        cpu_busy=sampler.cpu_busy,
        target_cpu_busy=remote_target.cpu_busy if remote_target is not None else None,
    )
