"""Memory per VU as a slope (issue 35): the least-squares line of each tool's average RSS
(mem_avg_mb) over the VU levels its ok runs hold, in KiB per VU, with a 95% interval from the
fit's residuals (Student's t, n - 2 degrees of freedom) when there are three runs or more.

Why a slope, not a ratio against a 1-VU run: a tool's RSS is a footprint plus what each VU costs,
and the footprint (a JVM's heap, Node's runtime) dwarfs the per-VU part at 20 VUs. A ratio at one
level divides noise by the VUs (the same Node tool gave 36, 146 and 502 KiB/VU at 20 VUs in three
runs); a slope over levels 50 to 1,000 cancels the footprint, and its intercept is that footprint.
The shootout's 50-1,000 VUs at 50 ms give five levels; the quick run two (no interval).
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
        interval = (f" [{self.low:,.0f}, {self.high:,.0f}]" if self.low is not None
                    else " (two runs: no interval)")
        flat = "; no growth per VU measurable" if self.spans_zero else ""
        return f"{self.kib_per_vu:,.0f}{interval} KiB/VU over {levels} VUs{flat}{grows}"


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
