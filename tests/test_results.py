import csv

from harness.results import COLUMNS, ResultsFolder, RunRow

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
    assert (tmp_path / "latest").resolve() == second.path.resolve()
    with first.runs_csv.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["tool"] for r in rows] == ["wrk", "ab"]
    assert rows[1]["error"] == 'exit status 1: "quoted", with comma'
    assert first.path.name.endswith("-host") and second.path.name.endswith("-docker")
