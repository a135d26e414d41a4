"""Ending a child process: ask, wait, then SIGKILL, so a child that ignores the request never hangs
the harness (one place for the terminate / wait / kill sequence)."""
from __future__ import annotations

import signal
import subprocess


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
