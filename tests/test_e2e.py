"""End to end through the CLI users call: real nginx, real wrk and ab, both runtimes."""
import csv
from pathlib import Path

import pytest

from conftest import harness, require_root_tools
from harness.runtimes.docker import docker_available

pytestmark = pytest.mark.e2e
DURATION_S = "3"


def run_suite(tmp_path: Path, runtime: str, scenarios: str = "scenarios/quick.yaml:vu20-rtt0.1",
              tools: str = "wrk,ab") -> tuple[object, list[dict]]:
    result = harness("run", "--runtime", runtime, "--tools", tools, "--scenarios", scenarios,
                     "--duration", DURATION_S, "--results-root", str(tmp_path))
    runs_csv = tmp_path / "latest" / "runs.csv"
    rows = list(csv.DictReader(runs_csv.open())) if runs_csv.exists() else []
    return result, rows


def assert_real_run(row: dict, results: Path) -> None:
    assert row["status"] == "ok", row["error"]
    assert float(row["rps"]) > 0
    percentiles = [float(row[c]) for c in ("lat_min_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms",
                                          "lat_p95_ms", "lat_p99_ms", "lat_max_ms")]
    assert percentiles == sorted(percentiles) and percentiles[-1] > 0
    assert float(row["mem_avg_mb"]) > 0
    requests, served = int(row["requests"]), int(row["server_requests"])
    assert abs(served - requests) <= 0.02 * requests, (served, requests)
    assert row["tool_version"]
    run_dir = results / "latest" / row["run_dir"]
    for name in ("stdout.txt", "stderr.txt", "samples.csv", "meta.json"):
        assert (run_dir / name).is_file(), name


@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_wrk_and_ab_run_for_real(tmp_path, runtime):
    require_root_tools("ip", "nginx", "wrk", "ab", "top")
    if runtime == "docker" and docker_available() is None:
        pytest.fail("no Docker daemon answers: `make test` starts one (scripts/deps.sh)")
    result, rows = run_suite(tmp_path, runtime)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [(r["tool"], r["runtime"]) for r in rows] == [("wrk", runtime), ("ab", runtime)]
    for row in rows:
        assert_real_run(row, tmp_path)
    environment = (tmp_path / "latest" / "environment.json").read_text()
    for key in ("kernel", "cpu_model", "cores", "memory_gib", "harness_commit", "docker_version" if runtime == "docker" else "nginx_version"):
        assert f'"{key}"' in environment


def test_shaped_scenario_is_refused_not_run_unshaped(tmp_path):
    require_root_tools("ip", "nginx", "wrk")
    result, rows = run_suite(tmp_path, "host", "scenarios/shootout.yaml:vu20-rtt10", "wrk")
    assert result.returncode == 1
    (row,) = rows
    assert row["status"] == "failed" and "shaping" in row["error"] and row["requests"] == ""
    assert "shaping" in result.stdout
