"""Memory per VU as a slope (issue 35): the least-squares line of each tool's average RSS
(mem_avg_mb) over the VU levels its ok runs hold, in KiB per VU, with a 95% interval from the
fit's residuals (Student's t, n - 2 degrees of freedom) when there are three runs or more.

Why a slope, not a ratio against a 1-VU run: a tool's RSS is a footprint plus what each VU costs,
and the footprint (a JVM's heap, Node's runtime) dwarfs the per-VU part at 20 VUs. A ratio at one
level divides noise by the VUs (the same Node tool gave 36, 146 and 502 KiB/VU at 20 VUs in three
runs); a slope over levels 50 to 1,000 cancels the footprint, and its intercept is that footprint.
The shootout's 50-1,000 VUs at 50 ms give five levels. A slope is fitted only over runs at one RTT and at
least three VU levels (MIN_LEVELS): across RTTs, throughput would be read as "per VU" (the quick run's 20 VUs at
0.1 ms serve 30 times the requests of its 100 VUs at 50 ms, and half the tools came out negative).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

# Student's t, two-sided 95%, by degrees of freedom; a df between two entries takes the lower one (wider).
T_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}
MIB_TO_KIB = 1024.0
# A tool "grows within a run" when, in the median run, its RSS rose by this share of its average over the load
# window (mem_growth_mb_per_s x measured_s), rising in two thirds of its runs at least: then part of what the slope
# calls per VU is per request served (the study: some tools grow until the end, computing their results).
GROWS_SHARE = 0.10
MIN_LEVELS = 3
NOT_MEASURED = ("not measured by this suite: needs three VU levels at one RTT "
                "(`make bench-all`: 50 to 1,000 VUs at 50 ms)")


@dataclass(frozen=True)
class Slope:
    kib_per_vu: float | None          # None: no slope (why_none says why)
    low: float | None = None          # the 95% interval; None below three runs
    high: float | None = None
    footprint_mb: float | None = None  # the line at 0 VUs: the tool's own RSS
    levels: tuple[int, ...] = ()
    runs: int = 0
    why_none: str = ""
    grows_mb_per_s: float | None = None   # the median run's RSS growth over its load window, when it grows (GROWS_SHARE)
    grows_share: float | None = None      # that growth over the window / the run's average RSS
    rtt_ms: float | None = None           # the one RTT the runs were taken at

    @property
    def spans_zero(self) -> bool:
        """The interval holds 0: RSS did not measurably grow with VUs."""
        return self.low is not None and self.high is not None and self.low <= 0 <= self.high

    def describe(self) -> str:
        grows = (f"; grows within a run (+{self.grows_mb_per_s:.2g} MiB/s, {self.grows_share:.0%} of its RSS over "
                 f"the load window): with time or requests served, not VUs" if self.grows_mb_per_s is not None else "")
        if self.kib_per_vu is None:
            return self.why_none + grows
        levels = "/".join(str(v) for v in self.levels)
        at = "" if self.rtt_ms is None else f" at {self.rtt_ms:g} ms"
        interval = (f" [{self.low:,.0f}, {self.high:,.0f}]" if self.low is not None
                    else " (two runs: no interval)")
        figure = f"{self.kib_per_vu:,.0f}{interval} KiB/VU over {levels} VUs{at}"
        if self.spans_zero:
            return f"no growth per VU measurable ({figure}){grows}"
        return figure + grows

    @property
    def short(self) -> str:
        """The scorecard's cell: the figure alone."""
        if self.kib_per_vu is None:
            return "not measured"
        if self.spans_zero:
            return "no growth"
        return f"{self.kib_per_vu:,.0f}" + (f" [{self.low:,.0f}, {self.high:,.0f}]" if self.low is not None else "")


def t_95(df: int) -> float:
    return T_95[max(k for k in T_95 if k <= df)]


def fit(vus: list[float], rss_mb: list[float]) -> Slope:
    """The slope of ``rss_mb`` over ``vus`` (one point per run)."""
    x, y = np.asarray(vus, dtype=float), np.asarray(rss_mb, dtype=float)
    levels = tuple(sorted({int(v) for v in x}))
    if x.size == 0:
        return Slope(None, why_none="no run with memory samples")
    if len(levels) < 2:
        return Slope(None, levels=levels, runs=int(x.size),
                     why_none=f"one VU level ({levels[0]}): a slope needs two")
    slope, intercept = np.polyfit(x, y, 1)
    low = high = None
    if x.size >= 3:
        residual = y - (slope * x + intercept)
        spread = math.sqrt(float(residual @ residual) / (x.size - 2) / float(((x - x.mean()) ** 2).sum()))
        half = t_95(x.size - 2) * spread * MIB_TO_KIB
        low, high = slope * MIB_TO_KIB - half, slope * MIB_TO_KIB + half
    return Slope(float(slope * MIB_TO_KIB), low, high, float(intercept), levels, int(x.size))


def within_run_growth(runs: pd.DataFrame) -> tuple[float | None, float | None]:
    """(median growth MiB/s, median share of the average RSS) when these runs grow (GROWS_SHARE), else (None, None)."""
    if "mem_growth_mb_per_s" not in runs:
        return None, None
    known = runs[runs["mem_growth_mb_per_s"].notna() & runs["mem_avg_mb"].gt(0) & runs["measured_s"].gt(0)]
    if known.empty:
        return None, None
    share = known["mem_growth_mb_per_s"] * known["measured_s"] / known["mem_avg_mb"]
    if share.median() < GROWS_SHARE or (known["mem_growth_mb_per_s"] > 0).mean() < 2 / 3:
        return None, None
    return float(known["mem_growth_mb_per_s"].median()), float(share.median())


def slopes(runs: pd.DataFrame) -> dict[str, Slope]:
    """Per label, the slope over its rows (the caller picks them: ok, closed-model) that have memory, and
    whether its RSS grows within a run."""
    found = {}
    for label, group in runs.groupby("label"):
        measured = group[group["mem_avg_mb"].notna()]
        grows, share = within_run_growth(measured)
        found[label] = replace(fit(list(measured["vus"]), list(measured["mem_avg_mb"])),
                               grows_mb_per_s=grows, grows_share=share)
    return found


def one_rtt_runs(runs: pd.DataFrame) -> tuple[float, pd.DataFrame] | None:
    """The RTT at which these runs hold the most VU levels (MIN_LEVELS at least; ties: the highest RTT, as the
    shootout's 50 ms), and the runs there; None when no RTT has enough levels."""
    measured = runs[runs["mem_avg_mb"].notna()]
    levels = measured.groupby("rtt_target_ms")["vus"].nunique()
    levels = levels[levels >= MIN_LEVELS]
    if levels.empty:
        return None
    rtt = max(levels.index, key=lambda r: (levels[r], r))
    return float(rtt), measured[measured["rtt_target_ms"] == rtt]


def per_vu_slopes(closed_ok: pd.DataFrame) -> dict[str, Slope]:
    """Per label: its slope at one RTT over three VU levels or more (one_rtt_runs), else no slope, NOT_MEASURED.
    ``closed_ok``: the caller's ok closed-model runs."""
    found = {}
    for label, group in closed_ok.groupby("label"):
        chosen = one_rtt_runs(group)
        if chosen is None:
            found[label] = Slope(None, levels=tuple(sorted({int(v) for v in group["vus"].dropna()})),
                                 runs=len(group), why_none=NOT_MEASURED)
            continue
        rtt, at = chosen
        found[label] = replace(slopes(at.assign(label=label))[label], rtt_ms=rtt)
    return found
