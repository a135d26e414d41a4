"""One run's load spread over N generators, whatever carries them (issue 52.4): ssh generator hosts
(generator.py, remote.py), Swarm tasks (task.py, swarm.py) and Kubernetes pods (suite/kubernetes.py,
suite/kube_results.py) share these three pieces:

- the split: ``load_shares`` gives part i its VUs and its arrival rate, each divided exactly with the
  remainder spread over the first parts (20 over 3: 7, 7, 6), as k6's execution segments do;
- the start barrier: ``StartBarrier``, where every part waits until all N are set up and ready, then all
  are released together; one part failing (or not coming within the timeout) releases none. Each carrier
  has its own way to tell a part ``go`` (the ssh launcher's stdin, the coordinator's TCP line), none needs
  the machines' clocks to agree;
- the merge: harness/row/merge.py, through harness/row's derivation of the parts' folders (the runner for
  ssh and Swarm, kube_results.gather for Kubernetes).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from harness.scenarios import Scenario
from harness.tools import openmodel
from harness.tools.adapter import ToolAdapter


def split_evenly(total: int, parts: int) -> list[int]:
    """VUs or an arrival rate, as even as whole numbers allow: 20 over 3 -> 7, 7, 6."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


@dataclass(frozen=True)
class Share:
    """One part's load: its VUs, and its arrival rate when the tool runs the scenario at a rate."""
    vus: int
    rate_rps: int | None


def load_shares(scenario: Scenario, adapter: ToolAdapter, parts: int) -> list[Share]:
    """Each part's share of the scenario's VUs and of the rate the tool runs it at (openmodel.rate_for)."""
    rate = openmodel.rate_for(scenario, adapter)
    rates = split_evenly(rate, parts) if rate else [None] * parts
    return [Share(vus, part_rate) for vus, part_rate in zip(split_evenly(scenario.vus, parts), rates)]


@dataclass
class StartBarrier:
    """N parts released together once every one is ready; ``abort`` (a part that failed) breaks it for all, and
    so does a part not arriving within ``timeout_s`` of the others (threading.BrokenBarrierError in each)."""
    parts: int
    timeout_s: float
    ready_at: list[float] = field(default_factory=list)     # when each part arrived (this machine's clock)
    _barrier: threading.Barrier = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._barrier = threading.Barrier(self.parts)

    def wait(self) -> int:
        """Blocks until all parts are ready; returns this part's place in the arrivals (0: the first)."""
        self.ready_at.append(time.time())
        return self._barrier.wait(timeout=self.timeout_s)

    def abort(self) -> None:
        self._barrier.abort()

    @property
    def broken(self) -> bool:
        return self._barrier.broken
