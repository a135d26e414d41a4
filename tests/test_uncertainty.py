"""The interval, "tied" and "not measurable here" logic (analysis/uncertainty.py) on synthetic repeats of
known spread, and the comparison of two folders (analysis/compare.py)."""
import math

import numpy as np
import pandas as pd
import pytest

from analysis.change import compare
from analysis.compare import main as compare_main
from analysis.uncertainty import Estimate, change, estimate, min_requests, rank
from conftest import REPO


def _repeats(rng, centre: float, cv: float, n: int) -> list[float]:
    return list(rng.normal(centre, centre * cv, n))


def test_two_identical_tools_are_called_different_about_as_rarely_as_the_docs_say():
    """Same distribution (CV 15%, the spread measured here): apart 1 time in 10 with 3 runs, ~1 in 100 with 5."""
    rng = np.random.default_rng(1)
    for runs, most in ((3, 0.16), (5, 0.03)):
        apart = sum(not estimate(_repeats(rng, 1000, 0.15, runs)).overlaps(estimate(_repeats(rng, 1000, 0.15, runs)))
                    for _ in range(400))
        assert apart / 400 <= most, (runs, apart)


def test_tools_far_apart_are_ranked_apart_and_close_ones_tied():
    rng = np.random.default_rng(2)
    far = sum(not estimate(_repeats(rng, 1000, 0.05, 3)).overlaps(estimate(_repeats(rng, 1500, 0.05, 3)))
              for _ in range(200))
    assert far / 200 >= 0.95
    close = sum(not estimate(_repeats(rng, 1000, 0.15, 3)).overlaps(estimate(_repeats(rng, 1050, 0.15, 3)))
                for _ in range(200))
    assert close / 200 <= 0.25      # 5% apart under a 15% spread: mostly "tied"


def test_the_interval_holds_the_true_median_at_about_its_level_with_enough_runs():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(300):
        found = estimate(_repeats(rng, 100, 0.1, 12))
        covered += found.low <= 100 <= found.high
    assert covered / 300 >= 0.88     # percentile bootstrap, 12 runs: a little under its nominal 95%


def test_fewer_than_three_runs_have_no_interval_and_are_not_ranked():
    one = estimate([1200.0])
    assert (one.median, one.low, one.high, one.cv) == (1200.0, None, None, None)
    two = estimate([1200.0, 1300.0])
    assert two.low is None and two.cv is not None
    ranks = rank({"a": one, "b": estimate([900, 1000, 1100]), "c": estimate([2000, 2100, 2200])})
    assert set(ranks) == {"b", "c"}
    assert ranks["c"] == (1, []) and ranks["b"] == (2, [])


def test_rank_is_one_plus_the_tools_wholly_better_and_overlaps_are_tied():
    found = {"a": Estimate(11, 10, 12, 3, 0.1), "b": Estimate(12, 11, 13, 3, 0.1), "c": Estimate(13, 12.5, 14, 3, 0.1)}
    assert rank(found) == {"c": (1, ["b"]), "b": (1, ["a", "c"]), "a": (2, ["b"])}
    assert rank(found, higher_is_better=False) == {"a": (1, ["b"]), "b": (1, ["a", "c"]), "c": (2, ["b"])}


@pytest.mark.parametrize("metric, needed", [("lat_p99_ms", 1000), ("lat_p95_ms", 200), ("lat_p50_ms", 20),
                                            ("wire_p99_ms", 1000), ("rps", 0)])
def test_a_percentile_needs_ten_requests_beyond_it(metric, needed):
    assert min_requests(metric) == needed


def test_too_few_requests_or_too_much_spread_is_not_measurable_here():
    assert estimate([5.0, 5.1, 5.2], "lat_p99_ms", [999, 5000, 5000]).flag == "not measurable here: p99 of 999 requests"
    assert estimate([5.0, 5.1, 5.2], "lat_p99_ms", [1000, 1000, 1000]).flag is None
    spread = estimate([100, 160, 60], "rps")
    assert spread.cv > 0.25 and spread.flag == f"not measurable here: CV {spread.cv:.0%}" and not spread.usable
    assert rank({"x": spread, "y": estimate([1, 1.1, 1.2])}) == {"y": (1, [])}


def test_change_calls_a_difference_only_when_its_interval_excludes_one():
    assert change([1000, 1010, 990], [1500, 1490, 1520]).verdict == "higher"
    assert change([1000, 1010, 990], [700, 690, 710]).verdict == "lower"
    assert change([1000, 1100, 900], [1050, 950, 1150]).verdict == "no significant change"
    single = change([1000], [1500, 1490, 1520])
    assert single.ratio == pytest.approx(1.5) and single.low is None and single.verdict.startswith("1 run(s)")
    assert change([1000, 1001], [1500, 1490]).verdict.startswith("2 run(s): no interval")
    assert change([], [1.0]).verdict == "no figure on side A"
    assert math.isnan(change([1.0], []).ratio)


def _runs(tool: str, scenario: str, rps: list[float], p50: list[float], status: str = "ok") -> list[dict]:
    return [{"tool": tool, "scenario": scenario, "status": status, "rps": r, "lat_p50_ms": p, "lat_p99_ms": 2 * p}
            for r, p in zip(rps, p50)]


def test_compare_words_each_metric_by_its_direction():
    a = pd.DataFrame(_runs("wrk", "s", [1000, 1010, 990], [1.0, 1.01, 0.99]) + _runs("ab", "s", [500, 510, 490], [2, 2, 2]))
    b = pd.DataFrame(_runs("wrk", "s", [600, 610, 590], [1.6, 1.62, 1.58]) + _runs("ab", "s", [520, 480, 500], [2, 2.1, 1.9]))
    result = compare(a, b).set_index("tool")
    assert result.loc["wrk", "rps_verdict"] == "slower" and result.loc["wrk", "lat_p50_ms_verdict"] == "slower"
    assert result.loc["ab", "rps_verdict"] == "no significant change"
    assert result.loc["wrk", "rps_ratio"] == pytest.approx(0.6)


def test_make_compare_on_two_real_folders_writes_its_table(tmp_path, capsys):
    """results/sample holds a host and a Docker run of wrk and ab, two repetitions each."""
    host, docker = sorted((REPO / "results" / "sample").iterdir(), key=lambda p: not p.name.endswith("-host"))
    assert compare_main([str(host), str(docker), "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "compare.csv")
    assert set(table["tool"]) == {"wrk", "ab"} and (table["runs_a"] == 2).all()
    # two runs a side: a ratio, but no interval and so no verdict
    assert (table["rps_verdict"] == "2 run(s): no interval (REPEAT=3 or more)").all() and table["rps_low"].isna().all()
    for row in table.itertuples():
        assert f"{row.rps_ratio - 1:+.0%}" in printed
    assert (tmp_path / "report" / "index.html").is_file()


def test_make_compare_refuses_a_folder_without_runs_csv_in_one_line(tmp_path, capsys):
    assert compare_main([str(tmp_path), str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "has no runs.csv" in error and "make compare A=" in error


def test_a_flagged_figure_is_written_where_its_bar_would_be_not_drawn():
    """Real rows (results/sample, host: wrk and ab, 2 repetitions) with wrk's RPS spread past the CV limit
    and ab's requests cut below what a p99 needs."""
    from analysis import load_results
    from analysis.charts import CHARTS, spread

    host = next(p for p in sorted((REPO / "results" / "sample").iterdir()) if p.name.endswith("-host"))
    df = load_results(host)
    wrk = (df["tool"] == "wrk") & (df["scenario"] == "vu20-rtt0.1")
    df.loc[wrk & (df["repeat"] == 2), "rps"] = df.loc[wrk, "rps"].max() * 2
    ab = (df["tool"] == "ab") & (df["scenario"] == "vu20-rtt0.1")
    df.loc[ab, "requests"] = 500
    rps = spread(df, "rps").set_index(["scenario", "label"])
    assert rps.loc[("vu20-rtt0.1", "wrk"), "status"].startswith("not measurable here: CV ")
    assert math.isnan(rps.loc[("vu20-rtt0.1", "wrk"), "median"])
    p99 = spread(df, "lat_p99_ms").set_index(["scenario", "label"])
    assert p99.loc[("vu20-rtt0.1", "ab"), "status"] == "not measurable here: p99 of 500 requests"
    # a p50 needs 20 requests: 500 are enough
    assert "requests" not in spread(df, "lat_p50_ms").set_index(["scenario", "label"]).loc[("vu20-rtt0.1", "ab"), "status"]
    figure = CHARTS["rps"][1](df)
    written = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert any(t.startswith("not measurable here: CV") for t in written), written
