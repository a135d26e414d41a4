"""Every tool adapter end to end, in both runtimes: the rows of the README's quick start as typed
(conftest.bench_quick: `make bench-quick DURATION=3` in a throw-away clone, Docker and host), checked
per tool; tests/test_as_typed.py checks the runs as a whole."""
import pytest

from conftest import harness, selected_tools
from harness.tools.registry import discover

pytestmark = pytest.mark.e2e
ADAPTERS = discover()
# LTH_TEST_TOOLS (make test-e2e TOOLS=...) narrows the tools run; unset, every working one.
WORKING = sorted(name for name, a in ADAPTERS.items() if not a.unavailable and name in (selected_tools() or ADAPTERS))
UNSHAPED, SHAPED = "vu20-rtt0.1", "vu100-rtt50"     # scenarios/quick.yaml
LATENCY = ("lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms")


def row_of(bench_quick, runtime: str, scenario: str, tool: str) -> dict:
    typed = bench_quick(runtime)
    found = [r for r in typed.rows if r["scenario"] == scenario and r["tool"] == tool]
    assert len(found) == 1, typed.output
    return found[0]


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


@pytest.mark.parametrize("runtime", ["docker", "host"])
@pytest.mark.parametrize("tool", WORKING)
def test_tool_unshaped(bench_quick, runtime, tool):
    check_row(row_of(bench_quick, runtime, UNSHAPED, tool))


@pytest.mark.parametrize("runtime", ["docker", "host"])
@pytest.mark.parametrize("tool", WORKING)
def test_tool_at_a_50_ms_rtt(bench_quick, runtime, tool):
    row = row_of(bench_quick, runtime, SHAPED, tool)
    check_row(row)
    assert row["shaper"] in ("netem", "toxiproxy") and row["rtt_ok"] == "True", row
    # No tool answers faster than the round trip it goes through.
    assert float(row["lat_p50_ms"] or row["lat_mean_ms"]) >= 0.9 * float(row["rtt_target_ms"]), row


def test_a_tool_that_cannot_work_is_listed_not_dropped():
    listed = harness("list-tools", timeout=300).stdout
    for name, adapter in ADAPTERS.items():
        assert name in listed
        if adapter.unavailable:
            assert f"{name}" in listed and "NOT WORKING" in listed
