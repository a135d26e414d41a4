"""The report's stall section on real results (tests/fixtures/openmodel/stall-results/: runs.csv and
environment.json of a real run of scenarios/open-model.yaml on the host runtime)."""
import csv
import shutil
from pathlib import Path

import pytest

from analysis.report import build
from analysis.stall import COLUMNS, verdict
from test_report import parse

RESULTS = Path(__file__).resolve().parent / "fixtures" / "openmodel" / "stall-results"


def test_the_stall_table_and_chart_cover_every_successful_stall_run(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(RESULTS, folder)
    page = parse(build([folder], tmp_path / "report"))
    rows = [r for r in csv.DictReader((RESULTS / "runs.csv").open()) if r["stall_ms"] and r["status"] == "ok"]
    table = page.tables["stall"]
    assert table[0] == COLUMNS
    assert sorted((r[0], r[1]) for r in table[1:]) == sorted((r["scenario"], r["tool"]) for r in rows)
    for line in table[1:]:
        source = next(r for r in rows if (r["scenario"], r["tool"]) == (line[0], line[1]))
        for column in ("lat_p99_ms", "expected_p99_ms", "lat_max_ms"):
            cell = line[COLUMNS.index(column)]
            if not source[column]:         # a tool without percentiles (siege, tsung): a gap, never 0
                assert cell == "", column
                continue
            assert float(cell.replace(",", "")) == pytest.approx(float(source[column]), rel=0.01), column
    assert (tmp_path / "report" / "stall.png").stat().st_size > 1000
    assert "stall.png" in page.images
    verdicts = {(r[0], r[1]): r[-1] for r in table[1:]}
    assert verdicts[("rate1000-rtt0.1-stall1s", "oha")] == "p99 shows it"      # --latency-correction
    assert verdicts[("rate1000-rtt0.1-stall1s", "k6")] == "max only"


def test_a_report_without_stall_runs_has_no_stall_section(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(RESULTS, folder)
    with (folder / "runs.csv").open() as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, [r for r in reader if not r["stall_ms"]]
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    page = parse(build([folder], tmp_path / "report"))
    assert "stall" not in page.tables and not (tmp_path / "report" / "stall.png").exists()


def test_verdicts():
    base = {"expected_p99_ms": 800.0, "stall_actual_ms": 1000.0}
    assert verdict({**base, "lat_p99_ms": 790.0, "lat_max_ms": 1000.0}) == "p99 shows it"
    assert verdict({**base, "lat_p99_ms": 5.0, "lat_max_ms": 995.0}) == "max only"
    assert verdict({**base, "lat_p99_ms": 5.0, "lat_max_ms": 40.0}) == "hidden"
