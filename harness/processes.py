"""Process control, in one place: running a short helper command, signalling and ending a child
(ask, wait, then SIGKILL, so a child that ignores the request never hangs the harness), and
cleanup blocks that a second Ctrl-C cannot cut short.

What the harness leaves behind when it is killed is swept by harness/suite/cleanup.py (clean-state)."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
from contextlib import contextmanager
from typing import Iterator


def run(argv: list[str], check: bool = True, timeout: float | None = 120, **kwargs) -> subprocess.CompletedProcess:
    """Run a short helper command, capturing its output as text."""
    return subprocess.run(argv, check=check, timeout=timeout, capture_output=True, text=True, **kwargs)


def end_process(proc: subprocess.Popen, signum: int | None = signal.SIGTERM, grace_s: float = 10.0) -> None:
    """Send ``signum`` (None: it was asked to end another way, e.g. over ssh) unless it has ended,
    wait up to ``grace_s``, then SIGKILL it and reap it."""
    if signum is not None and proc.poll() is None:
        proc.send_signal(signum)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace_s)


def ended_within(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Whether ``proc`` ended (and is reaped) within ``timeout_s``, asleep in the kernel until then (a pidfd).
    Popen.wait(timeout) polls, waking up to 20 times a second, and during a load the waiting thread runs on the
    tool's CPUs (cpus.observer_on): a process waking every 50 ms there cost wrk 1.2% [0.2%, 2.2%] of its rate here
    (CHANGELOG.md, 2026-11-29, issue 53). A stand-in without a pid here (a task's) is waited for its own way."""
    try:
        pidfd = os.pidfd_open(proc.pid) if proc.pid > 0 else None
    except ProcessLookupError:     # ended and reaped already
        return proc.poll() is not None
    except OSError:                # no pidfd (a kernel before 5.3)
        pidfd = None
    if pidfd is None:
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ended, _, _ = select.select([pidfd], [], [], max(0.0, timeout_s))
    finally:
        os.close(pidfd)
    if ended:
        proc.wait()
    return bool(ended)


def cpu_ns(pid: int | str = "self") -> int | None:
    """The CPU time every thread of process ``pid`` has run, in ns (each thread's /proc schedstat: finer than the
    10 ms ticks top and /proc/<pid>/stat count in); None: the process is gone. A thread that ended is not counted."""
    total, found = 0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
            found = True
        except (OSError, ValueError, IndexError):
            continue
    return total if found else None


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
    # Frozen first, then killed: a parent killed after its child could fork again in between (a shell's `wait`
    # returns when the child dies), and that new process, orphaned, would be in no list (CI saw a `sleep` left).
    signal_pids(pids, signal.SIGSTOP)
    signal_pids(pids, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)


INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def interrupts_raised() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the block, so its cleanup runs however it is stopped: SIGTERM
    would end the process at once, and SIGINT is ignored where it was inherited ignored (a command started in the
    background by a shell without job control, or by a supervisor, then sent `kill -INT`)."""
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in INTERRUPTS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Run a cleanup block to its end even if Ctrl-C (or SIGTERM) arrives again meanwhile;
    the interrupt is raised once the block is done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: received.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if received:
            raise KeyboardInterrupt
