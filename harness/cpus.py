"""CPU isolation: the target (Nginx, and Toxiproxy in front of it) and the load generator run on
disjoint CPU sets, so a tool's RPS no longer depends on how much CPU it leaves to Nginx.

The sets are applied as CPU affinity (what `taskset` sets) on the first process of each side;
every child and thread inherits it (JVM threads, Locust workers, Nginx workers). The Docker
runtime gives the same lists to compose as ``cpuset``. The harness never creates a cgroup for
this, so there is nothing to remove afterwards.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from harness.errors import HarnessError


# Linux's own ceiling (NR_CPUS at most 8192): a larger CPU number is a typo, refused before a range is expanded.
MAX_CPU = 8191


def parse_cpus(text: str, name: str = "CPU list") -> tuple[int, ...]:
    """A CPU list as taskset/cpuset write it: ``0``, ``0-3``, ``0,2-3``."""
    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, high = _cpu_range(part, text, name)
        cpus.update(range(low, high + 1))
    if not cpus:
        raise HarnessError(f"{name} {text!r} names no CPU: write it like 0, 0-3 or 0,2-3")
    return tuple(sorted(cpus))


def _cpu_range(part: str, text: str, name: str) -> tuple[int, int]:
    low_text, _, high_text = part.partition("-")
    try:
        low, high = int(low_text), int(high_text or low_text)
    except ValueError:
        raise HarnessError(f"{name} {text!r} is not a CPU list: write it like 0, 0-3 or 0,2-3") from None
    if high > MAX_CPU:
        raise HarnessError(f"{name} {text!r}: CPU {high} is beyond any machine's (at most {MAX_CPU}); "
                           f"name CPUs this machine has (nproc)")
    if low > high:
        raise HarnessError(f"{name} {text!r}: the range {part} runs backwards: write the lower CPU first")
    return low, high


def format_cpus(cpus: tuple[int, ...]) -> str:
    """The shortest list form: (0, 1, 2, 5) -> ``0-2,5``."""
    parts, start = [], None
    for i, cpu in enumerate(cpus):
        start = cpu if start is None else start
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(str(cpu) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)


@dataclass(frozen=True)
class CpuSplit:
    available: tuple[int, ...]
    target: tuple[int, ...] = ()      # empty: no isolation
    tool: tuple[int, ...] = ()
    reason: str = ""                  # why this split (recorded in environment.json)

    @property
    def isolated(self) -> bool:
        return bool(self.target)

    @property
    def tool_cpus(self) -> tuple[int, ...]:
        """Where the tool may run: its set, or every available CPU without isolation."""
        return self.tool or self.available

    @property
    def target_cpus(self) -> tuple[int, ...]:
        return self.target or self.available

    def taskset(self, side: str) -> list[str]:
        """A command prefix pinning a program to ``side``'s set (empty without isolation)."""
        cpus = self.target if side == "target" else self.tool
        return ["taskset", "-c", format_cpus(cpus)] if cpus else []

    def pin(self, side: str) -> None:
        """Pin the calling process (a Popen preexec_fn); its children inherit the set."""
        cpus = self.target if side == "target" else self.tool
        if cpus:
            os.sched_setaffinity(0, cpus)

    def stack_cpus(self, proxy: bool) -> dict[str, tuple[int, ...]]:
        """The target's set shared out to a stack: a proxy gets the first half and the file server the
        rest when the target has 2 CPUs or more; otherwise both share it (and the row says so)."""
        cpus = self.target_cpus
        if not proxy:
            return {"upstream": cpus}
        if len(cpus) < 2:
            return {"proxy": cpus, "upstream": cpus}
        half = len(cpus) // 2
        return {"proxy": cpus[:half], "upstream": cpus[half:]}

    def describe(self) -> dict:
        return {"cpu_isolation": self.isolated, "cpus_available": format_cpus(self.available),
                "cpus_target": format_cpus(self.target), "cpus_tool": format_cpus(self.tool),
                "cpu_split_reason": self.reason}


NO_SPLIT = CpuSplit(available=tuple(sorted(os.sched_getaffinity(0))), reason="not chosen yet")


def choose_split(isolation: bool = True, target: str | None = None, tool: str | None = None,
                 available: tuple[int, ...] | None = None) -> CpuSplit:
    """Default: the target gets the first half of the CPUs this process may use, the tool the rest.
    ``target``/``tool`` override either side (the other side gets the remaining CPUs)."""
    available = available or tuple(sorted(os.sched_getaffinity(0)))
    if not isolation:
        if target or tool:
            raise HarnessError("--cpus-target/--cpus-tool split the CPUs: they cannot go with --no-isolation")
        return CpuSplit(available, reason="isolation turned off: target and tool share every CPU")
    if len(available) < 2 and not (target or tool):
        return CpuSplit(available, reason=f"only {len(available)} CPU available: no isolation possible")
    target_set = parse_cpus(target, "--cpus-target") if target else None
    tool_set = parse_cpus(tool, "--cpus-tool") if tool else None
    for name, cpus in (("--cpus-target", target_set), ("--cpus-tool", tool_set)):
        outside = set(cpus or ()) - set(available)
        if outside:
            raise HarnessError(f"{name}: CPU {format_cpus(tuple(sorted(outside)))} is not available to the harness "
                               f"(available: {format_cpus(available)})")
    if target_set is None and tool_set is None:
        half = len(available) // 2
        target_set, tool_set = available[:half], available[half:]
        reason = "default: the target gets the first half of the CPUs, the tool the rest"
    else:
        target_set = target_set or tuple(c for c in available if c not in tool_set)
        tool_set = tool_set or tuple(c for c in available if c not in target_set)
        reason = "set with --cpus-target/--cpus-tool"
    if not target_set or not tool_set:
        raise HarnessError(f"the CPU split leaves one side without a CPU (target {format_cpus(target_set)}, "
                           f"tool {format_cpus(tool_set)}): name CPUs for both")
    if set(target_set) & set(tool_set):
        raise HarnessError(f"--cpus-target {format_cpus(target_set)} and --cpus-tool {format_cpus(tool_set)} overlap: "
                           "the sets must be disjoint (or use --no-isolation)")
    return CpuSplit(available, target_set, tool_set, reason)


@contextmanager
def observer_on(cpus: tuple[int, ...]) -> Iterator[None]:
    """The calling thread held to ``cpus`` for the block, and with it what it starts meanwhile (top, the thread
    reading top, the docker or ssh client): during a load the harness's observation runs on the tool's CPUs, as
    top ran on the study's load generator, never on the target's (issue 53). Empty ``cpus``: anywhere."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, cpus)
        held = True
    except OSError:        # CPUs this process may not use (a cpuset of its own): observe from where it is
        held = False
    try:
        yield
    finally:
        if held:
            os.sched_setaffinity(0, before)
