"""The stall test's pieces without load: the expected latencies, the injector, rate rows."""
import subprocess
import time

import psutil
import pytest

from harness.row.rate import fill_rate, fill_stall
from harness.row.stall import expected, expected_latencies_ms, expected_quantile_ms
from harness.scenarios import Scenario
from harness.store.results import RunRow
from harness.store.stall import StallRecord
from harness.suite.stall import injected
from harness.tools.openmodel import rate_for, unsupported_reason
from harness.tools.registry import discover

TOOLS = discover()


def test_expected_latencies_on_a_synthetic_schedule():
    # 10 requests/s for 10 s, 1 ms RTT, frozen from 5 s to 6 s: the ten requests intended at 5.0 .. 5.9 s
    # wait 1.0 .. 0.1 s for the server, then one RTT; the other ninety take one RTT.
    latencies = sorted(expected_latencies_ms(10, 10, 5.0, 1000, 1.0))
    assert len(latencies) == 100
    assert latencies[:90] == [1.0] * 90
    assert latencies[90:] == pytest.approx([101, 201, 301, 401, 501, 601, 701, 801, 901, 1001])
    figures = expected(10, 10, 5.0, 1000, 1.0)
    # Nearest rank: p99 is the 99th of 100 sorted latencies, the second largest.
    assert (figures.requests, figures.stalled) == (100, 10)
    assert figures.p50_ms == 1.0
    assert figures.p99_ms == pytest.approx(901)
    assert figures.max_ms == pytest.approx(1001)


def test_discrete_schedule_matches_the_closed_form_at_1000_rps():
    figures = expected(1000, 20, 10.0, 1000, 0.2)
    assert figures.p99_ms == pytest.approx(expected_quantile_ms(0.99, 20, 1000, 0.2), abs=1.0)
    assert expected_quantile_ms(0.99, 20, 1000, 0.2) == pytest.approx(800.2)
    assert figures.max_ms == pytest.approx(1000.2)
    assert figures.p50_ms == pytest.approx(0.2)


def test_no_request_is_stalled_when_the_stall_is_shorter_than_the_gap_between_requests():
    # 1 request/s and a 0.3 s stall starting at 2.5 s: no request is intended inside it.
    assert expected(1, 5, 2.5, 300, 1.0).max_ms == 1.0


def _state(pid: int) -> str:
    return psutil.Process(pid).status()


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "30"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_injector_freezes_the_target_and_resumes_it(sleeper):
    with injected(lambda: {sleeper}, 0.05, 300) as record:
        time.sleep(0.2)
        assert _state(sleeper) == psutil.STATUS_STOPPED
        time.sleep(0.3)
        assert _state(sleeper) != psutil.STATUS_STOPPED
    assert record.actual_ms == pytest.approx(300, abs=50)
    assert record.pids == {sleeper}


def test_injector_resumes_the_target_when_the_block_is_interrupted(sleeper):
    with pytest.raises(KeyboardInterrupt):
        with injected(lambda: {sleeper}, 0.0, 60_000) as record:
            time.sleep(0.2)
            assert _state(sleeper) == psutil.STATUS_STOPPED
            raise KeyboardInterrupt
    assert _state(sleeper) != psutil.STATUS_STOPPED
    assert record.actual_ms is not None and record.actual_ms < 1000


def test_injector_does_nothing_when_the_tool_ends_before_the_stall(sleeper):
    with injected(lambda: {sleeper}, 5.0, 1000) as record:
        pass
    assert record.stopped_at is None and record.actual_ms is None
    assert "did not happen" in record.describe()


def _scenario(**extra) -> Scenario:
    return Scenario(id="s", vus=50, rtt_ms=0.1, duration_s=20, **extra)


def test_a_closed_model_tool_gets_an_unsupported_reason_in_a_rate_scenario():
    reason = unsupported_reason(_scenario(rate_rps=1000), TOOLS["wrk"])
    assert reason is not None and reason.startswith("open model not supported: closed model only")
    assert unsupported_reason(_scenario(rate_rps=1000), TOOLS["k6"]) is None
    assert unsupported_reason(_scenario(rate_rps=1000, closed_model_tools="run"), TOOLS["wrk"]) is None
    assert unsupported_reason(_scenario(), TOOLS["wrk"]) is None


def test_every_adapter_says_how_it_paces_a_rate_or_why_not():
    for adapter in TOOLS.values():
        assert adapter.rate_model and "\n" not in adapter.rate_model, adapter.name
    assert {n for n, a in TOOLS.items() if a.open_model} >= {"k6", "vegeta", "oha", "bombardier", "hey", "autocannon"}


def _row(rps: float) -> RunRow:
    return RunRow(tool="k6", tool_version="1", runtime="host", scenario="s", vus=50, rtt_target_ms=0.1,
                  duration_s=20, rps=rps, status="ok", rtt_measured_ms=0.2, measured_s=20.0)


def test_a_tool_more_than_5_percent_short_of_the_rate_is_flagged():
    scenario = _scenario(rate_rps=1000)
    for rps, ok in ((951.0, True), (949.0, False)):
        row = _row(rps)
        fill_rate(row, scenario, TOOLS["k6"])
        assert (row.rate_target_rps, row.rate_achieved_rps, row.rate_ok) == (1000, rps, ok)
    assert rate_for(scenario, TOOLS["wrk"]) is None and rate_for(scenario, TOOLS["k6"]) == 1000


def test_a_rate_run_of_a_tool_timing_from_the_intended_send_says_co_corrected():
    scenario = _scenario(rate_rps=1000)
    flags = {}
    for tool in ("oha", "autocannon", "k6", "vegeta"):
        row = _row(1000.0)
        fill_rate(row, scenario, TOOLS[tool])
        flags[tool] = row.co_corrected
    assert flags == {"oha": True, "autocannon": True, "k6": False, "vegeta": False}


def test_stall_row_gets_the_expected_figures_at_the_target_rate():
    scenario = _scenario(rate_rps=1000, stall_ms=1000, stall_at_s=10)
    row = _row(950.0)
    fill_rate(row, scenario, TOOLS["k6"])
    record = StallRecord(10.0, 1000, origin=100.0, stopped_at=110.0, resumed_at=111.0, pids={1, 2})
    fill_stall(row, scenario, record)
    assert (row.stall_ms, row.stall_actual_ms) == (1000, pytest.approx(1000))
    assert row.expected_p99_ms == pytest.approx(800.2, abs=1.0)
    assert row.expected_max_ms == pytest.approx(1000.2)
    assert "SIGSTOP of 2 Nginx processes at +10.000 s" in row.notes


def test_a_stall_outside_the_tools_load_window_is_flagged():
    scenario = _scenario(rate_rps=1000, stall_ms=1000, stall_at_s=10)
    row = _row(950.0)
    row.startup_s = 12.0                  # a slow start: the first request came after the stall
    fill_stall(row, scenario, StallRecord(10.0, 1000, origin=100.0, stopped_at=110.0, resumed_at=111.0))
    assert "WARNING: the stall (+10.0 s) fell outside the tool's load window (+12.0 s to +32.0 s)" in row.notes
    inside = _row(950.0)
    fill_stall(inside, scenario, StallRecord(10.0, 1000, origin=100.0, stopped_at=110.0, resumed_at=111.0))
    assert "WARNING" not in inside.notes
