"""One latency definition for every tool whose per-request log the harness reads itself.

Percentiles use the nearest-rank definition (numpy's ``inverted_cdf``): p99 is the smallest
latency that at least 99% of requests did not exceed, always a latency that was observed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from harness.store.figures import Metrics

PERCENTILES = (50, 75, 90, 95, 99)
DEFINITION = "nearest-rank percentiles over every request in the tool's per-request log"


def latency_metrics(latencies_ms: Sequence[float] | np.ndarray, **fields) -> Metrics:
    """Metrics with min/mean/percentiles/max computed from per-request latencies (ms);
    ``fields`` sets the rest (requests, errors, rps, measured_s, load_start_s, source, notes)."""
    values = np.asarray(latencies_ms, dtype=float)
    if values.size == 0:
        return Metrics(**fields)
    points = np.percentile(values, PERCENTILES, method="inverted_cdf")
    return Metrics(
        lat_min_ms=float(values.min()), lat_mean_ms=float(values.mean()), lat_max_ms=float(values.max()),
        **{f"lat_p{p}_ms": float(v) for p, v in zip(PERCENTILES, points)},
        **fields,
    )


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

    def point(p: int) -> float | None:
        rank = -(-p * total // 100)          # ceil(p% of total) in integers: no float rounding
        return float(values[np.searchsorted(cumulative, rank)]) if rank <= known else None

    complete = known == total
    return Metrics(**{
        "lat_min_ms": float(values[0]),
        "lat_mean_ms": float((values * weights).sum() / total) if complete else None,
        "lat_max_ms": float(values[-1]) if complete else None,
        **{f"lat_p{p}_ms": point(p) for p in PERCENTILES}, **fields,
    })
