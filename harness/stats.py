"""One latency definition for every tool whose per-request log the harness reads itself.

Percentiles use the nearest-rank definition: p99 is the smallest latency that at least 99% of
requests did not exceed, always a latency that was observed. Every percentile the harness computes
(a tool's per-request log, a histogram, the wire's pairs and handshakes, the stall's expected
schedule) goes through :func:`nearest_rank`; tests/test_percentiles.py fails on a second definition.
The rank is ceil(p% of n) in exact arithmetic: numpy's ``inverted_cdf`` (the same rule) computes it in
floats and takes the next value where p% of n is a whole number it rounds up (p99.9 of 1,000: the 1,000th).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction

import numpy as np

from harness.store.figures import Metrics

PERCENTILES = (50, 75, 90, 95, 99, 99.9)
# While every_latency() is open: each Metrics computed here, with the latencies it came from.
_SEEN: ContextVar[list[tuple[Metrics, dict[float, int], int]] | None] = ContextVar("lth_every_latency", default=None)


@contextmanager
def every_latency() -> Iterator[list[tuple[Metrics, dict[float, int], int]]]:
    """Inside it, every Metrics that latency_metrics or histogram_metrics makes is noted with its latencies as
    {ms: count} and the requests they stand for: how ToolAdapter.latency_histogram finds the very latencies a
    tool's parse() turned into its row, without a second reading of its files."""
    seen: list[tuple[Metrics, dict[float, int], int]] = []
    token = _SEEN.set(seen)
    try:
        yield seen
    finally:
        _SEEN.reset(token)


def _note(metrics: Metrics, counts: Mapping[float, int], total: int) -> Metrics:
    seen = _SEEN.get()
    if seen is not None:
        seen.append((metrics, dict(counts), total))
    return metrics


def percentile_field(p: float) -> str:
    """The row's column of percentile ``p``: lat_p99_ms, lat_p99_9_ms."""
    return f"lat_p{p:g}_ms".replace(".", "_")
DEFINITION = "nearest-rank percentiles over every request in the tool's per-request log"


def nearest_rank(p: float, count: int) -> int:
    """The 1-based rank of the p-th percentile (0 <= p <= 100) among ``count`` values: ceil(p% of count),
    at least 1, in exact arithmetic (``p`` as written: 99.9 is 999/1000)."""
    if not 0 <= p <= 100:
        raise ValueError(f"a percentile is between 0 and 100, not {p}")
    return max(1, math.ceil(Fraction(str(p)) * count / 100))


def percentiles(values: Sequence[float] | np.ndarray, points: Sequence[float]) -> list[float] | None:
    """The nearest-rank percentiles ``points`` of ``values`` (None: no values)."""
    ordered = np.sort(np.asarray(values, dtype=float))
    if ordered.size == 0:
        return None
    return [float(ordered[nearest_rank(p, ordered.size) - 1]) for p in points]


def percentile(values: Sequence[float] | np.ndarray, p: float) -> float | None:
    """One nearest-rank percentile of ``values`` (None: no values)."""
    found = percentiles(values, (p,))
    return None if found is None else found[0]


def latency_metrics(latencies_ms: Sequence[float] | np.ndarray, **fields) -> Metrics:
    """Metrics with min/mean/percentiles/max computed from per-request latencies (ms);
    ``fields`` sets the rest (requests, errors, rps, measured_s, load_start_s, source, notes)."""
    values = np.asarray(latencies_ms, dtype=float)
    if values.size == 0:
        return Metrics(**fields)
    points = percentiles(values, PERCENTILES)
    metrics = Metrics(
        lat_min_ms=float(values.min()), lat_mean_ms=float(values.mean()), lat_max_ms=float(values.max()),
        **{percentile_field(p): float(v) for p, v in zip(PERCENTILES, points)},
        **fields,
    )
    if _SEEN.get() is None:
        return metrics
    return _note(metrics, Counter(values.tolist()), int(values.size))


def histogram_metrics(counts: Mapping[float, int], total: int | None = None, **fields) -> Metrics:
    """As :func:`latency_metrics`, over a histogram {latency ms: count} (same nearest-rank rule).
    ``total`` > the histogram's count: it holds only the lowest values; a percentile beyond them
    and the mean stay None (the max too: set it in ``fields`` if known)."""
    values = np.array(sorted(v for v, c in counts.items() if c > 0), dtype=float)
    weights = np.array([counts[v] for v in values], dtype=np.int64)
    known = int(weights.sum()) if weights.size else 0
    total = known if total is None else total
    if known == 0:
        return Metrics(**fields)
    cumulative = np.cumsum(weights)

    def point(p: float) -> float | None:
        rank = nearest_rank(p, total)
        return float(values[np.searchsorted(cumulative, rank)]) if rank <= known else None

    complete = known == total
    return _note(Metrics(**{
        "lat_min_ms": float(values[0]),
        "lat_mean_ms": float((values * weights).sum() / total) if complete else None,
        "lat_max_ms": float(values[-1]) if complete else None,
        **{percentile_field(p): point(p) for p in PERCENTILES}, **fields,
    }), counts, total)
