"""The machine's locks: one benchmark at a time (``suite``), and one writer per results folder (``folder``).

The suite lock lives in a folder only its owner may write in (/run/lth for root), never in /tmp: there
anyone may plant a symlink at the lock's path, and the harness, as root, would write through it. The
folder is made 0700 and refused unless it is ours and no one else may write in it; the file is opened
with O_NOFOLLOW and refused unless it is our regular file. LTH_LOCK_DIR moves it (tests: a temporary
folder, never the machine's). LTH_LOCK_WAIT_S=n waits up to n s for the holder to end.

A results folder is locked by flock on the folder itself (no file is made): the suite writing it holds
it, and so do ``rederive`` and the report, which refuse while another holds it.
"""
from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import stat
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import psutil

from harness import PREFIX
from harness.errors import HarnessError

DIR_ENV = "LTH_LOCK_DIR"
WAIT_ENV = "LTH_LOCK_WAIT_S"
ROOT_DIR = Path(f"/run/{PREFIX}")     # root's: /run is root's own tmpfs (in the netem VM too)
SUITE = f"{PREFIX}.lock"              # one benchmark (run, capacity, clean-state) at a time
TESTHOST = f"{PREFIX}-testhost.lock"  # one block of test hosts (harness/lab.py) at a time


def lock_dir() -> Path:
    """LTH_LOCK_DIR, else /run/lth for root, else a folder of this user's own (XDG_RUNTIME_DIR, or /tmp)."""
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    if os.geteuid() == 0:
        return ROOT_DIR
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime_dir) / PREFIX if runtime_dir else Path(f"/tmp/{PREFIX}-{os.geteuid()}")


def lock_path(name: str = SUITE) -> Path:
    return lock_dir() / name


def _not_ours(path: Path, info: os.stat_result, kind: str) -> str | None:
    """Why ``path`` is not a lock ``kind`` (dir or file) of ours (None: it is)."""
    if kind == "dir" and not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    if kind == "file" and not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_uid != os.geteuid():
        return f"owned by uid {info.st_uid}, not {os.geteuid()}"
    if kind == "dir" and info.st_mode & 0o022:
        return f"others may write in it (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _open_dir() -> int:
    """The lock folder, made 0700 if missing, opened without following a symlink, checked as ours."""
    path = lock_dir()
    try:
        os.mkdir(path, 0o700)          # mkdir never follows a symlink at its last component: EEXIST
    except FileExistsError:
        pass
    except OSError as exc:
        raise HarnessError(f"cannot make the lock folder {path}: {exc.strerror}; make it (owned by you, 0700) "
                           f"or set {DIR_ENV} to such a folder") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise HarnessError(f"lock folder {path} is not ours ({_open_failure(exc)}): remove it and rerun "
                           f"(it is made afresh, 0700)") from None
    why = _not_ours(path, os.fstat(fd), "dir")
    if why:
        os.close(fd)
        raise HarnessError(f"lock folder {path} is not ours ({why}): remove it and rerun (it is made afresh, 0700)")
    return fd


def _open_failure(exc: OSError) -> str:
    return "a symlink" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror or str(exc)


def _open_file(name: str) -> int:
    """The lock file ``name`` in the lock folder, made 0600 if missing, never through a symlink."""
    dir_fd = _open_dir()
    path = lock_path(name)
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    except OSError as exc:
        raise HarnessError(f"lock file {path} is not ours ({_open_failure(exc)}): remove it and rerun") from None
    finally:
        os.close(dir_fd)
    why = _not_ours(path, os.fstat(fd), "file")
    if why:
        os.close(fd)
        raise HarnessError(f"lock file {path} is not ours ({why}): remove it and rerun")
    return fd


def wait_s() -> float:
    """LTH_LOCK_WAIT_S: how long to wait for a held lock (0, the default: not at all)."""
    text = os.environ.get(WAIT_ENV, "0")
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise HarnessError(f"{WAIT_ENV}={text}: must be a number of seconds >= 0 (how long to wait for another "
                           f"benchmark to end; 0: not at all), e.g. {WAIT_ENV}=600")
    return value


class Held:
    """A lock this process holds until close()."""

    def __init__(self, fd: int):
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Held":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def acquire(name: str = SUITE, what: str = "another benchmark is running on this machine", wait: bool = True) -> Held:
    """The lock ``name``, waiting up to LTH_LOCK_WAIT_S (``wait``; saying once who holds it); refused in one
    line naming the holder when it stays held. The holder's pid, command and start go into the file, for the
    next one to name."""
    patience_s = wait_s() if wait else 0.0
    fd = _open_file(name)
    deadline = time.monotonic() + patience_s
    said = False
    while not _try_flock(fd):
        if time.monotonic() >= deadline:
            os.close(fd)
            raise HarnessError(f"{what} ({holder(name)}): one at a time; wait for it to end or stop it, then rerun")
        if not said:
            sys.stderr.write(f"waiting up to {patience_s:g} s ({WAIT_ENV}) for the lock: {what} ({holder(name)})\n")
            sys.stderr.flush()
            said = True
        time.sleep(1)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": " ".join(psutil.Process().cmdline())[:200],
                              "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}).encode(), 0)
    return Held(fd)


def _holder_record(name: str) -> dict | None:
    """What the holder of the lock ``name`` wrote into it (None: nothing readable)."""
    try:
        fd = os.open(lock_path(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        held = json.loads(os.read(fd, 4096))
        return held if isinstance(held, dict) else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def holder(name: str = SUITE) -> str:
    """Who holds the lock ``name``, as its holder wrote it."""
    held = _holder_record(name) or {}
    try:
        return f"pid {held['pid']}, `{held['command']}`, since {held['since']}"
    except KeyError:
        return f"{lock_path(name)} is held"


def record_folder(held: Held, folder: Path) -> None:
    """Name the results folder the holder writes (after it made it), for a refused rederive or report."""
    data = json.loads(os.pread(held.fd, 4096, 0))
    os.ftruncate(held.fd, 0)
    os.pwrite(held.fd, json.dumps({**data, "folder": str(folder)}).encode(), 0)


def _suite_writing(folder: Path) -> str | None:
    """The suite holding the machine's lock, if the folder it writes is ``folder``."""
    held = _holder_record(SUITE) or {}
    return holder(SUITE) if held.get("folder") == str(folder) else None


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """The results folder ``folder`` as its one writer (a suite, rederive, the report); refused in one line
    while another holds it."""
    path = folder.resolve()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not _try_flock(fd):
            who = _suite_writing(path) or "a rederive or a report of it"
            raise HarnessError(f"{path} is being written by another harness ({who}): wait for it to end, then rerun")
        yield
    finally:
        os.close(fd)
