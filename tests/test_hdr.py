"""Each run's latencies as an HdrHistogram log (issue 51, harness/store/hdr.py), read back with the
``hdrhistogram`` library itself; the merge of several generators goes through the logs (harness/row/merge.py)
and equals the pooled per-request latencies within the log's 3 significant digits."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from harness.network.capture import _wire_log
from harness.network.wire import summarise
from harness.row.merge import merged_figures
from harness.store.hdr import LEGACY_HISTOGRAM_CSV, read_histogram, write_histogram
from harness.stats import PERCENTILES, histogram_metrics, percentile_field
from harness.store import hdr
from harness.tools.output import LatencyHistogram
from test_multigen import PARTS, expand, wrk_part

PRECISION = 1e-3      # 3 significant digits


def pooled(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q, method="inverted_cdf"))     # nearest rank, as harness/stats.py


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=0.001, max_value=60_000, allow_nan=False), min_size=1, max_size=300))
def test_a_log_read_back_holds_every_request_within_its_precision(tmp_path_factory, latencies):
    folder = tmp_path_factory.mktemp("log")
    values = np.array(latencies)
    name = hdr.write_log(hdr.counts_of(values), folder, ["source: hypothesis"])
    histogram = hdr.read_log(folder / name)
    assert histogram.get_total_count() == len(values)
    figures = histogram_metrics(hdr.to_counts(histogram))     # the row's rule (nearest rank), not the library's
    for q in PERCENTILES:
        assert getattr(figures, percentile_field(q)) == pytest.approx(pooled(values, q), rel=PRECISION, abs=1e-6)
    assert figures.lat_max_ms == pytest.approx(values.max(), rel=PRECISION, abs=1e-6)


def test_bucketing_in_numpy_is_what_the_library_records_value_by_value():
    values = np.random.default_rng(51).lognormal(0, 2, 5000)
    by_library = hdr.empty()
    for value in values:
        by_library.record_value(round(value * hdr.NS_PER_MS))
    assert hdr.to_counts(hdr.from_counts(hdr.counts_of(values))) == hdr.to_counts(by_library)


def test_the_log_says_what_its_values_are_and_when_the_run_started(tmp_path):
    name = hdr.write_log({0.5: 3}, tmp_path, ["source: wrk", "the tool's timing resolution: 0.001 ms"],
                         started_at=1_764_300_000.25, duration_s=10)
    text = (tmp_path / name).read_text()
    assert "#[StartTime: 1764300000.250 (seconds since epoch)" in text and "nanoseconds" in text
    assert "#source: wrk" in text and "resolution: 0.001 ms" in text
    assert text.splitlines()[-1].startswith("0.000000,10.000000,")


def test_two_real_wrk_parts_merged_through_their_logs_equal_the_pooled_requests(tmp_path):
    """tests/fixtures/multigen: a real two-generator wrk run; each part's histogram written as the runner
    writes it, read back as the row's derivation reads it."""
    parts = [wrk_part(path) for path in PARTS]
    stored = []
    for index, (_, histogram) in enumerate(parts):
        folder = tmp_path / f"generator-{index + 1}"
        folder.mkdir()
        stored.append((folder, write_histogram(histogram, folder, 0.001, 1_764_300_000.0, 3)))
        assert (folder / "latency.hlog").is_file() and stored[-1][1]["total"] == histogram.total
    merged, how = merged_figures([figures for figures, _ in parts], [read_histogram(f, s) for f, s in stored])
    every = np.concatenate([expand(histogram) for _, histogram in parts])
    for q in (50, 75, 90, 95, 99):
        assert getattr(merged, percentile_field(q)) == pytest.approx(pooled(every, q), rel=PRECISION)
    assert merged.requests == every.size and "HdrHistogram" in how
    library = hdr.read_log(stored[0][0] / "latency.hlog")
    library.add(hdr.read_log(stored[1][0] / "latency.hlog"))
    assert library.get_value_at_percentile(99) / hdr.NS_PER_MS == pytest.approx(merged.lat_p99_ms, rel=PRECISION)


def test_a_folder_from_before_the_logs_is_still_merged_from_its_csv(tmp_path):
    (tmp_path / LEGACY_HISTOGRAM_CSV).write_text("latency_ms,count\n0.500000,2\n1.250000,1\n")
    histogram = read_histogram(tmp_path, {"file": LEGACY_HISTOGRAM_CSV, "total": 3, "source": "wrk"})
    assert histogram == LatencyHistogram({0.5: 2, 1.25: 1}, total=3, source="wrk")


def test_the_wires_latencies_of_a_real_capture_are_logged_as_the_capture_summary_has_them(tmp_path):
    """tests/fixtures/wire/ab-vu2-rtt10: a real ab run's pcap; the log holds every answered pair."""
    summary = summarise(FIXTURES / "wire" / "ab-vu2-rtt10" / "capture.pcap", 8080)
    assert len(summary.latencies_ms) > 100
    stored = _wire_log(summary, tmp_path, {"started_at": 1_764_300_000.0, "stopped_at": 1_764_300_003.0})
    log = hdr.read_log(tmp_path / stored["hlog"])
    assert log.get_total_count() == len(summary.latencies_ms)
    figures = histogram_metrics(hdr.to_counts(log))
    for q in PERCENTILES:
        assert getattr(figures, percentile_field(q)) == pytest.approx(pooled(summary.latencies_ms, q), rel=PRECISION)
    assert "the wire" in (tmp_path / stored["hlog"]).read_text()
    assert _wire_log(replace(summary, latencies_ms=np.array([])), tmp_path, {}) == {}


def test_the_merged_row_has_the_unions_p99_9(tmp_path):
    parts = [wrk_part(path) for path in PARTS]
    merged, _ = merged_figures([figures for figures, _ in parts], [histogram for _, histogram in parts])
    every = np.concatenate([expand(histogram) for _, histogram in parts])
    assert merged.lat_p99_9_ms == pooled(every, 99.9) and merged.lat_p99_ms <= merged.lat_p99_9_ms <= merged.lat_max_ms


def test_a_tool_whose_row_comes_from_every_latency_gives_those_latencies_for_its_log(tmp_path):
    """Every captured real output (tests/fixtures/<tool>/<run>): where parse() computed the row from every latency
    (harness/stats.py), the default latency_histogram hands over those very latencies, and their figures are the
    row's; a tool that reports its own percentiles gives none (its row was never computed from a distribution)."""
    from test_fuzz import captured_cases
    by_tool: dict[str, bool] = {}
    for case in captured_cases(tmp_path):
        output = case.output()
        metrics = case.adapter.parse(output)
        histogram = case.adapter.latency_histogram(case.output())
        by_tool[case.adapter.name] = by_tool.get(case.adapter.name, False) or histogram is not None
        if histogram is None or case.adapter.name in ("wrk", "oha"):       # their own: tests/test_multigen.py
            continue
        again = histogram_metrics(histogram.counts, total=histogram.total)
        for q in PERCENTILES:
            assert getattr(again, percentile_field(q)) == getattr(metrics, percentile_field(q)), (case.name, q)
    assert {t for t, given in by_tool.items() if given} >= {"gatling", "h2load", "jmeter", "vegeta"}, by_tool
    assert not by_tool.get("ab") and not by_tool.get("k6"), by_tool
