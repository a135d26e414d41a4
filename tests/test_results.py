import csv
import re
from dataclasses import fields
from typing import get_type_hints

import pandas as pd
import pytest

from analysis.load import LATENCY, NUMERIC, load_results
from conftest import FIXTURES, REPO
from harness.errors import HarnessError
from harness.row import COPIED_METRICS
from harness.store.figures import Figures, Metrics
from harness.store.results import COLUMNS, ResultsFolder, RunRow, columns_markdown
from harness.store.upgrade import RETIRED

# runs.csv of a real run made before the columns were derived from Metrics (issue 12): the header
# a results folder gets must stay this, byte for byte, but for the retired columns (harness/store/upgrade.py).
PINNED = FIXTURES / "openmodel" / "stall-results" / "runs.csv"

CONTRACT = ["tool", "tool_version", "runtime", "scenario", "vus", "rtt_target_ms", "duration_s", "requests",
            "errors", "rps", "lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms",
            "lat_p95_ms", "lat_p99_ms", "lat_max_ms", "mem_avg_mb", "mem_peak_mb", "cpu_avg_pct",
            "server_requests", "status", "error"]


def row(**changes) -> RunRow:
    base = dict(tool="wrk", tool_version="4.1.0", runtime="host", scenario="vu20-rtt0.1", vus=20,
                rtt_target_ms=0.1, duration_s=5)
    return RunRow(**{**base, **changes})


def test_contract_columns_come_first_in_order():
    assert COLUMNS[:len(CONTRACT)] == CONTRACT


def test_unreported_metric_is_empty_not_zero(tmp_path):
    folder = ResultsFolder.create(tmp_path, "host")
    folder.append(row(requests=100, rps=20.5, lat_p50_ms=0.0, lat_p99_ms=None, status="ok"))
    (written,) = folder.rows()
    assert written["lat_p99_ms"] == "" and written["mem_avg_mb"] == ""
    assert written["lat_p50_ms"] == "0" and written["requests"] == "100"


def test_rows_append_and_latest_points_at_newest(tmp_path):
    first = ResultsFolder.create(tmp_path, "host")
    first.append(row(status="ok"))
    first.append(row(tool="ab", status="failed", error='exit status 1: "quoted", with comma'))
    second = ResultsFolder.create(tmp_path, "docker")
    assert (tmp_path / "latest").resolve() == first.path.resolve()     # until the new folder has a row
    second.append(row(status="ok"))
    assert (tmp_path / "latest").resolve() == second.path.resolve()
    with first.runs_csv.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["tool"] for r in rows] == ["wrk", "ab"]
    assert rows[1]["error"] == 'exit status 1: "quoted", with comma'
    assert first.path.name.endswith("-host") and second.path.name.endswith("-docker")


# Columns added after PINNED was measured, in order (new columns only ever go last; a retired one leaves).
ADDED_SINCE = [b"generators", b"limited_by", b"lat_below_resolution",                       # issues 14, 22
               b"wire_connect_ms", b"shaper_cpu_pct", b"rtt_loaded_ms", b"shaper_added_ms",   # 25
               b"wire_rate_rps", b"wire_rate_cv", b"wire_rate_min_window_rps", b"wire_gap_cv",   # capacity
               b"wire_schedule", b"target", b"keepalive", b"tls", b"backend_delay_ms", b"target_stack",  # targets
               b"target_version", b"server_connections", b"proxy_cpu_pct", b"wire_connections",
               b"wire_requests_per_connection", b"mem_growth_mb_per_s",
               b"protocol", b"streams", b"server_off_protocol_requests", b"wire_h2_connections",  # HTTP/2
               b"flow", b"relogin_every", b"server_logins", b"server_logins_refused", b"server_api_gets",  # flows
               b"server_api_gets_refused", b"lat_login_p50_ms", b"lat_login_p99_ms", b"lat_api_get_p50_ms",
               b"lat_api_get_p99_ms", b"lat_p99_9_ms", b"schema_version"]                     # issues 51, 50.2


def test_the_header_is_byte_identical_to_a_real_runs_csv(tmp_path):
    folder = ResultsFolder.create(tmp_path, "host")
    folder.append(row(status="ok"))
    written = folder.runs_csv.read_bytes().split(b"\r\n")[0]
    pinned = [name for name in PINNED.read_bytes().split(b"\r\n")[0].split(b",") if name.decode() not in RETIRED]
    assert written == b",".join([*pinned, *ADDED_SINCE])


def test_the_tools_figures_are_the_rows_columns_in_place():
    figures = [f.name for f in fields(Figures)]
    start = COLUMNS.index("duration_s") + 1
    assert COLUMNS[start:start + len(figures)] == figures
    assert [f.name for f in fields(Metrics)][:len(figures)] == figures


def test_every_metrics_field_reaches_the_row_with_its_type():
    """A field added to Metrics is copied into its column of the same name, or is one of the three
    the runner turns into something else (notes joined, load_start_s -> startup_s, source -> meta.json)."""
    assert {f.name for f in fields(Metrics)} == {*COPIED_METRICS, "notes", "load_start_s", "source"}
    metrics, rows = get_type_hints(Metrics), get_type_hints(RunRow)
    assert all(metrics[name] == rows[name] for name in COPIED_METRICS)


def test_the_docs_document_every_column_in_order():
    """docs/results.md's column table is generated (scripts/gen_docs.py); tests/test_docs.py checks it too."""
    page = (REPO / "docs" / "results.md").read_text()
    table = re.search(r"<!-- generated: runs-columns -->\n(.*?)<!-- end -->", page, re.S)
    assert table and table.group(1) == columns_markdown(), (
        "docs/results.md's column table differs from harness/store/results.py: run .venv/bin/python scripts/gen_docs.py")
    assert re.findall(r"^\| `(\w+)` \|", table.group(1), re.M) == COLUMNS


def test_analysis_reads_numbers_from_the_declared_types():
    hints = get_type_hints(RunRow)
    assert {"vus", "requests", "rps", "measured_s", "stall_ms", "expected_max_ms"} <= set(NUMERIC)
    assert not [c for c in NUMERIC if hints[c] in (str, bool, str | None, bool | None)]
    assert {c for c in COLUMNS if hints[c] in (int, float, int | None, float | None)} == set(NUMERIC)
    assert LATENCY == [c for c in COLUMNS if re.fullmatch(r"lat_(min|mean|p\d+|max)_ms", c)]


def test_an_old_folder_reads_a_column_it_lacks_as_not_measured():
    old = REPO / "tests" / "fixtures" / "schema0" / "20261123T003909Z-host"     # the sample of 2026-11-23
    header = next(csv.reader((old / "runs.csv").open()))
    assert "stall_ms" not in header and "requests" in header
    df = load_results(old)
    assert df["stall_ms"].isna().all() and pd.api.types.is_float_dtype(df["stall_ms"])
    assert df["requests"].notna().any()


def test_a_redone_run_starts_in_an_empty_folder_and_keeps_the_other_repeats(tmp_path):
    """A tool appending to its log (h2load --log-file) must not count an earlier attempt's requests."""
    folder = ResultsFolder.create(tmp_path, "host")
    first = folder.run_dir("s", "h2load")
    (first / "h2load.log").write_text("an earlier attempt\n")
    (first / "baseline-1vu").mkdir()
    second = folder.run_dir("s", "h2load", 2)
    (second / "stdout.txt").write_text("repeat 2\n")
    assert folder.fresh_run_dir("s", "h2load") == first
    assert sorted(p.name for p in first.iterdir()) == ["repeat-2"] and (second / "stdout.txt").is_file()
    assert list(folder.fresh_run_dir("s", "h2load", 2).iterdir()) == []


@pytest.mark.parametrize("content, message", [
    ("", "its environment.json is empty"), ("[]", "its environment.json holds a list, not a mapping"),
    ("\xff", "its environment.json is unreadable"), ('"host"', "holds a str"),
])
def test_resuming_a_folder_with_a_broken_environment_json_is_one_line(tmp_path, content, message):
    (tmp_path / "environment.json").write_bytes(content.encode("latin-1"))
    with pytest.raises(HarnessError) as refused:
        ResultsFolder.open(tmp_path, "host")
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert "leave out --resume" in str(refused.value)
