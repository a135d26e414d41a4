"""The runner's status rules, without root: one suite through harness.suite.runner.run_suite on the in-process
runtime of tests/fake_runtime.py (a local HTTP target, Python child processes as tools).

A run is ok only when the tool exited 0 in time and its output parsed with at least one request; a non-zero exit is failed with the
last stderr line, a tool still running past its grace is killed and timeout, unparsable output is failed
with the parser's error; a rate scenario gives a tool without an open model an unsupported row and never
starts it; a tool the runtime cannot prepare is a failed row with the reason; every one of them is a row
and the suite goes on.
"""
import csv
import json
import os

import psutil
import pytest

from fake_runtime import TOOL, FakeRuntime, FakeTool
from fake_tool import BALLAST_MB, POST_S, STARTUP_S
from harness.cpus import NO_SPLIT
from harness.errors import HarnessError
from harness.scenarios import Scenario
from harness.suite import console, run
from harness.suite.execution import OVERTIME_CHECK_S
from harness.suite.runner import Plan, run_suite

CLOSED = Scenario(id="vu2-rtt0.1", vus=2, rtt_ms=0.1, duration_s=1)
RATE = Scenario(id="rate50", vus=2, rtt_ms=0.1, duration_s=1, rate_rps=50)
GRACE_S = 8.0          # a fake tool's interpreter may take seconds to start on a busy machine
TOOLS = [FakeTool("fail"), FakeTool("hang"), FakeTool("post"), FakeTool("garbage"), FakeTool("zero"), FakeTool("ok"), FakeTool("window"), FakeTool("wrapped-long"),
         FakeTool("ok", name="fake-unprepared"), FakeTool("ok", name="fake-open", open_model=True)]
BROKEN = {"fake-unprepared": "image build failed: see build.log"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> dict:
    """Every tool in both scenarios, in one suite; the rows by (scenario, tool), the runtime, the folder."""
    root = tmp_path_factory.mktemp("results")
    runtime = FakeRuntime(BROKEN)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LTH_LOCK_DIR", str(tmp_path_factory.mktemp("lock")))    # not the machine's: a benchmark may hold it
        plan = Plan(runtime="fake", tools=TOOLS, scenarios=[CLOSED, RATE], results_root=root, grace_s=GRACE_S,
                    split=NO_SPLIT)
        folder, rows = run_suite(plan, runtime)
    return {"rows": {(r.scenario, r.tool): r for r in rows}, "order": [(r.scenario, r.tool) for r in rows],
            "runtime": runtime, "folder": folder.path}


def meta(suite: dict, scenario: str, tool: str) -> dict:
    return json.loads((suite["folder"] / suite["rows"][scenario, tool].run_dir / "meta.json").read_text())


def test_a_tool_that_exits_0_with_output_that_parses_is_ok(suite):
    row = suite["rows"][CLOSED.id, "fake-ok"]
    assert row.status == "ok" and row.error == ""
    assert row.requests > 5 and row.rps > 0 and row.tool_version == "0.0-fake" and row.runtime == "fake"
    # The target counted exactly the tool's requests (its own status requests taken out).
    assert row.server_requests == row.requests
    assert row.rtt_measured_ms is not None and row.startup_s is None
    assert meta(suite, CLOSED.id, "fake-ok")["load_window_s"] is None


def test_a_non_zero_exit_is_failed_with_the_cause_and_its_figures_are_withheld_from_the_row(suite):
    row = suite["rows"][CLOSED.id, "fake-fail"]
    assert row.status == "failed"
    assert row.error == "exit status 3: fake: the connection pool broke"
    # Parsed all the same, but a failed run's figures are no results: meta.json keeps them for diagnosis.
    assert row.requests is None and row.rps is None and row.mem_avg_mb is None and row.cpu_avg_pct is None
    assert meta(suite, CLOSED.id, "fake-fail")["withheld_figures"]["requests"] > 5
    with (suite["folder"] / "runs.csv").open() as handle:
        written = next(r for r in csv.DictReader(handle) if r["tool"] == "fake-fail")
    assert written["requests"] == written["mem_avg_mb"] == written["cpu_avg_pct"] == ""


def test_a_tool_that_exits_0_with_no_request_is_failed_not_ok(suite):
    row = suite["rows"][CLOSED.id, "fake-zero"]
    assert row.status == "failed" and row.error.startswith("0 requests completed:"), (row.status, row.error)
    assert row.rps is None and row.requests is None        # a failed run's figures are withheld, as any


def test_a_tool_running_past_its_grace_is_killed_and_timeout(suite):
    row = suite["rows"][CLOSED.id, "fake-hang"]
    assert row.status == "timeout"
    assert row.error == f"still running {GRACE_S:.0f} s after its duration: killed"
    assert meta(suite, CLOSED.id, "fake-hang")["wall_s"] >= CLOSED.duration_s + GRACE_S
    hung = [p for p in psutil.process_iter(["cmdline"]) if str(TOOL) in (p.info["cmdline"] or []) and
            "hang" in (p.info["cmdline"] or [])]
    assert hung == []


def test_a_tool_working_past_its_grace_is_waited_for_and_ok(suite):
    """Idle in top, but its output grows (vegeta encoding 10M results took 2.2 min after a 300 s load): not hung."""
    row = suite["rows"][CLOSED.id, "fake-post"]
    assert row.status == "ok", row.error
    overtime = meta(suite, CLOSED.id, "fake-post")["overtime_s"]
    assert POST_S - GRACE_S - 1 <= overtime <= POST_S - GRACE_S + 2 * OVERTIME_CHECK_S, overtime
    assert f"worked {overtime:.0f} s past its duration + {GRACE_S:.0f} s grace" in row.notes
    assert meta(suite, CLOSED.id, "fake-hang")["overtime_s"] == 0.0     # idle and silent: killed at the first look


def test_output_the_parser_rejects_is_failed_with_the_parse_error(suite):
    row = suite["rows"][CLOSED.id, "fake-garbage"]
    assert row.status == "failed"
    run_dir = suite["folder"] / row.run_dir
    assert row.error == (f"could not parse fake-garbage's output in {run_dir}: ParseError: no JSON summary line in "
                         "the fake tool's output (its stderr: no output)")     # the folder it looked in
    assert row.requests is None and row.rps is None


def test_a_tool_reported_load_window_bounds_the_usage_figures(suite):
    row = suite["rows"][CLOSED.id, "fake-window"]
    assert row.status == "ok", row.error
    assert STARTUP_S <= row.startup_s           # its own sleep, plus an interpreter's start that a busy machine makes long
    recorded = meta(suite, CLOSED.id, "fake-window")
    assert recorded["load_window_s"] == [row.startup_s, row.startup_s + row.measured_s]
    # The start-up's ballast is the peak outside the window, not part of the run's memory figures.
    assert row.mem_startup_peak_mb > row.mem_peak_mb + BALLAST_MB / 2
    with (suite["folder"] / row.run_dir / "samples.csv").open() as handle:
        assert recorded["samples"] < len(list(csv.DictReader(handle)))


def test_a_wrapped_tool_is_sampled_without_its_wrapper_and_no_1_vu_run_is_made(suite):
    row = suite["rows"][CLOSED.id, "fake-wrapped-long"]
    assert row.status == "ok", row.error
    # The wrapper holds BALLAST_MB: counted, the tool's memory would be off by that much.
    assert 0 < row.mem_avg_mb < BALLAST_MB / 4
    # Memory per VU is a slope over the folder's VU levels (analysis/memory.py): no run of its own.
    assert not hasattr(row, "mem_per_vu_kb") and not hasattr(row, "mem_baseline_mb")
    assert not list(suite["folder"].glob("*/*/baseline-1vu"))


def test_a_rate_scenario_gives_a_closed_model_tool_an_unsupported_row_without_running_it(suite):
    row = suite["rows"][RATE.id, "fake-ok"]
    assert row.status == "unsupported"
    assert row.error == "open model not supported: closed model: no arrival rate is wired into this adapter"
    assert row.rate_target_rps == RATE.rate_rps and row.requests is None
    assert not (suite["folder"] / row.run_dir / "stdout.txt").exists()
    opened = suite["rows"][RATE.id, "fake-open"]
    assert opened.status == "ok" and opened.rate_target_rps == RATE.rate_rps and opened.rate_achieved_rps == opened.rps


def test_a_tool_the_runtime_could_not_prepare_is_a_failed_row_with_the_reason(suite):
    for scenario in (CLOSED.id, RATE.id):
        row = suite["rows"][scenario, "fake-unprepared"]
        assert row.status == "failed" and row.error == BROKEN["fake-unprepared"]


def test_every_run_is_a_row_and_the_suite_goes_on_past_failures(suite):
    expected = [(s.id, t.name) for s in (CLOSED, RATE) for t in TOOLS]
    assert suite["order"] == expected
    with (suite["folder"] / "runs.csv").open() as handle:
        written = [(r["scenario"], r["tool"], r["status"]) for r in csv.DictReader(handle)]
    assert written == [(s, t, suite["rows"][s, t].status) for s, t in expected]
    # Sessions: only the runs that started a tool (not the unprepared one, not the unsupported ones).
    started = [k for k, r in suite["rows"].items() if r.status != "unsupported" and k[1] != "fake-unprepared"]
    assert suite["runtime"].sessions == len(started)


def test_every_run_that_ran_times_its_phases_and_meta_says_the_harness_time_around_the_tool(suite):
    """Issue 33: record.json's phases_s and meta.json's overhead_s (every phase but the load, the load's own
    setup beside the tool, and the tool's time beyond its duration apart from the total)."""
    row = suite["rows"][CLOSED.id, "fake-ok"]
    record = json.loads((suite["folder"] / row.run_dir / "record.json").read_text())
    phases, overhead, wall = record["phases_s"], meta(suite, CLOSED.id, "fake-ok")["overhead_s"], \
        meta(suite, CLOSED.id, "fake-ok")["wall_s"]
    assert {"target_facts", "start", "shape", "probe", "load", "unshape", "logs", "stop"} == set(phases)
    assert phases["load"] >= wall - 1e-3 > 0   # phases_s keeps ms
    assert overhead["load_setup"] == pytest.approx(phases["load"] - wall, abs=2e-3)
    assert overhead["tool_beyond_duration"] == pytest.approx(wall - CLOSED.duration_s, abs=2e-3)
    assert overhead["total"] == pytest.approx(sum(v for k, v in overhead.items()
                                                  if k not in ("total", "tool_beyond_duration")), abs=0.01)
    # a run that never started has no phases to time
    unsupported = suite["rows"][RATE.id, "fake-ok"]
    assert "overhead_s" not in json.loads((suite["folder"] / unsupported.run_dir / "meta.json").read_text())


class RuntimeThatFailsToStart(FakeRuntime):
    def __enter__(self):
        raise HarnessError("the target did not start")


def test_a_runtime_that_fails_to_start_leaves_latest_and_its_report_where_they_were(tmp_path, monkeypatch):
    monkeypatch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))      # never the machine's lock
    root = tmp_path / "results"
    (root / "20260101T000000Z-fake" / "report").mkdir(parents=True)
    (root / "20260101T000000Z-fake" / "report" / "index.html").write_text("the previous report")
    (root / "latest").symlink_to("20260101T000000Z-fake")
    plan = Plan(runtime="fake", tools=[FakeTool("ok")], scenarios=[CLOSED], results_root=root, split=NO_SPLIT)
    with pytest.raises(HarnessError, match="the target did not start"):
        run_suite(plan, RuntimeThatFailsToStart())
    assert os.readlink(root / "latest") == "20260101T000000Z-fake"
    assert (root / "latest" / "report" / "index.html").read_text() == "the previous report"


def test_latest_moves_to_a_new_folder_with_its_first_row(tmp_path):
    from harness.store.results import ResultsFolder, RunRow
    (tmp_path / "old").mkdir()
    (tmp_path / "latest").symlink_to("old")
    folder = ResultsFolder.create(tmp_path, "fake")
    folder.write_json("environment.json", {"runtime": "fake"})
    assert os.readlink(tmp_path / "latest") == "old"
    folder.append(RunRow(tool="t", tool_version=None, runtime="fake", scenario="s", vus=1, rtt_target_ms=0.1,
                         duration_s=1))
    assert os.readlink(tmp_path / "latest") == folder.path.name


def test_text_from_outside_is_printed_as_it_is_never_as_markup(tmp_path, capsys):
    """A results path or a run's error holding `[/x]` raised rich's MarkupError mid-suite (a traceback, exit
    status 1, the suite gone); `[bold]` in it was taken as markup."""
    root = tmp_path / "a[/x]" / "results [bold]"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))      # never the machine's lock
        plan = Plan(runtime="fake", tools=[FakeTool("fail")], scenarios=[CLOSED], results_root=root, grace_s=GRACE_S,
                    split=NO_SPLIT)
        folder, (row,) = run_suite(plan, FakeRuntime({}))
        row.error = "the tool said [/x] then [bold]loud[/bold]"
        console.summarise(row)
    out = capsys.readouterr().out
    assert f"results: {folder.path}\n" in out and str(root) in str(folder.path)
    assert "   failed: the tool said [/x] then [bold]loud[/bold]\n" in out


def test_a_target_outside_the_harnesss_networks_gets_no_probe_either(tmp_path, monkeypatch):
    """ensure_allowed comes before the shaping and its calibration probes, not only before the tool (issue 34)."""
    from contextlib import contextmanager

    from fake_runtime import FakeSession
    from harness.store.results import ResultsFolder
    from harness.targets.file_server import Target

    class ExternalTarget(FakeRuntime):
        @contextmanager
        def session(self, adapter):
            yield FakeSession(Target("203.0.113.5", 80))

    monkeypatch.setattr(run, "shaped", lambda *args: pytest.fail("shaped (and probed) before the check"))
    with ExternalTarget() as runtime:
        settings = run.RunSettings(runtime, ResultsFolder.create(tmp_path, "fake"), shaper="toxiproxy")
        row = run.Run.new(settings, Scenario(id="vu2-rtt10", vus=2, rtt_ms=10, duration_s=1), FakeTool("ok")).execute().row
    assert row.status == "failed" and row.error.startswith("refusing to load 203.0.113.5"), row.error


def test_the_runspec_and_the_declarations_are_stored_with_the_run_and_read_back(suite):
    """Issue 50.1: the RunSpec the tool was given is saved with its part (never made again from the scenario),
    the adapter's declarations with the run; rederive reads both back."""
    from harness.tools.adapter import Declarations
    from harness.tools.output import RunSpec
    row = suite["rows"][RATE.id, "fake-open"]
    run_dir = suite["folder"] / row.run_dir
    record = json.loads((run_dir / "record.json").read_text())
    spec = RunSpec.from_record(record["parts"][0]["spec"], run_dir)
    assert (spec.vus, spec.rate_rps, spec.duration_s, spec.out_dir) == (2, 50, 1, run_dir)
    assert spec.url == record["parts"][0]["url"] and spec.to_record() == record["parts"][0]["spec"]
    tool = next(t for t in TOOLS if t.name == "fake-open")
    assert record["declarations"] == Declarations.of(tool).to_record() and record["declarations"]["open_model"]
    # the scorecard's capability declarations, once per folder (harness/store/declarations.py), as at run time
    from harness.store.declarations import declared_by, read_declarations
    recorded = read_declarations(suite["folder"])
    assert set(recorded) == {t.name for t in TOOLS} and recorded["fake-open"] == declared_by(tool)
