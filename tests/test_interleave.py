"""lth host-vs-docker's order of runs (harness/suite/interleave.py): both runtimes on every (scenario, tool, repeat), one
right after the other, the one going first alternating; and the resumed folders keep what the other steps wrote."""
from __future__ import annotations

from collections import Counter

from harness.suite.interleave import Step, interleaved


def test_both_runtimes_alternate_run_by_run():
    assert interleaved(["a", "b"], ["wrk"], 1) == [Step("host", "a", "wrk", 1), Step("docker", "a", "wrk", 1),
                                                   Step("docker", "b", "wrk", 1), Step("host", "b", "wrk", 1)]


def test_a_tools_two_runtimes_are_adjacent_not_a_whole_scenario_of_tools_apart():
    steps = interleaved(["a"], ["wrk", "ab", "k6"], 1)
    assert [(s.tool, s.runtime) for s in steps] == [("wrk", "host"), ("wrk", "docker"), ("ab", "docker"),
                                                     ("ab", "host"), ("k6", "host"), ("k6", "docker")]


def test_repeats_come_after_every_scenario_and_tool_and_keep_alternating():
    steps = interleaved(["a", "b", "c"], ["wrk"], 3)
    assert [(s.scenario, s.repeat) for s in steps[::2]] == [(x, r) for r in (1, 2, 3) for x in "abc"]
    firsts = [s.runtime for s in steps[::2]]
    assert firsts == ["host", "docker"] * 4 + ["host"]


def test_every_runtime_runs_every_run_once_and_goes_first_as_often():
    steps = interleaved(["a", "b"], ["wrk", "ab"], 3)
    assert Counter(steps) == Counter({Step(rt, x, t, r): 1 for rt in ("host", "docker") for x in "ab"
                                      for t in ("wrk", "ab") for r in (1, 2, 3)})
    firsts = Counter(s.runtime for s in steps[::2])
    assert firsts["host"] == firsts["docker"] == 6
    assert all(steps[i].runtime != steps[i + 1].runtime
               and (steps[i].scenario, steps[i].tool, steps[i].repeat)
               == (steps[i + 1].scenario, steps[i + 1].tool, steps[i + 1].repeat)
               for i in range(0, len(steps), 2))


def test_one_scenario_one_tool_one_repeat_is_one_pair():
    assert interleaved(["a"], ["wrk"], 1) == [Step("host", "a", "wrk", 1), Step("docker", "a", "wrk", 1)]


def _resumed(tmp_path, keep_unselected: bool) -> tuple[list[tuple[str, str, str]], set, str]:
    """A host folder holding a failed and an ok row of scenario 1 and a failed row of scenario 2, resumed for
    scenario 2 alone, as the next step of lth host-vs-docker does: the rows left, and the runs taken as finished."""
    import json
    from dataclasses import replace
    from harness import scenarios
    from harness.store.results import COLUMNS, ResultsFolder
    from harness.suite.plan import Plan
    from harness.suite.resume import open_folder
    from harness.tools import registry
    folder = tmp_path / "20260101T000000Z-host"
    folder.mkdir()
    (folder / "environment.json").write_text(json.dumps({"runtime": "host"}))
    first, second = (s.id for s in scenarios.select("scenarios/quick.yaml"))
    rows = [(first, "wrk", "ok"), (first, "ab", "failed"), (second, "wrk", "failed")]
    ResultsFolder(folder).rewrite([{**dict.fromkeys(COLUMNS, ""), "scenario": s, "tool": t, "repeat": "1",
                                    "status": status} for s, t, status in rows])
    plan = Plan(runtime="host", tools=registry.select("wrk"), results_root=tmp_path, resume=folder,
                scenarios=scenarios.select(f"scenarios/quick.yaml:{second}"))
    opened, finished = open_folder(replace(plan, keep_unselected=keep_unselected))
    return [(r["scenario"], r["tool"], r["status"]) for r in opened.rows()], finished, first


def test_a_step_resuming_a_folder_keeps_the_other_scenarios_failed_rows(tmp_path):
    left, finished, first = _resumed(tmp_path, keep_unselected=True)
    assert left == [(first, "wrk", "ok"), (first, "ab", "failed")]     # scenario 2's failed row: redone
    assert finished == {(first, "wrk", 1)}


def test_an_ordinary_resume_still_drops_every_failed_row(tmp_path):
    left, _, first = _resumed(tmp_path, keep_unselected=False)
    assert left == [(first, "wrk", "ok")]


def test_a_step_resuming_a_folder_keeps_the_other_tools_failed_rows_of_its_scenario(tmp_path):
    import json
    from dataclasses import replace
    from harness import scenarios
    from harness.store.results import COLUMNS, ResultsFolder
    from harness.suite.plan import Plan
    from harness.suite.resume import open_folder
    from harness.tools import registry
    folder = tmp_path / "20260101T000000Z-docker"
    folder.mkdir()
    (folder / "environment.json").write_text(json.dumps({"runtime": "docker"}))
    scenario = scenarios.select("scenarios/quick.yaml")[0].id
    ResultsFolder(folder).rewrite([{**dict.fromkeys(COLUMNS, ""), "scenario": scenario, "tool": tool, "repeat": "1",
                                    "status": "failed"} for tool in ("ab", "wrk")])
    plan = Plan(runtime="docker", tools=registry.select("wrk"), results_root=tmp_path, resume=folder,
                scenarios=scenarios.select(f"scenarios/quick.yaml:{scenario}"), keep_unselected=True)
    opened, finished = open_folder(plan)
    assert [(r["tool"], r["status"]) for r in opened.rows()] == [("ab", "failed")] and finished == set()


def test_a_step_is_a_run_of_its_scenario_and_tool_up_to_its_repeat_in_its_runtime(tmp_path):
    from harness import cli
    args = cli.build_parser().parse_args(["host-vs-docker", "--tools", "wrk,ab", "--scenarios", "scenarios/quick.yaml",
                                          "--repeat", "3", "--results-root", str(tmp_path), "--no-isolation"])
    scenario = "vu20-rtt0.1"
    plan = cli._plan(cli._step_arguments(args, Step("docker", scenario, "ab", 2), None))
    assert (plan.runtime, [s.id for s in plan.scenarios], plan.repeat) == ("docker", [scenario], 2)
    assert [t.name for t in plan.tools] == ["ab"] and plan.results_root == tmp_path and plan.resume is None
