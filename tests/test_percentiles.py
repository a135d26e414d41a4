"""One percentile definition (issue 50.3): every percentile the harness computes is harness/stats.py's nearest
rank. The wire's (harness/network/wire.py), a tool log's (latency_metrics), a histogram's (histogram_metrics)
and the stall's expected schedule agree on the same samples, and no other module computes a percentile its
own way: tool_error_p*_ms subtracts the wire's from the tool's, so two definitions would be a difference
the tool did not make."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness import stats
from harness.network.wire import WireSummary
from harness.row import stall

REPO = Path(__file__).resolve().parents[1]
# Calls that compute a percentile (a median is one) with a definition of their own.
PERCENTILE_CALLS = {"percentile", "quantile", "nanpercentile", "nanquantile", "median", "nanmedian",
                    "quantiles", "median_low", "median_high", "median_grouped"}
# Modules allowed them, and why. analysis/ (the report's bootstrap intervals) is not the harness's figures.
ALLOWED = {
    "harness/stats.py": "the one definition",
    "harness/rtt_probe.py": "a stdlib-only script run in the generator's namespace: the median of its own GETs",
    "harness/suite/overhead_check.py": "the median and bootstrap interval of harness/by-hand ratios, not latencies",
    "harness/suite/console.py": "the console's median of the harness's own seconds per run, printed, never stored",
}

latency = st.floats(min_value=0, max_value=1e5, allow_nan=False, allow_infinity=False)
samples = st.lists(latency, min_size=1, max_size=300)


def wire_of(latencies: list[float]) -> WireSummary:
    values = np.asarray(latencies, dtype=float)
    return WireSummary(pairs=len(values), connections=1, unanswered=0, unsolicited=0, packets=0, short=0,
                       first_ns=0, last_ns=1, latencies_ms=values, handshakes_ms=values)


@settings(max_examples=300, deadline=None)
@given(samples)
def test_the_wire_and_the_stats_give_the_same_percentiles(latencies):
    metrics, wire = stats.latency_metrics(latencies), wire_of(latencies)
    for p in stats.PERCENTILES:
        assert wire.percentile(p) == getattr(metrics, stats.percentile_field(p))
    described = wire.describe()
    assert (described["p50_ms"], described["p99_ms"]) == (metrics.lat_p50_ms, metrics.lat_p99_ms)
    assert described["p50_until_stop_ms"] == metrics.lat_p50_ms and described["connect_p50_ms"] == metrics.lat_p50_ms


@settings(max_examples=300, deadline=None)
@given(samples)
def test_a_histogram_of_the_samples_gives_the_same_percentiles(latencies):
    metrics, histogram = stats.latency_metrics(latencies), stats.histogram_metrics(Counter(latencies))
    for p in stats.PERCENTILES:
        assert getattr(histogram, stats.percentile_field(p)) == getattr(metrics, stats.percentile_field(p))


@settings(max_examples=300, deadline=None)
@given(samples, st.sampled_from([0, 1, 50, 75, 90, 95, 99, 99.9, 100]))
def test_a_percentile_is_an_observed_value_at_its_nearest_rank(latencies, p):
    ordered = sorted(latencies)
    value = stats.percentile(latencies, p)
    assert value in ordered
    at_or_below = sum(v <= value for v in ordered)
    assert at_or_below * 100 >= p * len(ordered)                        # at least p% did not exceed it
    assert sum(v < value for v in ordered) * 100 < max(p, 1e-9) * len(ordered) or value == ordered[0]


def test_the_rank_is_exact_where_floats_round_up():
    """p99.9 of 1,000 values is the 999th: numpy's inverted_cdf, in floats, takes the 1,000th."""
    values = np.arange(1, 1001, dtype=float)
    assert stats.percentile(values, 99.9) == 999.0
    assert stats.nearest_rank(99.9, 1000) == 999 and stats.nearest_rank(0, 10) == 1
    assert stats.percentile([], 50) is None
    with pytest.raises(ValueError):
        stats.nearest_rank(101, 10)


def test_the_wire_p50_of_an_even_count_is_an_observed_pair_not_an_average():
    assert wire_of([10.0, 20.0]).percentile(50) == 10.0                  # linear interpolation: 15.0


def test_the_stalls_expected_percentiles_are_the_same_definition():
    latencies = stall.expected_latencies_ms(100, 10, 2, 500, 1)
    expected = stall.expected(100, 10, 2, 500, 1)
    assert (expected.p50_ms, expected.p99_ms) == tuple(stats.percentiles(latencies, (50, 99)))


def percentile_calls(path: Path, root: Path) -> list[str]:
    """The percentile-computing calls written in one module: np.percentile, statistics.median, a pandas
    .quantile()/.median(), ... (a WireSummary's .percentile is harness/stats.py's)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _own_definition(node.func):
            found.append(f"{path.relative_to(root.parent)}:{node.lineno} {ast.unparse(node.func)}")
    return found


def _own_definition(func: ast.Attribute) -> bool:
    if func.attr not in PERCENTILE_CALLS:
        return False
    owner = func.value
    library = isinstance(owner, ast.Name) and owner.id in ("np", "numpy", "statistics", "pd", "pandas", "scipy")
    return library or func.attr in ("quantile", "median", "nanquantile", "nanmedian")


def second_definitions(root: Path = REPO / "harness") -> list[str]:
    return [call for path in sorted(root.rglob("*.py")) if str(path.relative_to(root.parent)) not in ALLOWED
            for call in percentile_calls(path, root)]


def imported_percentile_names(root: Path = REPO / "harness") -> list[str]:
    """A bare percentile()/median() imported from anywhere but harness.stats (from numpy import percentile)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module != "harness.stats":
                found += [f"{path.relative_to(root.parent)}: from {node.module} import {alias.name}"
                          for alias in node.names if alias.name in PERCENTILE_CALLS]
    return found


def test_no_module_but_stats_computes_a_percentile_its_own_way():
    assert second_definitions() == [], "a second percentile definition: use harness.stats.percentile(s)"
    assert imported_percentile_names() == []


def test_a_planted_second_definition_is_found(tmp_path):
    """A copy of harness/ with wire.py's old numpy percentile put back, and a module with three more."""
    root = tmp_path / "harness"
    for path in (REPO / "harness").rglob("*.py"):
        (root / path.relative_to(REPO / "harness")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.relative_to(REPO / "harness")).write_text(path.read_text())
    wire = root / "network" / "wire.py"
    wire.write_text(wire.read_text().replace("return percentile(self.latencies_ms, q)",
                                             "return float(np.percentile(self.latencies_ms, q))"))
    (root / "network" / "planted.py").write_text(
        "import statistics\nfrom numpy import quantile\n\n"
        "def p50(values, frame):\n    return statistics.median(values), frame.quantile(0.5)\n")
    assert second_definitions(REPO / "harness") == []
    found = second_definitions(root)
    assert [call.split(" ")[-1] for call in found] == ["statistics.median", "frame.quantile", "np.percentile"]
    assert imported_percentile_names(root) == ["harness/network/planted.py: from numpy import quantile"]
