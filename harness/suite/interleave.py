"""Container against bare metal, interleaved (issue 49.5): the same scenarios on the host and in Docker, one
(scenario, repeat) at a time, the two runtimes alternating which goes first, so that a drift of the machine (heat,
a neighbour, a cache) falls on both alike rather than on whichever ran second. Each runtime keeps its own results
folder (results/<UTC>-host, results/<UTC>-docker), made by its first step and resumed by the next ones, so each is
an ordinary folder that `lth report` and `lth compare A B` read."""
from __future__ import annotations

from dataclasses import dataclass

RUNTIMES = ("host", "docker")


@dataclass(frozen=True)
class Step:
    """One invocation of the suite: every tool on one scenario, this repeat, in this runtime."""
    runtime: str
    scenario: str
    repeat: int


def interleaved(scenario_ids: list[str], repeats: int, runtimes: tuple[str, ...] = RUNTIMES) -> list[Step]:
    """The order of the steps: repeat by repeat, scenario by scenario, each runtime once; the runtime going first
    alternates from one (scenario, repeat) to the next (host, docker, docker, host, ...)."""
    steps: list[Step] = []
    for repeat in range(1, repeats + 1):
        for index, scenario in enumerate(scenario_ids):
            pair = (repeat - 1) * len(scenario_ids) + index
            order = runtimes if pair % 2 == 0 else tuple(reversed(runtimes))
            steps += [Step(runtime, scenario, repeat) for runtime in order]
    return steps
