"""The scorecard (analysis/scorecard.py) built from real stored results folders, and the report's first
screen in headless Chromium."""
import csv
import json
import re
import shutil
from types import SimpleNamespace

import pandas as pd
import pytest

from analysis import load_results, scorecard
from analysis.charts import with_limits
from analysis.report import build
from conftest import REPO
from harness.store.declarations import DECLARATIONS_JSON, DECLARED, read_declarations, write_declarations

SAMPLE = sorted((REPO / "results" / "sample").iterdir())        # host and Docker, wrk and ab, 2 repetitions
STALL = REPO / "tests" / "fixtures" / "openmodel" / "stall-results"    # open-model suite, 18 tools, 1 run
QUICK3 = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*"))  # make bench-quick REPEAT=3, both runtimes
# what an empty cell may say: why it is empty and what would fill it
EXPLAINED = re.compile(r"^(not captured: run with CAPTURE=1|no stall run in these results: make bench-all "
                       r"SCENARIOS=scenarios/open-model\.yaml|no ok .*|one run: no spread \(REPEAT=3 or more\)|"
                       r"not measurable.*|not reported: .*|none: .*|unknown: .*|one VU level \(\d+\): a slope needs two(; grows within a run .*)?|"
                       r"no run with memory samples|ok at every VU level tried \(up to \d+\)|"
                       r"not measured by this suite: needs three VU levels at one RTT .*|no growth per VU measurable .*|"
                       r"no shaped scenario in these results .*|no p50 in .*)$")
FOLDERS = {"sample": SAMPLE, "stall": [STALL], "quick-repeat3": QUICK3}


def card(folders) -> list[dict]:
    return scorecard.build(with_limits(load_results(*folders)))


@pytest.mark.parametrize("name", FOLDERS)
def test_every_cell_is_filled_with_its_source_or_explained(name):
    folders = FOLDERS[name]
    if not folders:
        pytest.skip("tests/fixtures/scorecard not recorded yet")
    df = load_results(*folders)
    rows = card(folders)
    assert [r["tool"] for r in rows] == sorted(df["label"].unique())
    for row in rows:
        for column in scorecard.COLUMNS:
            cell = row[column]
            assert cell.text, (row["tool"], column)
            if cell.value is None:
                assert EXPLAINED.match(cell.text), (row["tool"], column, cell.text)
            elif column not in ("open_model", "login_flow", *scorecard.FEATURES) or "adapter.py" not in cell.source:
                # the source names runs of this tool in these results
                runs = [part.split(": ")[-1].split(" (")[0] for part in cell.source.split("; ")]
                for run in runs:
                    folder, _, run_dir = run.partition("/")
                    mine = df[(df["folder"] == folder) & (df["label"] == row["tool"])]
                    assert run_dir in set(mine["run_dir"]), (row["tool"], column, run)


def test_one_or_two_runs_per_tool_are_never_ranked_nor_called_stable():
    """The stall folder has one run per tool, results/sample two: neither is enough for an interval."""
    for row in card([STALL]) + card(SAMPLE):
        assert not re.search(r"rank \d", row["req_per_cpu_s"].text), row["req_per_cpu_s"].text
        assert row["rps_cv"].text in ("one run: no spread (REPEAT=3 or more)",) or "runs)" in row["rps_cv"].text


def test_the_stall_column_and_sentence_follow_each_tools_verdict():
    rows = {r["tool"]: r for r in card([STALL])}
    assert rows["oha"]["stall"].text == "50 conns: p99 shows it"
    assert rows["k6"]["stall"].text == "50 conns: max only"
    assert rows["wrk"]["stall"].text == "50 users: p99 shows it"
    assert "shows a 1 s stall in p99 at 50 connections" in rows["oha"]["sentence"]
    assert "hides a 1 s stall from p99 (only in max) at 50 connections" in rows["k6"]["sentence"]
    assert rows["gatling"]["open_model"].text == "not wired" and rows["ab"]["open_model"].text == "no"
    assert rows["vegeta"]["open_model"].text == "yes"


def test_the_stall_at_two_budgets_gives_both_verdicts():
    """The same real k6 stall row, as if run again with 2,000 connections and then seen in p99."""
    df = with_limits(load_results(STALL))
    again = df[(df["tool"] == "k6") & (df["scenario"] == "rate1000-rtt0.1-stall1s")].copy()
    again["scenario"], again["vus"] = "rate1000-rtt0.1-stall1s-2000conns", 2000
    again["lat_p99_ms"] = again["expected_p99_ms"]
    rows = {r["tool"]: r for r in scorecard.build(pd.concat([df, again], ignore_index=True))}
    assert rows["k6"]["stall"].text == "50 conns: max only; 2,000 conns: p99 shows it"
    assert "at 50 connections; shows a 1 s stall in p99 at 2,000 connections" in rows["k6"]["sentence"]


def test_max_vus_names_what_broke_above():
    df = with_limits(load_results(*SAMPLE))
    broken = df.copy()
    high = broken["scenario"] == "vu100-rtt50"
    broken.loc[high & (broken["tool"] == "ab") & (broken["repeat"] == 2), ["status", "error"]] = \
        ["failed", "apr_socket_recv: Connection reset by peer (104)"]
    rows = {r["tool"]: r for r in scorecard.build(broken)}
    ab = [r for t, r in rows.items() if t.startswith("ab")]
    assert any(r["max_vus_ok"].text == "20; failed at 100 VUs (1/2 runs): apr_socket_recv: Connection reset by peer (104)"
               for r in ab), [r["max_vus_ok"].text for r in ab]
    assert any("ran ok up to 20 VUs (failed at 100)" in r["sentence"] for r in ab)
    # nothing failed: no figure (it would only repeat the highest level tried), and the reason
    assert all(rows[t]["max_vus_ok"].value is None and rows[t]["max_vus_ok"].text == "ok at every VU level tried (up to 100)"
               for t in rows if t.startswith("wrk"))


@pytest.mark.skipif(not QUICK3, reason="tests/fixtures/scorecard not recorded yet")
def test_three_repetitions_give_ranks_ties_and_stability():
    """make bench-quick REPEAT=3 (Docker): wrk and ab, whose intervals overlap, share rank 1 and are named
    in each other's sentence; the Python and Node tools come last; every tool has a CV over 3 runs."""
    docker = [f for f in QUICK3 if f.name.endswith("-docker")]
    rows = {r["tool"]: r for r in card(docker)}
    speed = {tool: row["req_per_cpu_s"].facts for tool, row in rows.items()}
    assert speed["wrk"]["rank"] == speed["ab"]["rank"] == 1
    assert "ab" in speed["wrk"]["tied"] and "wrk" in speed["ab"]["tied"]
    assert "among the fastest per core" in rows["wrk"]["sentence"] and "ab" in rows["wrk"]["sentence"]
    assert rows["wrk"]["req_per_cpu_s"].text.endswith("rank =1")
    last = max(f["rank"] for f in speed.values() if f.get("rank"))
    assert speed["locust-http"]["rank"] == last and speed["artillery"]["rank"] >= last - 1
    for tool, row in rows.items():
        assert row["rps_cv"].text.endswith(", 3 runs)"), (tool, row["rps_cv"].text)
        if speed[tool]["tied"]:
            assert "tied with" in row["sentence"]


@pytest.mark.skipif(not QUICK3, reason="tests/fixtures/scorecard not recorded yet")
def test_the_summary_ranks_rps_per_scenario_with_ties(tmp_path):
    from test_report import parse
    docker = [f for f in QUICK3 if f.name.endswith("-docker")]
    page = parse(build(docker, tmp_path / "report"))
    header, *body = page.shown["summary"]
    ranks = {(r[0], r[1]): r[header.index("rank")] for r in body}
    assert all(ranks.values()), "every tool has 3 ok runs: every one is ranked"
    assert ranks[("vu20-rtt0.1", "locust-http")] == str(max(int(v.lstrip("=")) for (s, _), v in ranks.items()
                                                             if s == "vu20-rtt0.1"))
    # at 100 VUs and 50 ms most tools reach VUs/RTT: the intervals overlap, many tools share a rank
    assert sum(v.startswith("=") for (s, _), v in ranks.items() if s == "vu100-rtt50") >= 5


def test_scorecard_csv_holds_every_cell_and_its_source(report_of):
    with (report_of(SAMPLE).parent / "scorecard.csv").open() as handle:
        table = list(csv.DictReader(handle))
    rows = card(SAMPLE)
    assert [r["tool"] for r in table] == [r["tool"] for r in rows]
    for written, row in zip(table, rows):
        assert written["sentence"] == row["sentence"]
        for column in scorecard.COLUMNS:
            assert written[column] == row[column].text and written[f"{column}_source"] == row[column].source


@pytest.mark.e2e
def test_the_first_screen_is_the_picture_and_the_verdict_in_a_real_browser(tmp_path, report_of):
    """Issue 48 on committed real results (the as-typed tier checks a fresh quick start's report the same way)."""
    from browser import first_screen
    index = report_of(QUICK3 or SAMPLE)
    seen = first_screen(index, tmp_path / "first-screen.png")
    assert seen.inside("banner") and seen.inside("headline") and seen.inside("verdict"), seen.boxes
    assert seen.console_errors == [] and seen.images_ok
    assert len(seen.claim_verdicts) >= 12 and set(seen.claim_verdicts) <= {"holds", "differs", "not measured"}


def test_a_column_no_tool_has_is_said_once_on_the_page(report_of):
    absent = scorecard.absent_columns(card(SAMPLE))
    assert absent["p50_error_ms"] == "p50 − wire ms: not captured: run with CAPTURE=1"
    assert "req_per_cpu_s" not in absent or absent["req_per_cpu_s"].startswith("req / CPU-s: ")
    html = report_of(SAMPLE).read_text()
    assert html.count("not captured: run with CAPTURE=1") == 2      # p50 and p99, once each, not per tool
    assert ">p50 − wire ms</th>" not in html


def test_http2_is_in_every_tools_column_but_in_a_sentence_only_where_an_http2_scenario_ran():
    rows = card(QUICK3 or SAMPLE)
    wrk = next(r for r in rows if r["tool"].startswith("wrk"))
    assert wrk["h2"].text == "no" and "wrk speaks HTTP/1.1 only" in wrk["h2"].source
    assert not [r["sentence"] for r in rows if re.search(r"no h2|h2c? (costs|changes)", r["sentence"])]
    df = with_limits(load_results(*(QUICK3 or SAMPLE)))
    df.loc[df.index[:1], "protocol"] = "h2c"                 # one row of an HTTP/2 scenario
    said = {r["tool"]: r["sentence"] for r in scorecard.build(df)}
    assert "no h2c" in said[next(t for t in said if t.startswith("wrk"))]


def test_the_capabilities_are_the_folders_as_recorded_else_todays(tmp_path):
    """Issue 50.2: a folder's declarations.json (what its runs' adapters declared) is what its scorecard says, not
    today's adapters; a folder written before it reads today's through harness/store/upgrade.py."""
    folder = tmp_path / SAMPLE[0].name
    shutil.copytree(SAMPLE[0], folder)
    today = scorecard.todays_declarations()
    assert read_declarations(folder) is None and scorecard.recorded_declarations([folder]) == today
    then = {"wrk": {**today["wrk"], "tls": "not wired in this adapter yet", "open_model": True}}
    write_declarations(folder, {"wrk": SimpleNamespace(**then["wrk"])})
    assert read_declarations(folder) == then
    rows = {r["tool"]: r for r in scorecard.build(with_limits(load_results(folder)),
                                                   scorecard.recorded_declarations([folder]))}
    assert rows["wrk"]["tls"].text == "no" and rows["wrk"]["open_model"].text == "yes"
    assert rows["ab"]["tls"].text.startswith("unknown: no adapter")          # not recorded in this folder
    assert {r["tool"]: r["tls"].text for r in card([folder])}["wrk"].startswith("yes")   # today's wrk: TLS


def test_a_recorded_declaration_of_the_wrong_type_is_no_declaration(tmp_path):
    (tmp_path / DECLARATIONS_JSON).write_text(json.dumps({"wrk": {"tls": 1}, "ab": dict.fromkeys(DECLARED, True)}))
    assert read_declarations(tmp_path) == {"ab": dict.fromkeys(DECLARED, True)}
    (tmp_path / DECLARATIONS_JSON).write_text("[1, 2]")
    assert read_declarations(tmp_path) is None
