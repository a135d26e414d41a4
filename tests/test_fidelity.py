"""Schedule fidelity (harness/network/fidelity.py) on synthetic send times, and the send times it reads from a
pcap (wire.request_send_times) on the real capture of tests/fixtures/wire and on a crafted one; the
row's fidelity columns from a rate run's stored capture summary; each adapter's declared schedule."""
import json

import numpy as np
import pytest

from conftest import FIXTURES
from harness.network.fidelity import EXPECTED_GAP_CV, schedule_fidelity
from harness.network.wire import request_send_times, summarise
from harness.row import wire
from harness.tools import registry
from test_capture import ACK, HANDSHAKES, PSH, ab_row, captured, pcap

AB_PCAP = FIXTURES / "wire" / "ab-vu2-rtt10" / "capture.pcap"
MS = 1_000_000
START_NS = 1_795_430_581_000_000_000   # an epoch stamp, as tcpdump writes


def uniform(rate: int, seconds: float) -> np.ndarray:
    return START_NS + np.arange(int(rate * seconds), dtype=np.int64) * (1_000_000_000 // rate)


def poisson(rate: int, seconds: float, seed: int = 7) -> np.ndarray:
    gaps = np.random.default_rng(seed).exponential(1e9 / rate, size=int(rate * seconds))
    return START_NS + np.cumsum(gaps).astype(np.int64)


# --- the math on synthetic schedules -----------------------------------------------------------------

def test_uniform_1000_per_s_for_5_s_is_uniform_as_declared():
    fidelity = schedule_fidelity(uniform(1000, 5), 1000, "uniform")
    assert fidelity.requests == 5000 and fidelity.span_s == pytest.approx(4.999)
    assert fidelity.wire_rate_rps == pytest.approx(1000.0)
    assert fidelity.mean_gap_ms == pytest.approx(1.0) and fidelity.wire_gap_cv == pytest.approx(0.0, abs=1e-9)
    assert fidelity.windows == 49                                    # the window cut by the last request is left out
    assert fidelity.wire_rate_min_window_rps == fidelity.wire_rate_max_window_rps == 1000.0
    assert fidelity.wire_rate_cv == pytest.approx(0.0, abs=1e-9) and fidelity.expected_gap_cv == 0.0
    assert fidelity.verdict == "uniform as declared (gap CV 0.00)"


def test_seeded_poisson_has_a_gap_cv_near_1():
    fidelity = schedule_fidelity(poisson(1000, 5), 1000, "poisson")
    assert fidelity.wire_gap_cv == pytest.approx(1.0, abs=0.05) and fidelity.expected_gap_cv == 1.0
    assert fidelity.wire_rate_rps == pytest.approx(1000, rel=0.05)
    # Poisson counts of ~100 per window: CV about 1/sqrt(100), not flagged as uneven.
    assert fidelity.expected_window_cv == pytest.approx(0.1, rel=0.05)
    assert fidelity.wire_rate_cv == pytest.approx(0.1, abs=0.04)
    assert fidelity.verdict == f"poisson as declared (gap CV {fidelity.wire_gap_cv:.2f})"


def test_poisson_declared_as_uniform_is_bursty_and_uniform_declared_as_poisson_too_regular():
    assert schedule_fidelity(poisson(1000, 5), 1000, "uniform").verdict.startswith("bursty: gap CV 1 where uniform is 0")
    assert schedule_fidelity(uniform(1000, 5), 1000, "poisson").verdict.startswith(
        "more regular than declared: gap CV 0.00 where poisson is 1")


def test_a_1_s_hole_shows_in_the_windows_and_the_gaps():
    times = uniform(1000, 5)
    holed = times[(times < START_NS + 2000 * MS) | (times >= START_NS + 3000 * MS)]
    fidelity = schedule_fidelity(holed, 1000, "uniform")
    assert fidelity.requests == 4000 and fidelity.wire_rate_min_window_rps == 0.0
    assert fidelity.wire_rate_max_window_rps == 1000.0
    assert fidelity.wire_rate_cv == pytest.approx((10 / 39) ** 0.5)   # 39 windows at 1,000, 10 at 0
    assert fidelity.wire_gap_cv > 10                                  # one 1,001 ms gap among 1 ms ones
    assert fidelity.verdict == ("bursty: gap CV 13 where uniform is 0; rate uneven: 100 ms windows from 0 to "
                                "1,000 rps (CV 0.51); 80% of the declared 1,000 rps")


def test_a_slow_tool_is_named_short_of_its_rate():
    fidelity = schedule_fidelity(uniform(500, 5), 1000, "uniform")
    assert fidelity.verdict == "uniform as declared (gap CV 0.00); 50% of the declared 1,000 rps"


def test_bursts_of_ten_at_once_are_bursty_with_an_even_rate():
    bursts = np.repeat(START_NS + np.arange(500, dtype=np.int64) * 10 * MS, 10)   # 10 every 10 ms: 1,000/s
    fidelity = schedule_fidelity(bursts, 1000, "uniform")
    assert fidelity.wire_gap_cv == pytest.approx(3.0, rel=0.01)       # 9 of 10 gaps are 0
    assert fidelity.wire_rate_cv == pytest.approx(0.0, abs=1e-9)
    assert fidelity.verdict == "bursty: gap CV 3 where uniform is 0"


def test_too_few_requests_and_none_at_all():
    few = schedule_fidelity(uniform(1000, 0.05), 1000, "uniform")
    assert few.requests == 50 and few.windows == 0 and few.wire_rate_cv is None and few.wire_rate_min_window_rps is None
    assert few.verdict == "too few requests to judge (50 on the wire, 101 needed)"
    none = schedule_fidelity(np.array([], dtype=np.int64), 1000, "poisson")
    assert none.requests == 0 and none.span_s is None and none.wire_gap_cv is None and none.wire_rate_rps is None
    assert none.describe()["verdict"].startswith("too few requests")


def test_describe_has_every_figure_but_the_window_array():
    described = schedule_fidelity(uniform(1000, 1), 1000, "uniform").describe()
    assert "window_rps" not in described
    assert {"wire_rate_cv", "wire_rate_min_window_rps", "wire_rate_max_window_rps", "wire_gap_cv", "mean_gap_ms",
            "expected_gap_cv", "wire_rate_rps", "verdict"} <= described.keys()


def test_an_unknown_schedule_is_refused():
    with pytest.raises(ValueError, match="unknown schedule 'gamma'"):
        schedule_fidelity(uniform(1000, 1), 1000, "gamma")


# --- send times from a pcap --------------------------------------------------------------------------

def test_the_real_capture_gives_one_send_time_per_request():
    summary, sent = summarise(AB_PCAP, 8080), request_send_times(AB_PCAP, 8080)
    assert sent.dtype == np.int64 and len(sent) == summary.pairs + summary.unanswered == 356
    assert (np.diff(sent) >= 0).all()
    assert summary.first_ns <= sent[0] and sent[-1] <= summary.last_ns
    assert len(request_send_times(AB_PCAP, 80)) == 0                   # only the load's port counts


def test_the_send_times_follow_the_pairing_rule(tmp_path):
    # HANDSHAKES (test_capture.py): one request per connection, the port reused; then on port 40005 a
    # request in two packets (one request), its response, a request never answered.
    extra = [(5_000_000, 40005, True, PSH | ACK, 100), (5_000_300, 40005, True, PSH | ACK, 100),
             (5_010_000, 40005, False, PSH | ACK, 500), (5_020_000, 40005, True, PSH | ACK, 100)]
    path = tmp_path / "requests.pcap"
    path.write_bytes(pcap(HANDSHAKES + extra))
    sent = request_send_times(path, 8080)
    assert list(sent // 1000) == [1_101_000, 1_401_000, 1_500_000, 2_011_000, 3_001_000, 5_000_000, 5_020_000]
    summary = summarise(path, 8080)
    assert len(sent) == summary.pairs + summary.unanswered == 7


def test_an_empty_capture_is_refused(tmp_path):
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        request_send_times(empty, 8080)


# --- the row's columns, from the summary the run's record keeps ------------------------------------

FIDELITY_COLUMNS = ("wire_rate_rps", "wire_rate_cv", "wire_rate_min_window_rps", "wire_gap_cv", "wire_schedule")


def stored_summary(tmp_path, paced) -> dict:
    """A capture's summary as record.json keeps it (through JSON); the pcap is gone by then."""
    capture = captured(tmp_path)
    capture.paced = paced
    summary = json.loads(json.dumps(capture.summary()))
    assert not capture.pcap.exists()
    return summary


def test_a_rate_runs_stored_capture_summary_fills_the_fidelity_columns(tmp_path):
    # The ab capture read as if ab had been asked for 178 rps, evenly: 356 requests over 2 s, but two
    # connections sending together (closed loop, 10 ms RTT), so the gaps alternate: bursty.
    summary = stored_summary(tmp_path, (178, "uniform"))
    fidelity = summary["fidelity"]
    assert fidelity["requests"] == 356 and fidelity["schedule"] == "uniform" and fidelity["declared_rps"] == 178
    row = ab_row()
    wire.fill(row, summary)
    assert row.wire_rate_rps == fidelity["wire_rate_rps"] == pytest.approx(177.1, abs=0.1)
    assert row.wire_rate_min_window_rps == 160.0 and row.wire_rate_cv == pytest.approx(0.057, abs=0.001)
    assert row.wire_gap_cv == pytest.approx(0.92, abs=0.01)
    assert row.wire_schedule == fidelity["verdict"] == "bursty: gap CV 0.92 where uniform is 0"
    poisson_row = ab_row()
    wire.fill(poisson_row, stored_summary(tmp_path, (178, "poisson")))
    assert poisson_row.wire_schedule == "poisson as declared (gap CV 0.92)"


def test_a_closed_run_or_an_older_summary_leaves_the_fidelity_columns_empty(tmp_path):
    summary = stored_summary(tmp_path, None)
    assert "fidelity" not in summary
    row = ab_row()
    wire.fill(row, summary)
    assert row.wire_p50_ms is not None and all(getattr(row, c) is None for c in FIDELITY_COLUMNS)
    wire.fill(row, {**summary, "fidelity": {"error": "ab.pcap is empty: the capture wrote no pcap header"}})
    assert all(getattr(row, c) is None for c in FIDELITY_COLUMNS)
    assert "schedule fidelity not computed: ab.pcap is empty" in row.notes


def test_each_open_model_adapter_declares_the_schedule_its_rate_model_names():
    adapters = registry.discover()
    assert all(a.rate_schedule in EXPECTED_GAP_CV for a in adapters.values())
    poisson = {name for name, a in adapters.items() if a.open_model and "poisson" in a.rate_model.lower()}
    assert poisson == {"jmeter"}
    assert {name for name, a in adapters.items() if a.rate_schedule == "poisson"} == poisson
