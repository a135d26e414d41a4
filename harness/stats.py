"""One latency definition for every tool whose per-request log the harness reads itself.

Percentiles use the nearest-rank definition (numpy's ``inverted_cdf``): p99 is the smallest
latency that at least 99% of requests did not exceed, always a latency that was observed.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.adapter import Metrics

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
