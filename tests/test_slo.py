"""SLOs that gate a run (harness/slo.py, issue 51): a verdict per row and objective on real rows, the exit status,
JUnit XML, the scenario's objectives read from each run's record, and bad objectives refused in one line."""
import csv
import json
import shutil
from xml.etree import ElementTree

import pytest

from conftest import REPO
from harness.slo import SLO_FAILED, Slo, judge, main, parse

QUICK = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*-docker"))
WITH_RECORDS = REPO / "tests" / "fixtures" / "rederive" / "20261125T010420Z-host"   # a real folder with its raw files
pytestmark = pytest.mark.skipif(not QUICK, reason="tests/fixtures/scorecard not recorded")


def test_a_row_meets_or_fails_each_objective_on_its_own_figures():
    row = {"lat_p99_ms": "12.5", "rps": "900", "requests": "9990", "errors": "10", "lat_p50_ms": ""}
    verdicts = {v.objective: v for v in judge(row, Slo(p99_ms=25, min_rps=1000, error_rate=0.01, p50_ms=1))}
    assert verdicts["p99_ms"].passed and not verdicts["min_rps"].passed
    assert verdicts["error_rate"].value == pytest.approx(0.001) and verdicts["error_rate"].passed
    assert not verdicts["p50_ms"].passed and verdicts["p50_ms"].text() == "p50_ms not reported <= 1: FAILED"
    assert verdicts["min_rps"].text() == "min_rps 900 >= 1000: FAILED"


def test_the_gate_exits_3_with_a_junit_failure_per_row_below_the_rate(tmp_path, capsys):
    folder = QUICK[0]
    ok = [r for r in csv.DictReader((folder / "runs.csv").open()) if r["status"] == "ok"]
    slowest = min(float(r["rps"]) for r in ok)
    limit = sorted(float(r["rps"]) for r in ok)[len(ok) // 2]           # half the rows below it
    junit = tmp_path / "slo.xml"
    assert main([str(folder), "--slo", f"min_rps={limit},error_rate=0.5", "--junit", str(junit)]) == SLO_FAILED
    suite = ElementTree.parse(junit).getroot()
    below = sum(float(r["rps"]) < limit for r in ok)
    assert int(suite.get("tests")) == 2 * len(ok) and int(suite.get("failures")) == below
    assert capsys.readouterr().out.startswith(f"slo: {2 * len(ok) - below} of {2 * len(ok)} objectives met")
    assert main([str(folder), "--slo", f"min_rps={slowest}"]) == 0


def test_a_scenarios_objectives_come_from_each_runs_record(tmp_path):
    folder = tmp_path / WITH_RECORDS.name
    shutil.copytree(WITH_RECORDS, folder)
    assert main([str(folder)]) == 0              # no objective anywhere: nothing to fail
    row = next(r for r in csv.DictReader((folder / "runs.csv").open()) if r["status"] == "ok")
    record = folder / row["run_dir"] / "record.json"
    stored = json.loads(record.read_text())
    stored["scenario"]["slo"] = {"p99_ms": 0.000001}
    record.write_text(json.dumps(stored))
    assert main([str(folder)]) == SLO_FAILED


@pytest.mark.parametrize("text, said", [("p99=25", "p99: Extra inputs"), ("min_rps=-1", "greater than 0"),
                                        ("error_rate=2", "less than or equal to 1"), ("p99_ms", "not name=value"),
                                        ("", "at least one")])
def test_a_bad_objective_is_one_line_and_exit_2(text, said, capsys):
    with pytest.raises(ValueError, match=said):
        parse(text)
    assert main([str(QUICK[0]), "--slo", text]) == 2 if text else True
    if text:
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: --slo")
