"""A results folder as JSON Lines and OpenMetrics (analysis/export.py, issue 51): the schema kept in the repo is the
one the row's definition gives, and export -> parse gives the same figures back, on real results."""
import csv
import json
import math
import shutil

import jsonschema
import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from analysis import export
from harness.store import hdr
from harness.store.upgrade import RETIRED
from conftest import REPO

QUICK3 = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*"))
SAMPLE = sorted((REPO / "results" / "sample").iterdir())


def test_the_kept_schema_is_the_rows_definition():
    kept = json.loads(export.SCHEMA_FILE.read_text())
    assert kept == export.row_schema(), "run `python -m analysis.export --write-schema` after changing RunRow"
    assert kept["properties"]["rps"]["description"].startswith("requests per second")


def test_a_planted_change_in_the_schema_is_caught():
    planted = export.row_schema()
    planted["properties"]["rps"]["anyOf"] = [{"type": "string"}]
    assert planted != json.loads(export.SCHEMA_FILE.read_text())


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export") / (QUICK3 or SAMPLE)[0].name
    shutil.copytree((QUICK3 or SAMPLE)[0], folder)
    assert export.main([str(folder)]) == 0
    with (folder / "runs.csv").open(newline="") as handle:
        return folder, list(csv.DictReader(handle))


def test_every_row_is_valid_and_equals_runs_csv(exported):
    folder, stored = exported
    rows = [json.loads(line) for line in (folder / "export" / "rows.jsonl").read_text().splitlines()]
    validator = jsonschema.Draft202012Validator(json.loads(export.SCHEMA_FILE.read_text()))
    assert len(rows) == len(stored) and all(validator.is_valid(r) for r in rows)
    for row, csv_row in zip(rows, stored):
        for column, text in csv_row.items():
            if column in RETIRED:                  # an older folder's retired column (harness/store/upgrade.py)
                assert column not in row, column
                continue
            value = row[column]
            if text == "":
                assert value is None or value == "", column
            elif isinstance(value, bool):
                assert str(value) == text, column
            elif isinstance(value, (int, float)):
                assert value == pytest.approx(float(text)), column
            else:
                assert value == text, column


def test_openmetrics_parses_back_to_the_same_figures(exported):
    folder, stored = exported
    families = {f.name: f for f in text_string_to_metric_families((folder / "export" / "metrics.om").read_text())}
    rps = {(s.labels["tool"], s.labels["scenario"], s.labels["repeat"]): s.value for s in families["lth_rps"].samples}
    for row in stored:
        if row["rps"]:
            assert rps[(row["tool"], row["scenario"], row["repeat"])] == pytest.approx(float(row["rps"]))
    assert set(families["lth_lat_p99_ms"].samples[0].labels) == set(export.LABELS)
    assert all(math.isfinite(s.value) for f in families.values() for s in f.samples)


def test_a_row_its_schema_refuses_is_one_line_and_exit_2(tmp_path, capsys):
    folder = tmp_path / "bad"
    shutil.copytree(SAMPLE[0], folder)
    text = (folder / "runs.csv").read_text().splitlines()
    header = text[0].split(",")
    cells = text[1].split(",")
    cells[header.index("vus")] = "twenty"
    (folder / "runs.csv").write_text("\n".join([text[0], ",".join(cells), *text[2:]]) + "\n")
    assert export.main([str(folder)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "line 2: vus:" in said and not (folder / "export").exists()
    assert export.main([str(tmp_path / "nothing")]) == 2


def test_each_runs_hdr_logs_are_exported_under_its_labels_and_read_back_by_the_library(tmp_path):
    """One run's log, and a run of two generators whose parts' logs are added into one."""
    folder = tmp_path / "run"
    (folder / "vu20" / "wrk").mkdir(parents=True)
    values = np.random.default_rng(51).lognormal(-1, 1, 2000)
    hdr.write_log(hdr.counts_of(values), folder / "vu20" / "wrk", ["source: a test"])
    for index, half in enumerate((values[:700], values[700:]), start=1):
        (folder / "vu100" / "wrk" / f"generator-{index}").mkdir(parents=True)
        hdr.write_log(hdr.counts_of(half), folder / "vu100" / "wrk" / f"generator-{index}", ["source: a part"])
    rows = [{"tool": "wrk", "scenario": s, "runtime": "host", "protocol": "http/1.1", "repeat": 1, "run_dir": f"{s}/wrk"}
            for s in ("vu20", "vu100")]
    written = export.hdr_logs(folder, rows)
    assert [p.name for p in written] == ["wrk-vu20-host-http/1.1-1.hlog".replace("/", "_"),
                                         "wrk-vu100-host-http/1.1-1.hlog".replace("/", "_")]
    for path in written:
        log = hdr.read_log(path)
        assert log.get_total_count() == values.size
        assert log.get_value_at_percentile(90) / hdr.NS_PER_MS == pytest.approx(np.percentile(values, 90), rel=2e-3)
