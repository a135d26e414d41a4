"""One versioned result (issue 50.2): every row carries schema_version, and harness/store/upgrade.py is the one
place an older folder's rows become the current schema's, for the report's loader and for rederive. An old
folder loads through it and renders; a folder of a newer schema is refused in one line, exit 2, nothing lost."""
from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.load import load_results
from harness.store.record import SCHEMA_VERSION
from harness.store.results import COLUMNS, ResultsFolder, RunRow, read_meta_row, write_meta
from harness.store.upgrade import RETIRED, FutureSchema, upgrade_header, upgrade_row, upgrade_rows, version_of

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
# Written before targets, the limited_by codes and the lat_below_resolution column: every fix applies.
OLD = FIXTURES / "scorecard" / "20261125T142820Z-host"
RECORDED = FIXTURES / "rederive" / "20261125T010420Z-host"     # runs with record.json, for rederive


def old_row(**cells: str) -> dict[str, str]:
    return {"tool": "wrk", "limited_by": "", "lat_added_ms": "", "wire_p50_ms": "", "notes": "",
            "lat_below_resolution": "", "mem_per_vu_kb": "", "repeat": "", **cells}


def test_a_row_without_the_column_is_version_1_and_upgrades_to_the_current():
    assert version_of(old_row()) == 1 and SCHEMA_VERSION == 2
    upgraded = upgrade_row(old_row())
    assert upgraded["schema_version"] == "2"
    assert (upgraded["target"], upgraded["keepalive"], upgraded["tls"], upgraded["protocol"], upgraded["repeat"]) \
        == ("nginx", "True", "False", "http/1.1", "1")


@pytest.mark.parametrize("cells, column, expected", [
    ({"limited_by": "neither (latency or the tool's own limits)"}, "limited_by", "neither"),
    ({"limited_by": "other processes on the machine"}, "limited_by", "other processes"),
    ({"limited_by": "tool"}, "limited_by", "tool"),
    ({"lat_added_ms": "-0.3"}, "lat_added_ms", ""),                                   # p50 - RTT, before --capture
    ({"lat_added_ms": "0.3", "wire_p50_ms": "1.2"}, "lat_added_ms", "0.3"),
    ({"notes": "lat_min_ms below the 1 ms timing resolution, left empty: lat_min_ms, lat_p50_ms"},
     "lat_below_resolution", '["lat_min_ms", "lat_p50_ms"]'),
    ({"target": "haproxy", "repeat": "3"}, "target", "haproxy"),
    ({"status": "failed"}, "limited_by", "n/a"),                                       # a failed run's cell: withheld
    ({"status": "ok", "tool_saturated": "True", "target_saturated": "False"}, "limited_by", "tool"),
    ({"status": "ok", "tool_saturated": "False", "target_saturated": "False", "cpu_avg_pct": "120",
      "target_cpu_pct": "70"}, "limited_by", "shared CPUs"),                           # no isolation, 2 CPUs
    ({"status": "ok", "tool_saturated": "False", "target_saturated": "False", "cpus_tool": "0",
      "cpu_avg_pct": "120", "target_cpu_pct": "70"}, "limited_by", "neither"),
    ({"status": "ok"}, "limited_by", "not measured"),
])
def test_each_legacy_fix_is_made_once_in_the_upgrade(cells, column, expected):
    row = old_row(**cells)
    assert upgrade_row(row, all_cpus=2)[column] == expected
    assert row == old_row(**cells)                                                    # the input is untouched


@pytest.mark.parametrize("version", ["", "2"])
def test_the_retired_columns_leave_the_row_and_the_header(version):
    row = old_row(mem_per_vu_kb="20.5", mem_baseline_mb="3.1", schema_version=version)
    assert not set(RETIRED) & set(upgrade_row(row))
    assert upgrade_header(["tool", "mem_per_vu_kb", "limited_by", "mem_baseline_mb"]) == \
        ["tool", "limited_by", "schema_version"]


def test_a_current_row_is_left_as_written():
    row = {"tool": "wrk", "limited_by": "neither", "lat_added_ms": "0.2", "wire_p50_ms": "", "schema_version": "2",
           "target": ""}
    assert upgrade_row(row) == row


@pytest.mark.parametrize("cell", ["3", "99", "two"])
def test_a_newer_or_unreadable_version_is_refused(cell):
    with pytest.raises(FutureSchema, match="schema_version"):
        upgrade_rows([old_row(), old_row(schema_version=cell)])


def test_a_new_row_says_its_version_in_runs_csv(tmp_path):
    folder = ResultsFolder.create(tmp_path, "host")
    folder.append(RunRow(tool="wrk", tool_version="4", runtime="host", scenario="s", vus=1, rtt_target_ms=0,
                         duration_s=1, status="ok"))
    assert folder.rows()[0]["schema_version"] == str(SCHEMA_VERSION) and COLUMNS[-1] == "schema_version"


def test_a_meta_row_keeps_its_version(tmp_path):
    """A resumed folder's finished run is read from its meta.json: one stored before the field is version 1."""
    assert read_meta_row(RECORDED / "vu20-rtt0.1" / "wrk").schema_version == 1
    write_meta(tmp_path, RunRow(tool="wrk", tool_version="4", runtime="host", scenario="s", vus=1, rtt_target_ms=0,
                                duration_s=1, status="ok"), {})
    assert read_meta_row(tmp_path).schema_version == SCHEMA_VERSION


def test_an_old_folder_loads_through_the_upgrade():
    frame = load_results(OLD)
    assert (frame["schema_version"] == SCHEMA_VERSION).all() and (frame["target"] == "nginx").all()
    with (OLD / "runs.csv").open(newline="") as handle:
        stored = list(csv.DictReader(handle))
    assert "schema_version" not in stored[0] and any(r["limited_by"].startswith("neither (") for r in stored)
    assert not frame["limited_by"].fillna("").str.contains(r"\(").any()
    assert not set(RETIRED) & set(frame.columns)


def report(folder: Path, out: Path | None = None) -> subprocess.CompletedProcess:
    extra = ["--out", str(out)] if out else []
    return subprocess.run([sys.executable, "-m", "analysis.report", str(folder), *extra], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_an_old_folder_renders(tmp_path):
    """On a copy: a report locks its folder, and other tests read the fixture at the same time."""
    folder = shutil.copytree(OLD, tmp_path / OLD.name)
    result = report(folder)
    assert result.returncode == 0, result.stderr
    assert (folder / "report" / "index.html").is_file()


def checksums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def planted_future(tmp_path: Path, source: Path) -> Path:
    """A copy of ``source`` whose last row says a schema version newer than this checkout's."""
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows, header = list(reader), [*(reader.fieldnames or []), "schema_version"]
    rows[-1]["schema_version"] = str(SCHEMA_VERSION + 1)
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        writer.writerows(rows)
    return folder


def test_the_report_of_a_future_version_is_one_line_exit_2_and_nothing_lost(tmp_path):
    folder = planted_future(tmp_path, OLD)
    before = checksums(folder)
    result = report(folder)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"schema_version {SCHEMA_VERSION + 1} is newer" in result.stderr
    assert str(folder / "runs.csv") in result.stderr and "Traceback" not in result.stderr
    assert checksums(folder) == before and not (folder / "report").exists()


def test_rederive_refuses_a_future_version_with_nothing_written(tmp_path):
    folder = planted_future(tmp_path, RECORDED)
    before = checksums(folder)
    result = subprocess.run([sys.executable, "-m", "harness", "rederive", str(folder)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "is newer than this checkout's" in result.stderr
    assert "nothing was re-derived" in result.stderr and "Traceback" not in result.stderr
    assert checksums(folder) == before
