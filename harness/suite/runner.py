"""The suite: every (scenario, tool) pair, one after the other, each becoming one row.

A run that fails becomes a row with status failed/timeout and the reason; the suite goes on.
``opened`` holds what a suite needs around its runs (pre-flight, the lock, the runtime, the results
folder) and ``Bench.run`` runs one pair in it (harness/suite/run.py): run_suite and the capacity search
(harness/capacity/run.py) share both. What the suite prints: harness/suite/console.py.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from harness import environment
from harness.errors import HarnessError
from harness.network.capture import MISSING, Capture, tcpdump_missing
from harness.network.shaping import ShaperChoice, choose_shaper, netem_available
from harness.processes import interrupts_raised
from harness.runtimes import Runtime, make_runtime
from harness.scenarios import Scenario
from harness.store.results import ResultsFolder, RunRow, read_meta_row
from harness.store.declarations import write_declarations
from harness.store.stored import Derived
from harness.suite import preflight
from harness.suite.console import Eta, announce, console, overhead, summarise
from harness.store.lock import Held, acquire, folder_lock, record_folder
from harness.suite.plan import Plan
from harness.suite.resume import RunKey, open_folder
from harness.suite.run import Run, RunSettings
from harness.targets import Setup
from harness.tools import capabilities
from harness.tools.adapter import ToolAdapter

def _choose_shaper(plan: Plan, runtime: Runtime) -> ShaperChoice:
    needs = any(s.needs_shaping and runtime.unsupported_reason(s) is None for s in plan.scenarios)
    if needs and runtime.netem_refused:
        if plan.shaper == "netem":
            raise HarnessError(f"--shaper netem: {runtime.netem_refused}")
        choice = ShaperChoice("toxiproxy", runtime.netem_refused if plan.shaper == "auto" else "requested")
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})", markup=False)
        return choice
    netem_ok, netem_error = netem_available() if needs else (False, "")
    choice = choose_shaper(plan.shaper, needs, netem_ok, netem_error)
    if needs:
        console.print(f"RTT shaping: {choice.kind} ({choice.reason})", markup=False)
    return choice


@dataclass
class Bench:
    """An open suite: the runtime entered, the lock held, the results folder open. ``run`` is one
    (scenario, tool) pair as the suite runs it: a row whatever happens, appended to runs.csv."""
    plan: Plan
    runtime: Runtime
    folder: ResultsFolder
    finished: set[RunKey]                 # resuming: the (scenario, tool, repeat) runs kept from before
    broken: dict[str, str]                # tools the runtime could not prepare, with why
    shaper: ShaperChoice
    no_tcpdump: bool

    def _shaper_reason(self, scenario: Scenario) -> str | None:
        """Why the chosen shaper cannot make this scenario's RTT (None: it can, or none is needed)."""
        if scenario.protocol == "h3" and scenario.needs_shaping and self.shaper.kind == "toxiproxy":
            return ("HTTP/3 is QUIC over UDP, and Toxiproxy shapes TCP only: an h3 run at an RTT needs netem "
                    "(a kernel with sch_netem, or make test-netem's VM)")
        return None

    def cannot_run(self, adapter: ToolAdapter) -> str | None:
        """Why the tool cannot run here at all (None: it can)."""
        return adapter.unavailable or self.broken.get(adapter.name)

    def run(self, scenario: Scenario, adapter: ToolAdapter, repeat: int = 1) -> RunRow:
        return self.derived(scenario, adapter, repeat).row

    def derived(self, scenario: Scenario, adapter: ToolAdapter, repeat: int = 1) -> Derived:
        """The run's row and meta.json, as written."""
        settings = RunSettings(self.runtime, self.folder, self.shaper.kind, self.plan.grace_s,
                               self.plan.allow_external_target)
        why_not = self._why_not(scenario, adapter)
        if why_not is not None:
            derived = Run.new(settings.unshaped(), scenario, adapter, repeat).unrunnable(*why_not)
        else:
            derived = Run.new(settings, scenario, adapter, repeat, self._capture()).execute()
        self.folder.append(derived.row)
        summarise(derived.row)
        return derived

    def _why_not(self, scenario: Scenario, adapter: ToolAdapter) -> tuple[str, str] | None:
        """Why the run cannot start here and its status (failed or unsupported); None: it can (its target started)."""
        if reason := self.cannot_run(adapter):
            return reason, "failed"
        if reason := (capabilities.unsupported_reason(scenario, adapter) or self.runtime.unsupported_reason(scenario)
                      or self._shaper_reason(scenario)):
            return reason, "unsupported"
        if reason := self._use_target(scenario):
            return reason, "failed"
        return None

    def _capture(self) -> Capture:
        plan = self.plan
        return Capture(plan.capture, "tcpdump is not installed" if self.no_tcpdump else "", keep_pcap=plan.keep_pcap)

    def _use_target(self, scenario: Scenario) -> str | None:
        """Start the scenario's target stack (if another one runs); why it cannot start, if it cannot."""
        try:
            self.runtime.use_target(Setup.of(scenario))
        except HarnessError as exc:
            return f"target {Setup.of(scenario).describe()} did not start: {exc}"
        return None

    def stored(self, scenario_id: str, tool: str, repeat: int = 1) -> RunRow | None:
        """The row of a run the resumed folder finished (None: it is to be run)."""
        if (scenario_id, tool, repeat) not in self.finished:
            return None
        return read_meta_row(self.folder.run_dir(scenario_id, tool, repeat))


@contextmanager
def opened(plan: Plan, runtime: Runtime | None = None, lock: Held | None = None) -> Iterator[Bench]:
    """Pre-flight, the single-instance lock, SIGINT and SIGTERM as an interrupt, the tools prepared, the shaper
    chosen, the results folder opened (or resumed) and the runtime entered, for as long as the suite runs.
    ``lock``: the machine's lock held already by the caller, for several suites in a row (the overhead check,
    harness/suite/overhead_check.py: nothing else may run between its pairs); it stays held after the suite."""
    preflight.check_resume(plan)      # bad input: before the runtime is made, the pre-flight and the lock
    # The folder the tools write into, mounted into containers: a resumed one may live outside results_root.
    root = plan.resume.parent if plan.resume is not None else plan.results_root
    runtime = runtime or make_runtime(plan.runtime, root, plan.target_host, plan.generator_hosts, plan.swarm)
    runtime.split = plan.split
    runtime.target_ids = frozenset(s.target for s in plan.scenarios)
    preflight.check(plan, runtime)
    ours = lock is None
    lock = acquire() if ours else lock
    try:
        with interrupts_raised():   # every interrupting signal stops the suite alike
            broken = runtime.prepare(plan.tools)
            shaper = _choose_shaper(plan, runtime)
            no_tcpdump = plan.capture and tcpdump_missing()
            if no_tcpdump:
                console.print(MISSING, markup=False)
            folder, finished = open_folder(plan)
            record_folder(lock, folder.path)
            resuming = f" (resuming: {len(finished)} finished runs kept)" if plan.resume else ""
            console.print(f"results: {folder.path}{resuming}", markup=False)
            if plan.resume is None:
                folder.write_json("environment.json", environment.collect(
                    {"runtime": plan.runtime, "shaper": shaper.kind, "shaper_reason": shaper.reason,
                     **plan.split.describe(), **runtime.describe()}))
            write_declarations(folder.path, {adapter.name: adapter for adapter in plan.tools})   # the scorecard's
            with folder_lock(folder.path), runtime:
                if plan.resume is None and (facts := runtime.started_facts()):
                    _add_environment(folder, facts)
                try:
                    _check_targets(plan, runtime)
                except HarnessError:
                    if plan.resume is None:       # bad input: leave no empty folder
                        folder.discard()
                    raise
                yield Bench(plan, runtime, folder, finished, broken, shaper, no_tcpdump)
    finally:
        if ours:
            lock.close()


def _check_targets(plan: Plan, runtime: Runtime) -> None:
    """Every target setup the suite needs, started and checked once before the first run (a proxy
    that does not serve the file stops the suite here, in one line, rather than failing every run)."""
    setups = dict.fromkeys(Setup.of(s) for s in plan.scenarios if runtime.unsupported_reason(s) is None)
    if len(setups) <= 1 and Setup() in setups:
        return
    for setup in setups:
        try:
            runtime.use_target(setup)
            runtime.check_target()
        except HarnessError as exc:
            raise HarnessError(f"target {setup.describe()} failed its pre-flight check: {exc}") from None


def run_suite(plan: Plan, runtime: Runtime | None = None,
              lock: Held | None = None) -> tuple[ResultsFolder, list[RunRow]]:
    """``runtime``: one made already (the tests' in-process runtime); by default plan.runtime's. ``lock``: the
    machine's lock, held by the caller (see opened)."""
    with opened(plan, runtime, lock) as bench:
        runs = [(s, t, r) for s, t, r in plan.runs if (s.id, t.name, r) not in bench.finished]
        derived: list[Derived] = []
        eta = Eta([scenario.duration_s for scenario, _, _ in runs])
        for index, (scenario, adapter, repeat) in enumerate(runs, start=1):
            announce(index, eta, scenario, adapter, plan.runtime)
            started = time.monotonic()
            derived.append(bench.derived(scenario, adapter, repeat))
            eta.finished(scenario.duration_s, time.monotonic() - started)
        overhead(derived, eta.beyond_s)
        return bench.folder, [one.row for one in derived]


def _add_environment(folder: ResultsFolder, facts: dict) -> None:
    path = folder.path / "environment.json"
    folder.write_json(path.name, {**json.loads(path.read_text()), **facts})

