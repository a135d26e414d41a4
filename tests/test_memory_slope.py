"""Memory per VU as a slope over VU levels (analysis/memory.py, issue 35), on real rows and on lines whose
slope is known."""
import numpy as np
import pandas as pd
import pytest

from analysis import load_results
from analysis.charts import with_limits
from analysis.load import closed_model
from analysis.memory import Slope, fit, slopes
from conftest import REPO

QUICK3 = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*"))  # make bench-quick REPEAT=3, both runtimes


def test_five_levels_give_the_slope_its_interval_and_the_footprint():
    """The shootout's 50-1,000 VUs at 50 ms: 60 MiB of footprint and 100 KiB per VU, +-1 MiB of noise."""
    vus = [50, 100, 200, 500, 1000]
    noise = [0.8, -1.0, 0.4, -0.5, 0.3]
    rss = [60 + v * 100 / 1024 + n for v, n in zip(vus, noise)]
    found = fit(vus, rss)
    assert found.levels == tuple(vus) and found.runs == 5
    assert found.low < 100 < found.high and found.high - found.low < 20
    assert found.kib_per_vu == pytest.approx(100, abs=5) and found.footprint_mb == pytest.approx(60, abs=1.5)
    assert not found.spans_zero and found.describe().startswith(f"{found.kib_per_vu:,.0f} [")


def test_two_levels_give_a_slope_without_interval_and_one_level_none():
    two = fit([20, 100], [10.0, 50.0])
    assert two.kib_per_vu == pytest.approx(512) and two.low is None and "two runs: no interval" in two.describe()
    one = fit([20, 20, 20], [10.0, 11.0, 12.0])
    assert one.kib_per_vu is None and one.why_none == "one VU level (20): a slope needs two"
    assert fit([], []).why_none == "no run with memory samples"


def test_rss_that_does_not_grow_with_vus_is_said_so():
    flat = fit([20, 20, 100, 100], [50.0, 52.0, 51.0, 50.5])
    assert flat.spans_zero and "no growth per VU measurable" in flat.describe()


def test_the_interval_widens_with_the_noise():
    vus = np.array([50, 100, 200, 500, 1000, 50, 100, 200, 500, 1000])
    quiet = fit(list(vus), list(20 + vus / 10 + np.tile([0.1, -0.1], 5)))
    loud = fit(list(vus), list(20 + vus / 10 + np.tile([5.0, -5.0], 5)))
    assert (loud.high - loud.low) > 10 * (quiet.high - quiet.low)


def test_the_quick_runs_give_every_tool_a_slope_over_20_and_100_vus():
    """make bench-quick REPEAT=3, both runtimes (real rows): two levels, three runs each, an interval."""
    if not QUICK3:
        pytest.skip("tests/fixtures/scorecard not recorded yet")
    df = with_limits(load_results(*QUICK3))
    ok = closed_model(df[df["status"] == "ok"])
    found = slopes(ok)
    assert set(found) == set(ok["label"])
    for label, slope in found.items():
        rows = ok[(ok["label"] == label) & ok["mem_avg_mb"].notna()]
        assert slope.levels == tuple(sorted(set(rows["vus"].astype(int)))), label
        if len(slope.levels) >= 2:
            assert slope.runs == len(rows) and slope.low is not None and slope.low <= slope.kib_per_vu <= slope.high
            expected = np.polyfit(rows["vus"].astype(float), rows["mem_avg_mb"].astype(float), 1)[0] * 1024
            assert slope.kib_per_vu == pytest.approx(expected)
        else:
            assert slope == Slope(None, levels=slope.levels, runs=slope.runs, why_none=slope.why_none)


def test_a_tool_whose_rss_grows_within_its_runs_is_said_to_grow_per_request():
    """A Node-like tool: +4 MiB/s over 10 s windows at ~60 MiB (67% of its RSS); wrk-like: flat."""
    rows = [{"label": "node-like", "vus": vus, "mem_avg_mb": 60.0 + vus / 100, "mem_growth_mb_per_s": growth,
             "measured_s": 10.0} for vus, growth in ((50, 4.0), (100, 3.5), (200, 4.5))]
    rows += [{"label": "flat", "vus": vus, "mem_avg_mb": 5.0, "mem_growth_mb_per_s": growth, "measured_s": 10.0}
             for vus, growth in ((50, 0.01), (100, -0.02), (200, 0.0))]
    found = slopes(pd.DataFrame(rows))
    assert found["node-like"].grows_mb_per_s == pytest.approx(4.0) and found["node-like"].grows_share == pytest.approx(4 * 10 / 60.5)
    assert "grows within a run (+4 MiB/s, 66% of its RSS over the load window)" in found["node-like"].describe()
    assert found["flat"].grows_mb_per_s is None and "grows" not in found["flat"].describe()
