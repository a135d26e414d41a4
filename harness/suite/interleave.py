"""Container against bare metal, interleaved (issue 49.5): the same runs on the host and in Docker, one (scenario,
tool, repeat) at a time, the two runtimes alternating which goes first, so that a drift of the machine (heat, a
neighbour, a cache) falls on both alike rather than on whichever ran second: a tool's host run and its Docker run
are one run apart, not a whole scenario of every tool. Each runtime keeps its own results folder
(results/<UTC>-host, results/<UTC>-docker), made by its first step and resumed by the next ones, so each is an
ordinary folder that `lth report` and `lth compare A B` read."""
from __future__ import annotations

from dataclasses import dataclass

RUNTIMES = ("host", "docker")


@dataclass(frozen=True)
class Step:
    """One invocation of the suite: one tool on one scenario, this repeat, in this runtime."""
    runtime: str
    scenario: str
    tool: str
    repeat: int


def interleaved(scenario_ids: list[str], tool_ids: list[str], repeats: int,
                runtimes: tuple[str, ...] = RUNTIMES) -> list[Step]:
    """The order of the steps: repeat by repeat, scenario by scenario, tool by tool, each runtime once; the runtime
    going first alternates from one (scenario, tool, repeat) to the next (host, docker, docker, host, ...)."""
    steps: list[Step] = []
    runs = [(repeat, scenario, tool) for repeat in range(1, repeats + 1) for scenario in scenario_ids
            for tool in tool_ids]
    for index, (repeat, scenario, tool) in enumerate(runs):
        order = runtimes if index % 2 == 0 else tuple(reversed(runtimes))
        steps += [Step(runtime, scenario, tool, repeat) for runtime in order]
    return steps
