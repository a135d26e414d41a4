"""One scenario on several generator hosts at once (``--generator-host a,b``): the VUs (and a rate
scenario's arrival rate) split evenly,
the tools released together (the launcher's barrier, harness/runtimes/generator.py), each part
parsed on its own, and one row merged from the parts.

Counts and rates add up (the parts ran at the same time against the same Nginx). Latencies are
merged from each part's latency histogram (ToolAdapter.latency_histogram: the tool's own
histogram, or its per-request log): the percentiles of the union of every request, never an
average of percentiles. Where a part has no histogram, only min, max and the request-weighted
mean are exact: the percentiles stay empty.
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import fields
from pathlib import Path

from harness.adapter import Figures, LatencyHistogram
from harness.execution import Execution, execute
from harness.runtimes.base import Session
from harness.stats import histogram_metrics

PART_DIR = "generator-{index}"
HISTOGRAM_CSV = "latency-histogram.csv"


def split_evenly(total: int, parts: int) -> list[int]:
    """VUs or an arrival rate, as even as whole numbers allow: 20 over 3 -> 7, 7, 6."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def execute_together(runs: list[tuple[Session, list[str], Path]], timeout_s: float,
                     sampled_process: str | None) -> list[Execution | BaseException]:
    """Every (session, argv, folder) at once, one thread each; a part that fails to run gives its exception."""
    results: list[Execution | BaseException] = [RuntimeError("did not run")] * len(runs)

    def one(index: int, session: Session, argv: list[str], folder: Path) -> None:
        try:
            results[index] = execute(session, argv, folder, timeout_s, sampled_process)
        except BaseException as exc:  # noqa: BLE001 - reported as that part's failure
            results[index] = exc

    threads = [threading.Thread(target=one, args=(i, *run), daemon=True) for i, run in enumerate(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def write_histogram(histogram: LatencyHistogram, folder: Path) -> None:
    lines = ["latency_ms,count", *(f"{ms:.6f},{count}" for ms, count in sorted(histogram.counts.items()))]
    (folder / HISTOGRAM_CSV).write_text("\n".join(lines) + "\n")


def _sum(values: list) -> float | int | None:
    return None if any(v is None for v in values) else sum(values)


def merged_figures(parts: list[Figures], histograms: list[LatencyHistogram | None]) -> tuple[Figures, str]:
    """The parts' figures as one generator's, and how they were merged."""
    requests = _sum([p.requests for p in parts])
    merged = Figures(requests=requests, errors=_sum([p.errors for p in parts]), rps=_sum([p.rps for p in parts]))
    if all(h is not None for h in histograms):
        counts: Counter[float] = Counter()
        for histogram in histograms:
            counts.update(histogram.counts)
        latency = histogram_metrics(counts, total=sum(h.total for h in histograms))
        for name in (f.name for f in fields(Figures) if f.name.startswith("lat_")):
            setattr(merged, name, getattr(latency, name))
        merged.lat_max_ms = _max([p.lat_max_ms for p in parts])   # a cut histogram lacks it; each part knows its own
        return merged, (f"latencies: nearest-rank percentiles over the parts' merged histograms "
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
