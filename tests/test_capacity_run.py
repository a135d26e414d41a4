"""The capacity command (harness/capacity/run.py) end to end on the in-process fake runtime of
tests/fake_runtime.py: a paced fake tool whose achieved rate is min(rate, PACED_CAP_RPS) and whose p99 is
fixed, so the search's steps are known; a closed-model fake named wrk as the reference. Every step is an
ordinary row, capacity.json holds the result, and --resume on the folder runs nothing again. Bad input
gets one line and exit status 2."""
import json
import re
import shutil
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from conftest import harness
from fake_runtime import FakeRuntime, FakeTool
from fake_tool import PACED_CAP_RPS, PACED_LATENCY_MS
from harness.capacity.run import (CAPACITY_JSON, CLOSED_NOTE, SLO_FLOOR_MS, Settings, check_resume, p99_of,
                                  rederive_capacity, run_capacity, step_of, summary_line)
from harness.cpus import NO_SPLIT
from harness.errors import HarnessError
from harness.network.capture import Capture
from harness.store.results import ResultsFolder, RunRow
from harness.suite import runner
from harness.suite.plan import Plan

# From 25 rps doubling: 25 and 50 pass, 100 misses its rate (90 achieved), so the next probe is the
# achieved 90, which passes; 100 is within 30% of 90: done.
SETTINGS = Settings(step_s=1, vus=2, start_rps=25, resolution=0.3)
RATES = [25, 50, 100, 90]
PACED = FakeTool("paced", name="fake-paced", open_model=True)
REFERENCE = FakeTool("ok", name="wrk")


def plan(root, resume=None) -> Plan:
    return Plan(runtime="fake", tools=[PACED, REFERENCE], scenarios=[SETTINGS.rate_scenario(SETTINGS.start_rps)],
                results_root=root, resume=resume, split=NO_SPLIT)


class SpyCapture(Capture):
    """No tcpdump: notes what each run's recording was told about its pacing."""
    paced_seen: list = []

    @contextmanager
    def recording(self, session, target, run_dir, paced=None):
        SpyCapture.paced_seen.append(paced)
        yield


def folders(path) -> set:
    return {p for p in path.rglob("*") if p.is_dir()}


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> dict:
    """One capacity run, then the same folder resumed."""
    root = tmp_path_factory.mktemp("results")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LTH_LOCK_DIR", str(tmp_path_factory.mktemp("lock")))    # not the machine's: a benchmark may hold it
        patch.setattr(runner, "Capture", SpyCapture)
        folder, entries = run_capacity(plan(root), SETTINGS, FakeRuntime())
        first = {"rows": folder.rows(), "folders": folders(folder.path),
                 "json": json.loads((folder.path / CAPACITY_JSON).read_text()), "paced": list(SpyCapture.paced_seen)}
        runtime = FakeRuntime()
        again, resumed = run_capacity(plan(root, folder.path), SETTINGS, runtime)
    return {"folder": folder.path, "entries": entries, "first": first, "again": again.path, "resumed": resumed,
            "resumed_sessions": runtime.sessions}


def test_every_step_is_an_ordinary_row(searched):
    rows = searched["first"]["rows"]
    assert [(r["scenario"], r["tool"]) for r in rows] == [
        ("capacity-unloaded-rate2", "fake-paced"), *((f"capacity-rate{r}", "fake-paced") for r in RATES),
        ("capacity-closed-vu2", "wrk")]
    assert all(r["status"] == "ok" and r["vus"] == "2" and r["duration_s"] == "1" for r in rows)
    for row in rows[:-1]:
        target = float(row["rate_target_rps"])
        assert float(row["rate_achieved_rps"]) == min(target, PACED_CAP_RPS)
        assert float(row["lat_p99_ms"]) == PACED_LATENCY_MS and row["mem_avg_mb"] != ""
    assert rows[-1]["rate_target_rps"] == "" and float(rows[-1]["rps"]) > 0      # the closed loop
    # Each rate run's capture is told the rate and the tool's declared schedule; the closed run's nothing.
    assert searched["first"]["paced"] == [(2, "uniform"), *((r, "uniform") for r in RATES), None]


def test_capacity_json_holds_each_tools_result(searched):
    paced, reference = searched["first"]["json"]
    assert paced == searched["entries"][0]
    assert paced["tool"] == "fake-paced" and paced["kind"] == "search"
    assert paced["max_sustained_rps"] == 90 and paced["limited_by"] == "rate" and paced["stopped_because"] == "resolution"
    # 10 x the unloaded p99 (0.05 ms) is below the floor.
    assert paced["slo_p99_ms"] == SLO_FLOOR_MS and paced["unloaded"]["lat_p99_ms"] == PACED_LATENCY_MS
    assert paced["steps"] == len(RATES) and paced["rates"] == RATES and paced["resumed_steps"] == 0
    assert [s["passed"] for s in paced["step_results"]] == [True, True, False, True]
    assert paced["step_results"][2]["failed"] == ["rate"]
    assert all((searched["folder"] / s["run_dir"] / "meta.json").is_file() for s in paced["step_results"])
    assert reference["tool"] == "wrk" and reference["kind"] == "closed-loop reference"
    assert reference["note"] == CLOSED_NOTE and reference["closed_loop_rps"] > 0 and reference["status"] == "ok"


def test_the_summary_line_per_tool(searched):
    paced, reference = searched["entries"]
    assert re.fullmatch(r"fake-paced: max sustained 90 rps \(limited by rate; 4 steps, \d+\.\d min\)",
                        summary_line(paced))
    assert summary_line(reference).startswith("wrk: closed-loop max (reference, not a sustained-rate search) ")
    failed = {**paced, "max_sustained_rps": None, "stopped_because": "no passing rate", "limited_by": "nothing passed"}
    assert summary_line(failed).startswith("fake-paced: no sustained rate found (no passing rate; limited by")


def test_resume_replays_the_search_from_the_stored_rows_and_runs_nothing(searched):
    assert searched["again"] == searched["folder"]
    assert searched["resumed_sessions"] == 0                                   # no tool was started
    assert ResultsFolder(searched["folder"]).rows() == searched["first"]["rows"]
    assert folders(searched["folder"]) == searched["first"]["folders"]         # no new run folder
    paced, reference = searched["resumed"]
    assert paced["resumed_steps"] == 1 + len(RATES)                             # the unloaded step too
    same = ("max_sustained_rps", "limited_by", "stopped_because", "slo_p99_ms", "rates", "step_results")
    assert {k: paced[k] for k in same} == {k: searched["entries"][0][k] for k in same}
    assert reference["closed_loop_rps"] == searched["entries"][1]["closed_loop_rps"]
    assert [e["tool"] for e in json.loads((searched["folder"] / CAPACITY_JSON).read_text())] == ["fake-paced", "wrk"]


def test_rederive_makes_capacity_json_again_from_the_rows(searched, tmp_path):
    """capacity.json is derived, not kept: `rederive` replays the search over the stored (re-derived) rows.
    A hand-edited entry comes back as the rows say; a row that now passes where it failed sends the search
    to a rate the folder never ran, and the entry keeps its figures and says so."""
    folder = ResultsFolder(shutil.copytree(searched["folder"], tmp_path / "copy"))
    stored = json.loads((folder.path / CAPACITY_JSON).read_text())
    adapters = {PACED.name: PACED, REFERENCE.name: REFERENCE}
    same = ("max_sustained_rps", "limited_by", "stopped_because", "slo_p99_ms", "rates", "step_results", "criteria")
    edited = [{**stored[0], "max_sustained_rps": 12345, "limited_by": "edited", "step_results": []},
              {**stored[1], "closed_loop_rps": 1.0, "status": "edited"}]
    (folder.path / CAPACITY_JSON).write_text(json.dumps(edited))
    paced, reference = rederive_capacity(folder, adapters)
    assert {k: paced[k] for k in same} == {k: stored[0][k] for k in same}
    assert paced["wall_time_s"] == stored[0]["wall_time_s"] and "rederived" not in paced
    assert (reference["closed_loop_rps"], reference["status"]) == (stored[1]["closed_loop_rps"], "ok")
    assert json.loads((folder.path / CAPACITY_JSON).read_text()) == [paced, reference]

    meta = folder.path / "capacity-rate100" / PACED.name / "meta.json"     # the step that missed its rate
    record = json.loads(meta.read_text())
    record["row"]["rate_achieved_rps"] = 100.0
    meta.write_text(json.dumps(record))
    paced, _ = rederive_capacity(folder, adapters)
    went = re.search(r"the search goes to capacity-rate(\d+), which this folder did not run", paced.get("rederived", ""))
    assert went and int(went.group(1)) not in RATES and paced["max_sustained_rps"] == 90, paced.get("rederived")


def test_a_resume_with_other_step_settings_is_refused(searched, tmp_path):
    other = Settings(step_s=2, vus=2, start_rps=25, resolution=0.3)
    with pytest.raises(HarnessError, match=r"ran with --vus 2 --step-duration 1; resume with those"):
        run_capacity(plan(tmp_path, searched["folder"]), other, FakeRuntime())


@pytest.mark.parametrize("slo, why", [(None, "the unloaded step failed: image build failed"),
                                      (5.0, "the tool cannot run: image build failed")])
def test_a_tool_that_cannot_run_is_one_failed_row_and_no_search(tmp_path, monkeypatch, slo, why):
    monkeypatch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))
    broken = FakeTool("paced", name="fake-broken", open_model=True)
    settings = Settings(step_s=1, vus=2, start_rps=25, slo_p99_ms=slo)
    folder, (entry,) = run_capacity(Plan(runtime="fake", tools=[broken], scenarios=[settings.rate_scenario(25)],
                                         results_root=tmp_path, split=NO_SPLIT), settings,
                                    FakeRuntime({"fake-broken": "image build failed"}))
    (row,) = folder.rows()
    assert row["status"] == "failed" and row["error"] == "image build failed"
    assert entry["max_sustained_rps"] is None and entry["stopped_because"] == why and entry["steps"] == 0
    assert summary_line(entry).startswith(f"fake-broken: no sustained rate found ({why}; limited by run failed")


def test_a_p99_below_the_tools_clock_counts_as_the_clock_step():
    row = RunRow(tool="jmeter", tool_version="5", runtime="host", scenario="capacity-rate100", vus=10, rtt_target_ms=0.1,
                 duration_s=5, status="ok", rate_achieved_rps=100.0, requests=500, errors=None, lat_p99_ms=None,
                 lat_below_resolution='["lat_min_ms", "lat_p50_ms", "lat_p99_ms"]', timing_resolution_ms=1.0)
    assert p99_of(row) == 1.0
    step = step_of(row, 100)
    assert step.rate_target_rps == 100 and step.lat_p99_ms == 1.0 and step.errors == 0 and step.requests == 500
    row.lat_below_resolution = '["lat_min_ms"]'
    assert p99_of(row) is None                                                  # not reported: no bound
    row.lat_below_resolution = "lat_min_ms,lat_p99_ms"                           # a folder from before the JSON list
    assert p99_of(row) == 1.0


CASES = {
    "unknown tool": (["--tools", "oha,nosuchtool"], "unknown tool nosuchtool; available:"),
    "step duration zero": (["--tools", "oha", "--step-duration", "0"], "argument --step-duration: must be > 0"),
    "nothing can pace": (["--tools", "ab,h2load"], "--tools ab,h2load: none of them can pace a rate"),
    "resolution not a number": (["--tools", "oha", "--resolution", "fine"], "argument --resolution: must be a number"),
    "start rate too high": (["--tools", "oha", "--start-rps", "2000000"], "--start-rps 2000000: at most 1,000,000"),
    "cpu sets overlap": (["--tools", "oha", "--cpus-tool", "0-1", "--cpus-target", "1"], "overlap"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_one_clear_line(case, tmp_path):
    args, expected = CASES[case]
    result = harness("capacity", "--runtime", "host", "--results-root", str(tmp_path), *args, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert not any(tmp_path.iterdir()), "bad input must not create a results folder"


def test_the_cpu_split_and_grace_reach_the_capacity_plan(monkeypatch):
    """`capacity` takes `run`'s --cpus-target/--cpus-tool/--no-isolation and --grace: the knee depends on
    the CPUs Nginx and the tool have, and a step's hung tool is killed like any run's."""
    from harness import cli
    from harness.capacity import run as capacity_run
    planned = []
    folder = SimpleNamespace(path="nowhere")
    monkeypatch.setattr(capacity_run, "run_capacity", lambda plan, settings: planned.append(plan) or (folder, []))
    cli.main(["capacity", "--runtime", "host", "--tools", "oha", "--cpus-target", "0", "--cpus-tool", "1",
              "--grace", "7"])
    cli.main(["capacity", "--runtime", "host", "--tools", "oha", "--no-isolation"])
    split, shared = planned[0].split, planned[1].split
    assert (split.target, split.tool, planned[0].grace_s) == ((0,), (1,), 7)
    assert not shared.isolated and planned[1].grace_s is None


@pytest.mark.parametrize("options, message", [
    ({"step_s": 100000}, "--step-duration: duration_s: Input should be less than or equal to 86400 (got 100000)"),
    ({"start_rps": 20_000_000}, "--start-rps 20000000: at most 1,000,000 (and --resolution, --max-steps above 0)"),
])
def test_a_setting_the_steps_scenario_refuses_is_one_line_naming_the_option(options, message):
    """Not pydantic's multi-line ValidationError (a traceback, exit 1): the option and the bound, exit 2."""
    with pytest.raises(HarnessError) as refused:
        Settings(**options)
    assert str(refused.value) == message


def test_a_resumed_folder_whose_runs_csv_holds_no_number_is_refused_in_one_line(tmp_path):
    """A hand-edited runs.csv (vus `many`) was int()'s ValueError, a traceback."""
    folder = tmp_path / "edited"
    folder.mkdir()
    (folder / "environment.json").write_text('{"runtime": "host"}')
    ResultsFolder(folder).rewrite([{"scenario": "capacity-rate25", "tool": "oha", "vus": "many", "duration_s": "1",
                                    "status": "ok", "repeat": "1"}])
    with pytest.raises(HarnessError, match=r"its steps ran with --vus many --step-duration 1"):
        check_resume(ResultsFolder(folder), SETTINGS)
