"""Latency accuracy (issue 10): every tool declares its clock step, figures below it are emptied
with a note, and a wrapped tool's memory/CPU count only the tool's processes."""
import subprocess
import time

import psutil
import pytest

from harness import TOOLS_DIR
from harness.sampling import only_named
from harness.store.figures import BELOW_RESOLUTION, Metrics, below_resolution
from harness.tools.registry import discover

ADAPTERS = discover()


def test_every_tool_declares_its_timing_resolution():
    # Every tools/<id>/adapter.py is discovered (a folder that fails to import is listed as unavailable).
    assert {a.folder.name for a in ADAPTERS.values()} == {p.parent.name for p in TOOLS_DIR.glob("*/adapter.py")}
    for name, adapter in ADAPTERS.items():
        resolution = adapter.timing_resolution_ms
        assert isinstance(resolution, (int, float)) and 0 < resolution <= 10, name
        assert isinstance(adapter.co_corrected, bool), name


WHOLE_MS = ("artillery", "autocannon", "gatling", "grinder", "jmeter", "locust", "locust-http", "locust-multi")


def test_tools_known_to_log_whole_ms_declare_it():
    # A regression check on these adapters only: a tool added later declares its own step.
    assert [n for n in WHOLE_MS if n in ADAPTERS and ADAPTERS[n].timing_resolution_ms != 1] == []


def test_a_zero_from_a_whole_ms_tool_becomes_empty_with_a_note():
    metrics = Metrics(lat_min_ms=0.0, lat_mean_ms=0.09, lat_p50_ms=0.0, lat_p99_ms=1.0, lat_max_ms=12.0,
                      notes=["earlier note"])
    below_resolution(metrics, 1)
    assert (metrics.lat_min_ms, metrics.lat_mean_ms, metrics.lat_p50_ms) == (None, None, None)
    assert (metrics.lat_p99_ms, metrics.lat_max_ms) == (1.0, 12.0)
    assert metrics.notes == ["earlier note", BELOW_RESOLUTION.format(
        resolution=1, columns="lat_min_ms, lat_mean_ms, lat_p50_ms")]


def test_figures_at_or_above_the_resolution_are_kept_without_a_note():
    metrics = Metrics(lat_min_ms=0.001, lat_p50_ms=0.4, lat_p95_ms=None)
    below_resolution(metrics, 0.001)
    assert (metrics.lat_min_ms, metrics.lat_p50_ms, metrics.lat_p95_ms) == (0.001, 0.4, None)
    assert metrics.notes == []


def test_only_named_keeps_the_tool_and_drops_its_wrapper():
    wrapper = subprocess.Popen(["bash", "-c", "sleep 30 & wait"])
    try:
        time.sleep(0.3)
        tree = lambda: {wrapper.pid, *(c.pid for c in psutil.Process(wrapper.pid).children(recursive=True))}
        sleeps = only_named(tree, "sleep")()
        assert len(tree()) == 2 and len(sleeps) == 1 and wrapper.pid not in sleeps
        assert only_named(tree, "no-such-tool")() == set()
    finally:
        for child in psutil.Process(wrapper.pid).children(recursive=True):
            child.kill()
        wrapper.kill()
        wrapper.wait()


def test_histogram_metrics_equal_the_per_request_definition_and_a_partial_histogram_keeps_what_it_covers():
    import numpy as np
    from harness.stats import PERCENTILES, histogram_metrics, latency_metrics, percentile_field
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 100, 1001):
        values = rng.integers(1, 50, n).astype(float)
        counts = {v: int((values == v).sum()) for v in set(values)}
        by_histogram, by_request = histogram_metrics(counts), latency_metrics(values)
        for name in ("lat_min_ms", "lat_mean_ms", "lat_max_ms", *(percentile_field(p) for p in PERCENTILES)):
            assert getattr(by_histogram, name) == pytest.approx(getattr(by_request, name)), (n, name)
    values = np.arange(1, 101, dtype=float)                       # 1..100, one each
    lowest = histogram_metrics({v: 1 for v in values[:92]}, total=100)
    assert (lowest.lat_p50_ms, lowest.lat_p90_ms, lowest.lat_p95_ms, lowest.lat_mean_ms) == (50.0, 90.0, None, None)
