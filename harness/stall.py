"""The stall test (issue 13): freeze the target for ``stall_ms`` at ``stall_at_s``, and the latencies
a tool that times every request from its intended send time must then report.

How the target is frozen: SIGSTOP to every Nginx process (master and workers), SIGCONT after
``stall_ms``. Host runtime: the nginx processes in netns lth-target; Docker: every process of the
target container. Signals rather than a Toxiproxy timeout toxic because they work at every RTT
(Toxiproxy only runs in shaped scenarios), they stop the server itself as a GC pause or a frozen VM
would (the kernel keeps completing handshakes and queueing requests in socket buffers: nothing is
refused, everything waits), and they leave the RTT path untouched. The SIGCONT is sent whatever
happens: the tool crashing, Ctrl-C, SIGTERM.

Expected latencies: requests are intended at t_k = k / rate (k = 0 .. rate x duration - 1). One
intended while the server is frozen, t_k in [stall_at, stall_end), waits stall_end - t_k and then
takes one RTT; every other one takes one RTT. So the stalled fraction f = stall / duration of the
requests spread uniformly over (RTT, RTT + stall], and for q > 1 - f the q-quantile is
RTT + stall x (q - (1 - f)) / f: with a 1 s stall in 20 s, p99 = RTT + 0.8 s, max = RTT + 1 s.
Computed here exactly over the discrete schedule with the harness's nearest-rank percentiles.
"""
from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from harness.cleanup import signals_deferred
from harness.execution import signal_pids

METHOD = ("SIGSTOP/SIGCONT of every Nginx process (host: nginx in netns lth-target; docker: the target container; "
          "--target-host: over ssh, both signals sent there by one script, the stall timed on that host's clock)")
# On another machine: stop the target there, hold it ``ms``, resume it, all in one call (the resume
# cannot be lost with the ssh session); returns the pids and the stall as timed there, ms.
RemoteFreeze = Callable[[int], tuple[set[int], float]]


@dataclass(frozen=True)
class Expected:
    requests: int            # intended requests in the run
    stalled: int             # of which intended while the server was frozen
    p50_ms: float
    p99_ms: float
    max_ms: float


def expected_latencies_ms(rate_rps: float, duration_s: float, stall_at_s: float, stall_ms: float,
                          rtt_ms: float) -> np.ndarray:
    """Every intended request's latency as measured from its intended send time (ms)."""
    intended_s = np.arange(int(round(rate_rps * duration_s))) / rate_rps
    stall_end_s = stall_at_s + stall_ms / 1000
    waiting_s = np.where((intended_s >= stall_at_s) & (intended_s < stall_end_s), stall_end_s - intended_s, 0.0)
    return waiting_s * 1000 + rtt_ms


def expected(rate_rps: float, duration_s: float, stall_at_s: float, stall_ms: float, rtt_ms: float) -> Expected:
    latencies = expected_latencies_ms(rate_rps, duration_s, stall_at_s, stall_ms, rtt_ms)
    p50, p99 = np.percentile(latencies, (50, 99), method="inverted_cdf")
    return Expected(requests=len(latencies), stalled=int(np.count_nonzero(latencies > rtt_ms)),
                    p50_ms=float(p50), p99_ms=float(p99), max_ms=float(latencies.max()))


def expected_quantile_ms(q: float, duration_s: float, stall_ms: float, rtt_ms: float) -> float:
    """The closed form of the docstring (continuous schedule), for checking and for the report."""
    f = stall_ms / 1000 / duration_s
    return rtt_ms + (stall_ms * (q - (1 - f)) / f if q > 1 - f else 0.0)


@dataclass
class StallRecord:
    at_s: float
    ms: int
    origin: float = 0.0                       # epoch s the schedule counts from (just before the launch)
    stopped_at: float | None = None           # epoch s of the SIGSTOP
    resumed_at: float | None = None           # epoch s of the SIGCONT
    pids: set[int] = field(default_factory=set)

    @property
    def actual_ms(self) -> float | None:
        if self.stopped_at is None or self.resumed_at is None:
            return None
        return (self.resumed_at - self.stopped_at) * 1000

    def describe(self) -> str:
        if self.actual_ms is None:
            return f"stall of {self.ms} ms at +{self.at_s:g} s did not happen (the tool ended first)"
        return (f"stall: SIGSTOP of {len(self.pids)} Nginx processes at +{self.stopped_at - self.origin:.3f} s "
                f"after launch, SIGCONT {self.actual_ms:.1f} ms later")


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
