"""Every tool adapter end to end through the harness, a few seconds at 20 VUs (vu20-rtt0.1):
all of them in the host runtime, and the issue-listed ones in the Docker runtime too."""
import csv
import os
from pathlib import Path

import pytest

from conftest import harness, require_root_tools, selected_tools
from harness.registry import discover
from harness.runtimes.docker import docker_available

pytestmark = pytest.mark.e2e
ADAPTERS = discover()
# LTH_TEST_TOOLS (make test-e2e TOOLS=...) narrows the tools run; unset, every working one.
WORKING = sorted(name for name, a in ADAPTERS.items() if not a.unavailable and name in (selected_tools() or ADAPTERS))
# The Docker runtime is exercised for the walking-skeleton tools, one JVM tool and Locust.
DOCKER_TOOLS = [t for t in ("wrk", "ab", "jmeter", "locust") if t in WORKING]
DURATION_S = os.environ.get("LTH_TOOL_TEST_DURATION", "4")
LATENCY = ("lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms")


def run_all(root: Path, runtime: str, tools: list[str]) -> dict[str, dict]:
    result = harness("run", "--runtime", runtime, "--tools", ",".join(tools), "--scenarios",
                     "scenarios/quick.yaml:vu20-rtt0.1", "--duration", DURATION_S, "--results-root", str(root),
                     timeout=3600)
    runs_csv = root / "latest" / "runs.csv"
    assert runs_csv.exists(), result.stdout + result.stderr
    return {row["tool"]: row for row in csv.DictReader(runs_csv.open())}


@pytest.fixture(scope="module")
def host_rows(tmp_path_factory):
    require_root_tools("ip", "nginx")
    return run_all(tmp_path_factory.mktemp("host"), "host", WORKING)


@pytest.fixture(scope="module")
def docker_rows(tmp_path_factory):
    require_root_tools("ip", "nginx")
    if docker_available() is None:
        pytest.fail("no Docker daemon answers: `make test` starts one")
    return run_all(tmp_path_factory.mktemp("docker"), "docker", DOCKER_TOOLS)


def check_row(row: dict) -> None:
    assert row["status"] == "ok", row["error"]
    assert float(row["rps"]) > 0 and row["tool_version"]
    reported = [float(row[c]) for c in ("lat_min_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p95_ms",
                                        "lat_p99_ms", "lat_max_ms") if row[c] != ""]
    assert reported == sorted(reported)
    adapter = ADAPTERS[row["tool"]]
    if adapter.reports_percentiles:       # reported, or emptied by the runner as below the tool's clock step
        for column in ("lat_p50_ms", "lat_p99_ms"):
            assert row[column] != "" or ("timing resolution, left empty" in row["notes"] and column in row["notes"])
    assert float(row["timing_resolution_ms"]) == adapter.timing_resolution_ms
    assert row["co_corrected"] == str(adapter.co_corrected)
    assert all(float(row[c]) >= adapter.timing_resolution_ms for c in LATENCY if row[c] != "")
    assert float(row["mem_avg_mb"]) > 0
    requests, served = int(row["requests"]), int(row["server_requests"])
    assert abs(served - requests) <= 0.02 * served or row["notes"], (requests, served)


@pytest.mark.parametrize("tool", WORKING)
def test_tool_on_host(host_rows, tool):
    check_row(host_rows[tool])


@pytest.mark.parametrize("tool", DOCKER_TOOLS)
def test_tool_in_docker(docker_rows, tool):
    check_row(docker_rows[tool])


def test_a_tool_that_cannot_work_is_listed_not_dropped():
    listed = harness("list-tools", timeout=300).stdout
    for name, adapter in ADAPTERS.items():
        assert name in listed
        if adapter.unavailable:
            assert f"{name}" in listed and "NOT WORKING" in listed
