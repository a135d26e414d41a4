"""scripts/deps.sh's background compiles (the tools of install kinds go and cargo): it holds COMPILE_LOCK (flock)
while they run, writes their output to COMPILE_LOG and ends it with a line saying "done" or "failed"
(`scripts/wait-compiles.sh` waits for that line). A run that needs a tool still being compiled waits here:
the Docker runtime's image build (it copies the compiled binary, harness/runtimes/docker.py) and the host
runtime's check that the tools are installed (harness/runtimes/host.py)."""
from __future__ import annotations

import fcntl
from pathlib import Path

COMPILE_LOCK = Path("/var/lock/lth-compile.lock")
COMPILE_LOG = Path("/var/log/lth-deps-compile.log")


def wait_for_compiles(waiter: str, lock: Path | None = None) -> bool:
    """Until deps.sh's background compiles have ended: at once and silently when none runs (False), else after
    one line saying that ``waiter`` waits (True)."""
    lock = lock or COMPILE_LOCK
    try:
        handle = lock.open("a")
    except OSError:          # no /var/lock to write (not root): deps.sh cannot have taken it either
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            print(f"{waiter} waits for the compile scripts/deps.sh runs in the background (log: {COMPILE_LOG}; "
                  "it ends with a line saying done or failed)", flush=True)
            fcntl.flock(handle, fcntl.LOCK_SH)
            return True


def last_compile_failed() -> str | None:
    """The log's closing line when the last background compile failed."""
    try:
        lines = COMPILE_LOG.read_text(errors="replace").splitlines()
    except OSError:
        return None
    return lines[-1] if lines and lines[-1].startswith("deps: compile") and "failed" in lines[-1] else None
