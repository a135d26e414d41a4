"""``python -m harness capacity``: the capacity search (harness/capacity/search.py) driven through the suite's
own machinery (runner.opened, Bench.run), so every step is an ordinary run with its ordinary row.

Per tool that can pace a rate (``open_model``):
  1. unless --slo-p99-ms is given, an unloaded step at UNLOADED_RPS (a tenth of --start-rps when that
     is lower): the SLO is SLO_FACTOR x its p99, at least SLO_FLOOR_MS (a sub-millisecond p99 x 10 is
     within the run-to-run noise of a loaded machine, and below a whole-ms tool's clock);
  2. capacity.search, whose measure(rate) is one run of the scenario ``capacity-rate<rate>``: rate_rps
     = rate, vus = --vus (the tool's connection/user budget), rtt_ms 0.1 (the native hop, no shaping),
     duration --step-duration; its row becomes the Step the search judges.
A tool without an open model (wrk) gets one closed-loop run at --vus connections instead: the most
it pushed with every connection busy, a reference, not a sustained-rate search.

--resume FOLDER: a step the folder finished (same scenario id and tool, status ok) is not run again;
its Step comes from its stored row. The search is deterministic given its steps' results, so a
resumed search replays to where it stopped and goes on from there.

Each tool's result is one entry of capacity.json in the results folder, and one printed line. `rederive`
makes capacity.json again from the re-derived rows (rederive_capacity): the same replay, every step stored.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import ValidationError

from harness.capacity.search import Criteria, SearchResult, Step, Verdict, judge, search
from harness.errors import HarnessError
from harness.runtimes import Runtime
from harness.scenarios import MAX_VUS, Scenario, describe_error
from harness.store.figures import emptied_columns
from harness.store.results import ResultsFolder, RunRow, read_meta_row
from harness.suite import preflight
from harness.suite.console import console
from harness.suite.plan import Plan
from harness.suite.runner import Bench, opened
from harness.tools.adapter import ToolAdapter

UNLOADED_RPS = 100
SLO_FACTOR = 10.0
SLO_FLOOR_MS = 1.0
NATIVE_RTT_MS = 0.1
RATE_ID, UNLOADED_ID, CLOSED_ID = "capacity-rate{rate}", "capacity-unloaded-rate{rate}", "capacity-closed-vu{vus}"
CAPACITY_JSON = "capacity.json"
REFERENCE_TOOL = "wrk"
CLOSED_NOTE = "closed-loop max (reference, not a sustained-rate search)"
# The option that sets each field of the steps' scenario: a value the scenario refuses is said with its option.
OPTION_OF_FIELD = {"duration_s": "--step-duration", "vus": "--vus", "rate_rps": "--start-rps"}


@dataclass(frozen=True)
class Settings:
    """The search's knobs, as the command line gives them."""
    step_s: int = 5
    vus: int = 1000
    slo_p99_ms: float | None = None   # None: SLO_FACTOR x the unloaded step's p99
    resolution: float = 0.02
    max_steps: int = 12
    start_rps: int = 1000
    target: str = "nginx"

    def __post_init__(self) -> None:
        if self.vus > MAX_VUS:
            raise HarnessError(f"--vus {self.vus}: at most {MAX_VUS}")
        try:
            self.criteria(SLO_FLOOR_MS)
        except ValueError:
            raise HarnessError(f"--start-rps {self.start_rps}: at most {Criteria.max_rps:,} "
                               f"(and --resolution, --max-steps above 0)") from None
        self.rate_scenario(self.start_rps)   # the options every step's scenario is made of, checked once here

    def scenario(self, scenario_id: str, rate_rps: int | None) -> Scenario:
        try:
            return Scenario(id=scenario_id, vus=self.vus, rtt_ms=NATIVE_RTT_MS, duration_s=self.step_s,
                            rate_rps=rate_rps)
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            option = OPTION_OF_FIELD.get(str(loc[0]) if loc else "", "the capacity options")
            raise HarnessError(f"{option}: {describe_error(exc, Scenario)}") from None

    def criteria(self, slo_p99_ms: float) -> Criteria:
        return Criteria(slo_p99_ms=slo_p99_ms, resolution=self.resolution, max_steps=self.max_steps,
                        start_rps=self.start_rps)

    @property
    def unloaded_rps(self) -> int:
        return min(UNLOADED_RPS, max(1, self.start_rps // 10))

    def rate_scenario(self, rate_rps: int) -> Scenario:
        return self.scenario(RATE_ID.format(rate=rate_rps), rate_rps)


def check_tools(tools: list[ToolAdapter]) -> None:
    """Bad input: nothing to search and no closed-loop reference."""
    if not any(t.open_model or t.name == REFERENCE_TOOL for t in tools):
        raise HarnessError(f"--tools {','.join(t.name for t in tools)}: none of them can pace a rate (`lth tools`, "
                           f"rate column: open) and {REFERENCE_TOOL}, the closed-loop reference, "
                           f"is not among them: add one")


def check_resume(folder: ResultsFolder, settings: Settings) -> None:
    """A resumed folder's steps must have run with the same --vus and --step-duration: its rows stand
    in for runs with these settings."""
    for row in folder.rows():
        # Compared as runs.csv writes them: a cell that is no number (a hand-edited file) is a mismatch, not a crash.
        if row["scenario"].startswith("capacity-") and (row["vus"], row["duration_s"]) != (
                str(settings.vus), str(settings.step_s)):
            raise HarnessError(f"cannot resume {folder.path} with --vus {settings.vus} --step-duration "
                               f"{settings.step_s}: its steps ran with --vus {row['vus']} --step-duration "
                               f"{row['duration_s']}; resume with those, or start a new results folder")


def p99_of(row: RunRow) -> float | None:
    """The row's p99; one below the tool's timing resolution (emptied in the row, lat_below_resolution)
    counts as the resolution itself: an upper bound, not a missing figure."""
    if row.lat_p99_ms is None and "lat_p99_ms" in emptied_columns(row.lat_below_resolution):
        return row.timing_resolution_ms
    return row.lat_p99_ms


def step_of(row: RunRow, rate_rps: int) -> Step:
    return Step(rate_target_rps=rate_rps, rate_achieved_rps=row.rate_achieved_rps, errors=row.errors or 0,
                requests=row.requests or 0, lat_p99_ms=p99_of(row), tool_saturated=row.tool_saturated,
                target_saturated=row.target_saturated, status=row.status, error=row.error,
                scheduled_s=row.duration_s)


class _Steps:
    """One tool's runs: each an ordinary run and row, or the row a resumed folder finished."""

    def __init__(self, bench: Bench | _Stored, adapter: ToolAdapter, settings: Settings, quiet: bool = False) -> None:
        self.bench, self.adapter, self.settings, self.quiet = bench, adapter, settings, quiet
        self.resumed = 0
        self.run_dirs: dict[int, str] = {}   # rate -> the step's run folder

    def say(self, text: str, markup: bool = True) -> None:
        if not self.quiet:
            console.print(text, markup=markup)

    def row(self, scenario: Scenario, label: str) -> RunRow:
        stored = self.bench.stored(scenario.id, self.adapter.name)
        self.say(f"[bold]{self.adapter.name}[/] {label}: {scenario.id} ({scenario.duration_s} s)"
                 + (": kept from the resumed folder" if stored is not None else ""))
        if stored is not None:
            self.resumed += 1
            return stored
        return self.bench.run(scenario, self.adapter)

    def measure(self, rate: int, criteria: Criteria) -> Step:
        row = self.row(self.settings.rate_scenario(rate), f"step {len(self.run_dirs) + 1}")
        self.run_dirs[rate] = row.run_dir
        step = step_of(row, rate)
        verdict = judge(step, criteria)
        self.say("   pass" if verdict.passed else f"   fail: {', '.join(verdict.failed)}", markup=False)
        return step


def search_tool(bench: Bench | _Stored, adapter: ToolAdapter, settings: Settings, quiet: bool = False) -> dict:
    """The unloaded step (unless the SLO is given), then the search; capacity.json's entry."""
    started, steps = time.monotonic(), _Steps(bench, adapter, settings, quiet)
    entry = {"tool": adapter.name, "kind": "search", "target": settings.target, "vus": settings.vus,
             "step_duration_s": settings.step_s, "slo_p99_ms": settings.slo_p99_ms, "slo_from": "--slo-p99-ms"}
    if settings.slo_p99_ms is None:
        rate = settings.unloaded_rps
        row = steps.row(settings.scenario(UNLOADED_ID.format(rate=rate), rate), "unloaded step")
        p99 = p99_of(row)
        entry["unloaded"] = {"rate_rps": rate, "status": row.status, "lat_p99_ms": p99, "run_dir": row.run_dir}
        if row.status != "ok" or p99 is None:
            why = f"the unloaded step {row.status}: {row.error}" if row.status != "ok" else "the unloaded step: no p99"
            return _unsearched(entry, steps, started, why)
        entry["slo_p99_ms"] = max(SLO_FLOOR_MS, SLO_FACTOR * p99)
        entry["slo_from"] = (f"{SLO_FACTOR:g} x the unloaded p99 ({p99:.3g} ms at {rate} rps), "
                             f"at least {SLO_FLOOR_MS:g} ms")
    elif reason := bench.cannot_run(adapter):   # one failed row says why, not a search walking down
        steps.row(settings.rate_scenario(settings.start_rps), "step 1")
        return _unsearched(entry, steps, started, f"the tool cannot run: {reason}")
    criteria = settings.criteria(entry["slo_p99_ms"])
    result = search(lambda r: steps.measure(r, criteria), criteria)
    return {**entry, **result.describe(), "resumed_steps": steps.resumed,
            "wall_time_s": round(time.monotonic() - started, 1), "criteria": asdict(criteria),
            "step_results": [_step_result(s, v, steps.run_dirs.get(s.rate_target_rps)) for s, v in result.steps]}


def _unsearched(entry: dict, steps: _Steps, started: float, why: str) -> dict:
    return {**entry, **SearchResult(None, "run failed", why).describe(), "resumed_steps": steps.resumed,
            "wall_time_s": round(time.monotonic() - started, 1)}


def _step_result(step: Step, verdict: Verdict, run_dir: str | None) -> dict:
    return {"rate_target_rps": step.rate_target_rps, "rate_achieved_rps": step.rate_achieved_rps,
            "requests": step.requests, "delivered_fraction": step.delivered_fraction,
            "lat_p99_ms": step.lat_p99_ms, "errors": step.errors, "status": step.status,
            "passed": verdict.passed, "failed": list(verdict.failed), "target_saturated": verdict.target_saturated,
            "run_dir": run_dir}


def closed_reference(bench: Bench | _Stored, adapter: ToolAdapter, settings: Settings, quiet: bool = False) -> dict:
    """One closed-loop run at --vus connections: capacity.json's entry."""
    started = time.monotonic()
    row = _Steps(bench, adapter, settings, quiet).row(settings.scenario(CLOSED_ID.format(vus=settings.vus), None),
                                               "closed loop")
    return {"tool": adapter.name, "kind": "closed-loop reference", "note": CLOSED_NOTE, "target": settings.target,
            "vus": settings.vus, "step_duration_s": settings.step_s, "closed_loop_rps": row.rps,
            "status": row.status, "error": row.error, "limited_by": row.limited_by, "run_dir": row.run_dir,
            "wall_time_s": round(time.monotonic() - started, 1)}


def summary_line(entry: dict) -> str:
    """``oha: max sustained 37,200 rps (limited by target; 11 steps, 1.3 min)``."""
    minutes = f"{entry['wall_time_s'] / 60:.1f} min"
    if entry["kind"] != "search":
        if entry["closed_loop_rps"] is None:
            return f"{entry['tool']}: closed-loop reference {entry['status']}: {entry['error']}"
        return (f"{entry['tool']}: {CLOSED_NOTE} {entry['closed_loop_rps']:,.0f} rps "
                f"({entry['vus']} connections, {entry['step_duration_s']} s; {minutes})")
    resumed = f", {entry['resumed_steps']} kept from the resumed folder" if entry["resumed_steps"] else ""
    how = f"limited by {entry['limited_by']}; {entry['steps']} steps{resumed}, {minutes}"
    if entry["max_sustained_rps"] is None:
        return f"{entry['tool']}: no sustained rate found ({entry['stopped_because']}; {how})"
    return f"{entry['tool']}: max sustained {entry['max_sustained_rps']:,} rps ({how})"


def _store(folder: ResultsFolder, entries: list[dict]) -> None:
    """capacity.json: these entries, and a resumed folder's entries for tools not searched again."""
    path = folder.path / CAPACITY_JSON
    fresh = {e["tool"] for e in entries}
    kept = [e for e in json.loads(path.read_text()) if e["tool"] not in fresh] if path.is_file() else []
    folder.write_json(CAPACITY_JSON, kept + entries)


def run_capacity(plan: Plan, settings: Settings, runtime: Runtime | None = None) -> tuple[ResultsFolder, list[dict]]:
    """Every tool of ``plan`` searched (or, closed-model, run once as the reference), one after the
    other in one suite; ``runtime``: one made already (the tests'), by default plan.runtime's."""
    check_tools(plan.tools)
    if plan.resume is not None:
        preflight.check_resume(plan)
        check_resume(ResultsFolder(plan.resume), settings)
    entries: list[dict] = []
    with opened(plan, runtime) as bench:
        for adapter in plan.tools:
            entries.append((search_tool if adapter.open_model else closed_reference)(bench, adapter, settings))
            _store(bench.folder, entries)
            console.print(summary_line(entries[-1]), markup=False)   # holds the runs' error text
    return bench.folder, entries


class _NotRun(Exception):
    """The replay asked for a step the folder did not run (its scenario id)."""


class _Stored:
    """A finished folder in the place of the search's Bench (the three methods the search calls), for `rederive`:
    every step is its stored row, nothing runs. ``rows``: the rows by run folder, derived again and not written
    yet (None: each step's meta.json)."""

    def __init__(self, folder: ResultsFolder, rows: dict[str, RunRow] | None = None) -> None:
        self.folder, self.rows = folder, rows

    def stored(self, scenario_id: str, tool: str) -> RunRow:
        if self.rows is not None:
            if f"{scenario_id}/{tool}" not in self.rows:
                raise _NotRun(scenario_id)
            return self.rows[f"{scenario_id}/{tool}"]
        run_dir = self.folder.path / scenario_id / tool
        if not (run_dir / "meta.json").is_file():
            raise _NotRun(scenario_id)
        return read_meta_row(run_dir)

    def run(self, scenario: Scenario, adapter: ToolAdapter) -> RunRow:
        raise _NotRun(scenario.id)

    def cannot_run(self, adapter: ToolAdapter) -> str | None:
        return None


def rederive_capacity(folder: ResultsFolder, adapters: dict[str, ToolAdapter]) -> list[dict] | None:
    """capacity.json made again from the folder's (re-derived) rows, as a --resume whose every step is stored
    would make it: the search replayed, nothing run (None: the folder has no capacity.json). An entry whose
    replay now asks for a step the folder did not run keeps its figures and says so; one that never searched
    (the tool could not run, its unloaded step failed) stays as it was."""
    entries = replayed_capacity(folder, adapters)
    if entries is not None:
        folder.write_json(CAPACITY_JSON, entries)
    return entries


def replayed_capacity(folder: ResultsFolder, adapters: dict[str, ToolAdapter],
                      rows: dict[str, RunRow] | None = None) -> list[dict] | None:
    """rederive_capacity's entries, written nowhere (`rederive` writes them last, with everything else); ``rows``:
    the re-derived rows by run folder (None: each step's stored meta.json). A capacity.json that cannot be read
    or replayed is a one-line HarnessError."""
    path = folder.path / CAPACITY_JSON
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path} cannot be read ({type(exc).__name__}: {exc}): nothing was re-derived; "
                           f"restore it from a copy, or remove it and run the search again") from None
    if not isinstance(stored, list) or not all(isinstance(e, dict) for e in stored):
        raise HarnessError(f"{path} holds no list of entries: nothing was re-derived; restore it from a copy")
    return [_replayed(path, index, entry, _Stored(folder, rows), adapters) for index, entry in enumerate(stored)]


def _replayed(path: Path, index: int, entry: dict, stored: _Stored, adapters: dict[str, ToolAdapter]) -> dict:
    tool = entry.get("tool")
    if not isinstance(tool, str) or tool not in adapters:
        raise HarnessError(f"{path} entry {index + 1}: tool {tool!r} has no adapter in tools/: nothing was "
                           f"re-derived; re-derive with the checkout that ran it")
    try:
        return _rederived(entry, stored, adapters[tool])
    except (KeyError, TypeError, ValueError, AttributeError, ValidationError) as exc:
        raise HarnessError(f"{path} entry {index + 1} ({tool}) cannot be replayed ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}): nothing was re-derived; restore it "
                           f"from a copy") from None


def _rederived(entry: dict, stored: _Stored, adapter: ToolAdapter) -> dict:
    if entry.get("kind") == "search" and "criteria" not in entry:
        return entry
    replay = search_tool if entry["kind"] == "search" else closed_reference
    try:
        fresh = replay(stored, adapter, _settings_of(entry), quiet=True)
    except _NotRun as exc:
        return {**entry, "rederived": f"kept as stored: with the re-derived rows the search goes to {exc}, "
                                      f"which this folder did not run (run the search again)"}
    return {**fresh, **{key: entry[key] for key in ("resumed_steps", "wall_time_s") if key in entry}}


def _settings_of(entry: dict) -> Settings:
    """The settings an entry was searched with, from what it stored."""
    criteria = entry.get("criteria", {})
    return Settings(step_s=entry["step_duration_s"], vus=entry["vus"], target=entry["target"],
                    slo_p99_ms=entry["slo_p99_ms"] if entry.get("slo_from") == "--slo-p99-ms" else None,
                    **{key: criteria[key] for key in ("resolution", "max_steps", "start_rps") if key in criteria})
