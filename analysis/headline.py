"""The report's first screen (issue 48): one picture that ranks the tools on what this run measured, in the
manner of ann-benchmarks' trade-off plots, and the banner a reader needs to trust it.

x: requests per CPU-second of the tool (the scorecard's req_per_cpu_s: what a generator costs), y: the latency
it adds (its p50 minus the wire's where every ranked tool was captured, else minus the RTT: the scorecard's
added_ms). Better is right and low; the tools no other tool beats on both axes form the front, which is the
verdict. Everything is read from the scorecard's cells, so the picture and the table cannot disagree.
"""
from __future__ import annotations

import math

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.figures import save  # noqa: E402
from analysis.numbers import number  # noqa: E402

OK = "ok"


@dataclass(frozen=True)
class Point:
    label: str
    x: float                       # requests per CPU-second, median
    x_low: float | None
    x_high: float | None
    y: float                       # ms the tool adds, median
    y_low: float | None
    y_high: float | None
    contended: bool
    front: bool = False            # no other tool is both faster per core and adds less


@dataclass(frozen=True)
class Axes:
    y_column: str                  # the scorecard column of y
    y_label: str
    x_scenario: str
    y_scenario: str


def axes(card: list[dict]) -> Axes | None:
    """The wire's error where every tool with an x has one, else the added latency over the RTT."""
    with_x = [row for row in card if row["req_per_cpu_s"].facts]
    if not with_x:
        return None
    x_scenario = with_x[0]["req_per_cpu_s"].facts["scenario"]
    if all(row["p50_error_ms"].facts for row in with_x):
        scenario = with_x[0]["p50_error_ms"].facts["scenario"]
        return Axes("p50_error_ms", "its p50 minus the wire's p50, ms (captured)", x_scenario, scenario)
    added = [row["added_ms"].facts for row in with_x if row["added_ms"].facts]
    if not added:
        return None
    return Axes("added_ms", "latency it adds: its p50 minus the RTT, ms", x_scenario, added[0]["scenario"])


def points(card: list[dict], chosen: Axes) -> list[Point]:
    found = []
    for row in card:
        speed, delay = row["req_per_cpu_s"], row[chosen.y_column]
        if not speed.facts or not delay.facts:
            continue
        y = delay.facts.get("added_ms", delay.facts.get("error_ms"))
        found.append(Point(row["tool"], speed.facts["median"], speed.facts.get("low"), speed.facts.get("high"), y,
                           delay.facts.get("low"), delay.facts.get("high"), speed.contended or delay.contended))
    return [_with_front(p, found) for p in found]


def _with_front(point: Point, every: list[Point]) -> Point:
    beaten = any(o.x >= point.x and abs(o.y) <= abs(point.y) and (o.x > point.x or abs(o.y) < abs(point.y))
                 for o in every if o is not point)
    return Point(**{**point.__dict__, "front": not beaten})


def draw(found: list[Point], chosen: Axes, held: str, out: Path, svg: bool = False) -> Path:
    """The trade-off plot as out/headline.png (and .svg with ``svg``); ``held``: what its figures stand on."""
    fig, ax = plt.subplots(figsize=(9.2, 5.4), dpi=100)
    for p in sorted(found, key=lambda p: p.x):
        colour = "tab:green" if p.front else "tab:blue"
        xerr = [[p.x - p.x_low], [p.x_high - p.x]] if p.x_low is not None else None
        yerr = [[p.y - p.y_low], [p.y_high - p.y]] if p.y_low is not None else None
        ax.errorbar(p.x, p.y, xerr=xerr, yerr=yerr, fmt="o", ms=8, color=colour, ecolor=colour, elinewidth=1,
                    capsize=2, mfc="white" if p.contended else colour, mew=1.5, zorder=3)
    front = sorted((p for p in found if p.front), key=lambda p: p.x)
    if len(front) > 1:
        ax.plot([p.x for p in front], [p.y for p in front], color="tab:green", alpha=0.4, linewidth=2, zorder=2)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.margins(x=0.08, y=0.1)
    ax.axhline(0, color="grey", linewidth=0.8, zorder=1)
    _readable_ticks(ax)
    ax.set_xlabel(f"requests per CPU-second of the tool, {chosen.x_scenario} (log)   → better", fontsize=9)
    ax.set_ylabel(f"{chosen.y_label}, {chosen.y_scenario}   ↓ better", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.annotate("better", xy=(0.995, 0.01), xytext=(0.93, 0.11), xycoords="axes fraction", fontsize=10,
                color="tab:green", fontweight="bold", ha="center", zorder=1,
                bbox={"boxstyle": "round", "fc": "white", "ec": "none", "alpha": 0.8},
                arrowprops={"arrowstyle": "-|>", "color": "tab:green", "lw": 2})
    ax.set_title(f"Which tool costs least and adds least? Green: no tool is both faster per core and adds less. "
                 f"Hollow, †: a contended run.\n{held}", fontsize=9, loc="left")
    fig.tight_layout()
    _label(ax, found)
    return save(fig, out, "headline", svg, dpi=100)


def _readable_ticks(ax: plt.Axes) -> None:
    """Plain numbers on both axes (43.5k, not 4.35x10^4), and enough of them to read a point's value: the log
    x axis labels its minor ticks where it spans less than 1.5 decades (only the 2s and 5s up to four); the
    symlog y axis ticks 1, 2 and 5 of each decade."""
    engineering = matplotlib.ticker.EngFormatter(sep="")
    low, high = ax.get_xlim()
    decades = math.log10(high / low) if low > 0 else math.inf

    def minor(value: float, _: int) -> str:
        mantissa = round(value / 10 ** math.floor(math.log10(value)), 6) if value > 0 else 0
        shown = decades < 1.5 or (decades < 4 and mantissa in (2, 5))
        return engineering(value) if shown else ""

    ax.xaxis.set_major_formatter(engineering)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor))
    ax.tick_params(axis="x", which="minor", labelsize=8)
    ax.yaxis.set_major_locator(matplotlib.ticker.SymmetricalLogLocator(linthresh=1.0, base=10, subs=[1.0, 2.0, 5.0]))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))


# Where a point's label may go, in points from the point, tried in this order: the first that overlaps no label
# placed before it and no other point wins (a greedy placement; the front's labels are placed first).
OFFSETS = [(6, 4), (6, -11), (-6, 4), (-6, -11), (6, 13), (-6, 13), (6, -20), (-6, -20), (14, -3), (-14, -3)]


def _label(ax: plt.Axes, found: list[Point]) -> None:
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    dots = [ax.transData.transform((p.x, p.y)) for p in found]
    taken: list = []
    for p in sorted(found, key=lambda p: (not p.front, -p.x)):
        anchor = ax.transData.transform((p.x, p.y))
        text = p.label + (" †" if p.contended else "")
        for dx, dy in OFFSETS:
            label = ax.annotate(text, (p.x, p.y), xytext=(dx, dy), textcoords="offset points", fontsize=8.5,
                                ha="left" if dx > 0 else "right", color="black" if p.front else "dimgrey", zorder=4)
            box = label.get_window_extent(renderer).expanded(1.02, 1.05)
            clear = not any(box.overlaps(other) for other in taken) and not any(
                box.contains(*d) for d in dots if not (abs(d[0] - anchor[0]) < 1 and abs(d[1] - anchor[1]) < 1))
            inside = ax.get_window_extent(renderer).contains(box.x0, box.y0) and \
                ax.get_window_extent(renderer).contains(box.x1, box.y1)
            if clear and inside or (dx, dy) == OFFSETS[-1]:
                taken.append(box)
                break
            label.remove()


def verdict(found: list[Point], chosen: Axes) -> list[str]:
    """The sentences beside the picture."""
    if not found:
        return []
    front = sorted((p for p in found if p.front), key=lambda p: -p.x)
    fastest = max(found, key=lambda p: p.x)
    closest = min(found, key=lambda p: abs(p.y))
    said = [f"Best trade-off here: {', '.join(p.label for p in front)} (no other tool is both faster per core "
            f"and adds less latency).",
            f"Cheapest per request: {fastest.label}, {number(fastest.x)} requests per CPU-second ({chosen.x_scenario}).",
            f"Closest to the network: {closest.label}, {closest.y:+.3g} ms ({chosen.y_scenario})."]
    worst = max(found, key=lambda p: abs(p.y))
    if abs(worst.y) >= 5:
        said.append(f"Adds the most: {worst.label}, {worst.y:+.3g} ms: its latency figures say more about the tool "
                    f"than about the server.")
    return said


def left_out(card: list[dict], found: list[Point], chosen: Axes) -> str:
    """The tools the picture cannot place, and why (their scorecard cells' reasons)."""
    placed = {p.label for p in found}
    why = []
    for row in card:
        if row["tool"] in placed:
            continue
        cell = row["req_per_cpu_s"] if not row["req_per_cpu_s"].facts else row[chosen.y_column]
        why.append(f"{row['tool']} ({cell.text})")
    return "Not on the picture: " + "; ".join(why) + "." if why else ""


def banner(df: pd.DataFrame, environments: list[dict]) -> dict[str, str]:
    """The context a reader needs to trust the picture: machine, runtime, shaper, duration, repeats, runs."""
    machines = sorted({f"{e.get('cpu_model', '?')}, {e.get('cores', '?')} cores" for e in environments})
    counts = df["status"].value_counts()
    contended = int(df.get("contended", pd.Series(False, index=df.index)).fillna(False).astype(bool).sum())
    runs = f"{len(df)} runs: {counts.get(OK, 0)} ok" + "".join(
        f", {counts[s]} {s}" for s in ("failed", "timeout", "unsupported") if counts.get(s, 0))
    runs += f"; {contended} contended (other processes took CPU: marked †)" if contended else "; none contended"
    durations = sorted({int(d) for d in df["duration_s"].dropna()})
    return {"machine": "; ".join(machines) or "unknown (no environment.json)",
            "runtime": ", ".join(sorted(df["runtime"].dropna().unique())),
            "shaper": ", ".join(sorted(df["shaper"].dropna().astype(str).unique())) if "shaper" in df else "unknown",
            "duration": ", ".join(f"{d} s" for d in durations),
            "repeats": str(int(df["repeat"].max())) if "repeat" in df and len(df) else "1",
            "runs": runs}
