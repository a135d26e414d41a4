"""How sure a figure is (issue 26): the median over repetitions with a 95% bootstrap interval, the
flags that make a figure "not measurable here", and the comparisons built on them.

- ``estimate``: median, interval, CV and flag of one figure over its ok repetitions.
- ``rank``: 1 + the number of tools whose interval lies wholly better; overlapping intervals are "tied".
- ``change``: B against A (two folders, two runtimes), the ratio of medians with its bootstrap interval
  and a verdict: faster, slower, or no significant change.

With few repetitions a bootstrap interval of a median is the range of the runs: with 3 runs two tools
whose ranges do not overlap differ at about the 10% level (two identical tools: 2 x 3!3!/6! = 1 in 10),
with 5 runs at the 1% level. Fewer than 3 runs have no interval (two runs would be 1 in 3): they are
neither ranked apart nor compared.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 26                 # the interval is a pure function of the values: the report is reproducible
CV_LIMIT = 0.25           # run-to-run spread here is 10-20%; above 25% the median is no figure to rank
MIN_RUNS = 3              # fewer runs get no interval: two identical tools' ranges of 2 runs miss each other 1 time in 3
TAIL_REQUESTS = 10        # a percentile needs this many requests beyond it (p99: 1,000 requests)
NOT_MEASURABLE = "not measurable here"
PERCENTILE = re.compile(r"^(?:lat|wire)_p(\d+)_ms$")


@dataclass(frozen=True)
class Estimate:
    median: float
    low: float | None         # None: fewer than MIN_RUNS runs, no interval
    high: float | None
    n: int
    cv: float | None          # standard deviation / mean over the runs (None below 2 runs)
    flag: str | None = None   # why the figure is not measurable here (then it is neither drawn nor ranked)

    @property
    def usable(self) -> bool:
        return self.flag is None and not math.isnan(self.median)

    def overlaps(self, other: "Estimate") -> bool:
        """True when either has no interval: one run cannot tell two tools apart."""
        if None in (self.low, self.high, other.low, other.high):
            return True
        return self.low <= other.high and other.low <= self.high


def bootstrap(values: Sequence[float], statistic=np.median, confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over ``values``."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(SEED)
    stats = statistic(rng.choice(data, size=(resamples, data.size), replace=True), axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


def min_requests(metric: str) -> int:
    """Requests a run needs for ``metric`` to be a measurement: p99 of fewer than 1,000 is a guess."""
    match = PERCENTILE.match(metric)
    if not match:
        return 0
    beyond = 1 - int(match.group(1)) / 100
    return math.ceil(round(TAIL_REQUESTS / beyond, 9))


def estimate(values: Sequence[float], metric: str = "", requests: Sequence[float] = ()) -> Estimate:
    """``values``: the figure of each ok repetition (NaN: not reported); ``requests``: each run's count,
    checked against what ``metric`` needs (min_requests)."""
    data = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if data.size == 0:
        return Estimate(math.nan, None, None, 0, None)
    median = float(np.median(data))
    low, high = bootstrap(data) if data.size >= MIN_RUNS else (None, None)
    mean = float(data.mean())
    cv = float(data.std(ddof=1) / abs(mean)) if data.size > 1 and mean else None
    return Estimate(median, low, high, int(data.size), cv, _flag(metric, cv, requests))


def _flag(metric: str, cv: float | None, requests: Sequence[float]) -> str | None:
    counts = [r for r in requests if r is not None and not math.isnan(r)]
    needed = min_requests(metric)
    if needed and counts and min(counts) < needed:
        name = PERCENTILE.match(metric).group(1)
        return f"{NOT_MEASURABLE}: p{name} of {min(counts):,.0f} requests"
    if cv is not None and cv > CV_LIMIT:
        return f"{NOT_MEASURABLE}: CV {cv:.0%}"
    return None


def rank(estimates: Mapping[str, Estimate], higher_is_better: bool = True) -> dict[str, tuple[int, list[str]]]:
    """Per label with an interval (2 runs or more, not flagged): (1 + the labels whose interval lies wholly
    better, the labels whose interval overlaps its own: "tied")."""
    usable = {k: e for k, e in estimates.items() if e.usable and e.low is not None}
    result = {}
    for label, mine in usable.items():
        better = [k for k, e in usable.items() if k != label and not e.overlaps(mine)
                  and (e.median > mine.median) == higher_is_better]
        tied = sorted(k for k, e in usable.items() if k != label and e.overlaps(mine))
        result[label] = (1 + len(better), tied)
    return result


@dataclass(frozen=True)
class Change:
    ratio: float              # median(B) / median(A)
    low: float | None
    high: float | None
    verdict: str              # "higher", "lower", "no significant change", or why there is none


def change(a: Sequence[float], b: Sequence[float]) -> Change:
    """B against A: ratio of medians, bootstrap interval (each side resampled on its own), verdict. A side
    without a figure (no ok run, or the tool does not report it or cannot resolve it) gets no ratio."""
    a_data, b_data = (np.asarray([v for v in s if not math.isnan(v)], dtype=float) for s in (a, b))
    if a_data.size == 0 or b_data.size == 0:
        return Change(math.nan, None, None, "no figure on " + ("either side" if a_data.size == b_data.size else
                                                                "side A" if a_data.size == 0 else "side B"))
    ratio = float(np.median(b_data) / np.median(a_data))
    if min(a_data.size, b_data.size) < MIN_RUNS:
        return Change(ratio, None, None, f"{min(a_data.size, b_data.size)} run(s): no interval (REPEAT=3 or more)")
    rng = np.random.default_rng(SEED)
    a_medians = np.median(rng.choice(a_data, size=(RESAMPLES, a_data.size)), axis=1)
    b_medians = np.median(rng.choice(b_data, size=(RESAMPLES, b_data.size)), axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = (float(x) for x in np.percentile(b_medians / a_medians, [tail, 100 - tail]))
    verdict = "higher" if low > 1 else "lower" if high < 1 else "no significant change"
    return Change(ratio, low, high, verdict)
