"""The report's first screen (analysis/headline.py; issue 48): the picture's points and front, its verdict and the
banner, from real rows and from cells whose answer is known."""
import pandas as pd
import pytest

from analysis import headline, load_results, scorecard
from analysis.charts import with_limits
from analysis.scorecard import Cell
from conftest import REPO

QUICK3 = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*"))


def row(tool: str, x: float, y: float, contended: bool = False) -> dict:
    return {"tool": tool, "req_per_cpu_s": Cell("", x, facts={"median": x, "scenario": "fast", "low": None, "high": None}),
            "added_ms": Cell("", abs(y), facts={"added_ms": y, "scenario": "slow"}, contended=contended),
            "p50_error_ms": Cell("not captured")}


def test_the_front_is_the_tools_no_other_beats_on_both_axes():
    card = [row("a", 100_000, 3.0), row("b", 60_000, 0.1), row("c", 50_000, 0.5), row("d", 2_000, 7.0, True)]
    chosen = headline.axes(card)
    assert chosen.y_column == "added_ms" and (chosen.x_scenario, chosen.y_scenario) == ("fast", "slow")
    found = {p.label: p for p in headline.points(card, chosen)}
    assert {label for label, p in found.items() if p.front} == {"a", "b"}
    assert found["d"].contended and not found["c"].contended
    said = headline.verdict(list(found.values()), chosen)
    assert said[0].startswith("Best trade-off here: a, b") and "Cheapest per request: a" in said[1]
    assert "Closest to the network: b, +0.1 ms" in said[2] and said[3].startswith("Adds the most: d, +7 ms")


def test_the_wire_is_the_y_axis_only_where_every_ranked_tool_was_captured():
    card = [row("a", 100, 1.0), row("b", 50, 2.0)]
    card[0]["p50_error_ms"] = Cell("+0.2", 0.2, facts={"error_ms": 0.2, "scenario": "fast"})
    assert headline.axes(card).y_column == "added_ms"
    card[1]["p50_error_ms"] = Cell("-0.1", 0.1, facts={"error_ms": -0.1, "scenario": "fast"})
    assert headline.axes(card).y_column == "p50_error_ms"


@pytest.mark.skipif(not QUICK3, reason="tests/fixtures/scorecard not recorded")
def test_the_picture_of_real_runs_is_written_with_a_point_per_tool(tmp_path):
    df = with_limits(load_results(*QUICK3))
    card = scorecard.build(df)
    chosen = headline.axes(card)
    points = headline.points(card, chosen)
    # every tool ran both quick scenarios ok: each is placed unless its x is not measurable (ab on the host: CV 32%)
    assert {p.label for p in points} == {r["tool"] for r in card if r["req_per_cpu_s"].facts} == set(df["label"]) - {"ab (host)"}
    assert headline.left_out(card, points, chosen) == "Not on the picture: ab (host) (not measurable here: CV 32%)."
    assert all(p.x_low is not None and p.y_low is not None for p in points)   # 3 repeats: intervals both ways
    path = headline.draw(points, chosen, "held", tmp_path)
    assert path.stat().st_size > 20_000
    banner = headline.banner(df, [{"cpu_model": "Intel(R) Xeon(R) Processor", "cores": 2}])
    assert banner["machine"] == "Intel(R) Xeon(R) Processor, 2 cores" and banner["repeats"] == "3"
    contended = int(df["contended"].sum())
    assert banner["runs"] == f"{len(df)} runs: {len(df)} ok; {contended} contended (other processes took CPU: marked †)"


def test_the_banner_counts_failed_and_contended_runs():
    df = pd.DataFrame({"status": ["ok", "ok", "failed", "unsupported"], "contended": [True, False, False, False],
                       "runtime": "docker", "shaper": "toxiproxy", "duration_s": 10, "repeat": 1})
    banner = headline.banner(df, [])
    assert banner["runs"] == "4 runs: 2 ok, 1 failed, 1 unsupported; 1 contended (other processes took CPU: marked †)"
    assert banner["machine"].startswith("unknown") and banner["duration"] == "10 s"


@pytest.mark.parametrize("xs, expected", [((43_500, 44_100), {"43.6k", "43.8k", "44k"}),
                                          ((800, 40_000), {"1k", "2k", "5k", "10k", "20k"})])
def test_the_axes_read_as_plain_numbers_with_enough_ticks_to_read_a_point(tmp_path, xs, expected):
    """A run of two close tools once showed only '4.35x10^4'-style minor labels on x and 0 and 1 on y."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot(xs, (4.8, 3.6), "o")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)
    headline._readable_ticks(ax)
    fig.canvas.draw()
    shown = {t.get_text() for t in ax.get_xticklabels(minor=True) + ax.get_xticklabels() if t.get_text()}
    assert expected <= shown and not any("10^" in t or "times" in t or "$" in t for t in shown), shown
    assert {"2", "5"} <= {t.get_text() for t in ax.get_yticklabels()}
    plt.close(fig)
