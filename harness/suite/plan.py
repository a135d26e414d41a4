"""What a suite is asked to run: the tools, the scenarios, where the results go, and how."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.cpus import CpuSplit, choose_split
from harness.errors import HarnessError
from harness.runtimes.swarm_options import SwarmOptions
from harness.scenarios import Scenario
from harness.tools.adapter import ToolAdapter


@dataclass(frozen=True)
class Plan:
    runtime: str
    tools: list[ToolAdapter]
    scenarios: list[Scenario]
    results_root: Path
    shaper: str = "auto"          # auto | netem | toxiproxy
    resume: Path | None = None    # an existing results folder: skip the runs it finished
    force: bool = False           # with resume: redo finished runs too
    grace_s: float | None = None  # hang detection: seconds past the duration (default max(30, 50%))
    allow_external_target: bool = False
    target_host: str | None = None  # ssh://[user@]host[:port]: Nginx on another machine (harness/runtimes/remote.py)
    generator_hosts: tuple[str, ...] = ()   # ssh:// URLs: the tools run there (harness/runtimes/generator.py)
    repeat: int = 1               # repetitions, interleaved: every tool once, then every tool again
    capture: bool = False         # record the tool's packets with tcpdump: wire_* columns
    keep_pcap: bool = False       # with capture: keep each run's pcap next to its output
    split: CpuSplit = field(default_factory=choose_split)   # target and tool CPU sets (harness/cpus.py)
    swarm: SwarmOptions | None = None   # --runtime swarm: its generator tasks (harness/runtimes/swarm.py)
    # resuming: failed rows of runs this plan does not select stay in runs.csv (lth host-vs-docker resumes a folder one
    # scenario at a time); by default every failed row goes (capacity's steps are not in its plan's runs)
    keep_unselected: bool = False

    def __post_init__(self) -> None:
        for name in ("results_root", "resume"):
            path = getattr(self, name)
            if path is not None and not path.is_absolute():   # tools in containers/on other hosts would miss it
                raise ValueError(f"Plan.{name} must be absolute (resolve it where it enters), got {path}")
        self._check_folder_for_tools()

    def _check_folder_for_tools(self) -> None:
        """Bad input, said before anything starts: a results folder one of the tools cannot write under."""
        folder, option = (self.resume, "--resume") if self.resume is not None else (self.results_root, "--results-root")
        for tool in self.tools:
            if problem := tool.folder_problem(folder):
                raise HarnessError(f"{option} {folder}: {problem}: choose a folder of letters, digits and ._-/ "
                                   f"or leave out {tool.name}")

    @property
    def runs(self) -> list[tuple[Scenario, ToolAdapter, int]]:
        return [(s, t, r) for r in range(1, self.repeat + 1) for s in self.scenarios for t in self.tools]
