"""The stall test (issue 13): freeze the target for ``stall_ms`` at ``stall_at_s``.

How the target is frozen: SIGSTOP to every Nginx process (master and workers), SIGCONT after
``stall_ms``. Host runtime: the nginx processes in netns lth-target; Docker: every process of the
target container. Signals rather than a Toxiproxy timeout toxic because they work at every RTT
(Toxiproxy only runs in shaped scenarios), they stop the server itself as a GC pause or a frozen VM
would (the kernel keeps completing handshakes and queueing requests in socket buffers: nothing is
refused, everything waits), and they leave the RTT path untouched. The SIGCONT is sent whatever
happens: the tool crashing, Ctrl-C, SIGTERM.

The expected latencies: harness/row/stall.py; the record of the stall: harness/store/stall.py.
"""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from harness.processes import signal_pids, signals_deferred
from harness.runtimes.base import RemoteFreeze
from harness.store.stall import StallRecord

METHOD = ("SIGSTOP/SIGCONT of every Nginx process (host: nginx in netns lth-target; docker: the target container; "
          "--target-host: over ssh, both signals sent there by one script, the stall timed on that host's clock)")


class _Injector(threading.Thread):
    def __init__(self, record: StallRecord, target_pids: Callable[[], set[int]], remote: RemoteFreeze | None = None):
        super().__init__(name="lth-stall", daemon=True)
        self.record, self.target_pids, self.remote = record, target_pids, remote
        self.cancel = threading.Event()
        self.lock = threading.Lock()          # SIGSTOP and the final SIGCONT never interleave
        self.finished = False

    def run(self) -> None:
        if self.cancel.wait(self.record.at_s - (time.time() - self.record.origin)):
            return
        if self.remote is not None:
            self._run_remote()
            return
        with self.lock:
            if self.finished:
                return
            self.record.pids = self.target_pids()
            self.record.stopped_at = time.time()
            signal_pids(self.record.pids, signal.SIGSTOP)
        self.cancel.wait(self.record.ms / 1000)
        self.resume()

    def _run_remote(self) -> None:
        """Stopped, held and resumed on the target's machine: the start is when the call was made here
        (an ssh round trip early at most), the length as timed there."""
        stopped_at = time.time()
        with self.lock:
            if self.finished:
                return
            self.record.stopped_at = stopped_at
        pids, actual_ms = self.remote(self.record.ms)
        with self.lock:
            self.record.pids, self.record.resumed_at = pids, stopped_at + actual_ms / 1000

    def resume(self) -> None:
        with self.lock:
            self.finished = True
            if self.record.stopped_at is not None and self.record.resumed_at is None and self.remote is None:
                signal_pids(self.record.pids, signal.SIGCONT)
                self.record.resumed_at = time.time()


@contextmanager
def injected(target_pids: Callable[[], set[int]], stall_at_s: float | None,
             stall_ms: int | None, remote: RemoteFreeze | None = None) -> Iterator[StallRecord | None]:
    """Freeze the target ``stall_at_s`` after entering the block (the tool is launched right after),
    for ``stall_ms``; yields None when the scenario has no stall. ``remote``: the target is on
    another machine, frozen there."""
    if stall_ms is None or stall_at_s is None:
        yield None
        return
    record = StallRecord(stall_at_s, stall_ms, origin=time.time())
    injector = _Injector(record, target_pids, remote)
    injector.start()
    try:
        yield record
    finally:
        with signals_deferred():
            injector.cancel.set()
            injector.resume()
            injector.join(timeout=5)
