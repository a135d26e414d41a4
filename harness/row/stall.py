"""The stall test's arithmetic (issue 13): the latencies a tool that times every request from its
intended send time must report when the target is frozen for ``stall_ms`` at ``stall_at_s``, the stall as it
happened is harness/store/stall.py's record (harness/suite/stall.py freezes the target and fills it).

Expected latencies: requests are intended at t_k = k / rate (k = 0 .. rate x duration - 1). One
intended while the server is frozen, t_k in [stall_at, stall_end), waits stall_end - t_k and then
takes one RTT; every other one takes one RTT. So the stalled fraction f = stall / duration of the
requests spread uniformly over (RTT, RTT + stall], and for q > 1 - f the q-quantile is
RTT + stall x (q - (1 - f)) / f: with a 1 s stall in 20 s, p99 = RTT + 0.8 s, max = RTT + 1 s.
Computed here exactly over the discrete schedule with the harness's nearest-rank percentiles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.stats import percentiles


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
    p50, p99 = percentiles(latencies, (50, 99))
    return Expected(requests=len(latencies), stalled=int(np.count_nonzero(latencies > rtt_ms)),
                    p50_ms=float(p50), p99_ms=float(p99), max_ms=float(latencies.max()))


def expected_quantile_ms(q: float, duration_s: float, stall_ms: float, rtt_ms: float) -> float:
    """The closed form of the docstring (continuous schedule), for checking and for the report."""
    f = stall_ms / 1000 / duration_s
    return rtt_ms + (stall_ms * (q - (1 - f)) / f if q > 1 - f else 0.0)
