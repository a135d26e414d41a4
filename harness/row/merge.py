"""One row from the parts of a run spread over several generator hosts (``--generator-host a,b``,
split and released together by the runner), each part derived on its own.

Counts and rates add up (the parts ran at the same time against the same Nginx). Latencies are
merged from each part's HdrHistogram log (ToolAdapter.latency_histogram: the tool's own histogram, or
its per-request log, stored by harness/store/hdr.py): the percentiles of the union of every request
(exact to the log's 3 significant digits), never an average of percentiles. Where a part has no histogram, only min, max and the request-weighted
mean are exact: the percentiles stay empty.
"""
from __future__ import annotations

from collections import Counter

from harness.stats import histogram_metrics
from harness.store.figures import LATENCY_ORDER, Figures, Metrics
from harness.store.hdr import LatencyHistogram


def _sum(values: list) -> float | int | None:
    return None if any(v is None for v in values) else sum(values)


def merged_figures(parts: list[Figures], histograms: list[LatencyHistogram | None]) -> tuple[Metrics, str]:
    """The parts' figures as one generator's, and how they were merged."""
    requests = _sum([p.requests for p in parts])
    merged = Metrics(requests=requests, errors=_sum([p.errors for p in parts]), rps=_sum([p.rps for p in parts]))
    if all(h is not None for h in histograms):
        counts: Counter[float] = Counter()
        for histogram in histograms:
            counts.update(histogram.counts)
        latency = histogram_metrics(counts, total=sum(h.total for h in histograms))
        for name in ("lat_mean_ms", *LATENCY_ORDER):     # p99.9 too: the union's every latency is known
            setattr(merged, name, getattr(latency, name))
        merged.lat_max_ms = _max([p.lat_max_ms for p in parts])   # a cut histogram lacks it; each part knows its own
        return merged, (f"latencies: nearest-rank percentiles over the parts' merged HdrHistogram logs "
                        f"({'; '.join(dict.fromkeys(h.source for h in histograms))})")
    merged.lat_min_ms = _min([p.lat_min_ms for p in parts])
    merged.lat_max_ms = _max([p.lat_max_ms for p in parts])
    if requests and all(p.lat_mean_ms is not None and p.requests for p in parts):
        merged.lat_mean_ms = sum(p.lat_mean_ms * p.requests for p in parts) / requests
    return merged, ("latencies: min, max and the request-weighted mean of the parts; the percentiles stay empty "
                    "(the tool gives no latency histogram or per-request log to merge, and percentiles do not average)")


def _min(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else min(values)


def _max(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else max(values)
