"""A run's latency distribution as an HdrHistogram log (``latency.hlog``), the format HdrHistogram's tools
(HistogramLogProcessor, hdr-plot) and other harnesses read, written and read through the ``hdrhistogram``
library. Values are integer nanoseconds with 3 significant digits: a value comes back within 0.1% of what
was recorded, and logs from several generators add up exactly (harness/row/merge.py), never an average
of percentiles. One interval per log: the tools give their latencies for the whole run, not per interval.
"""
from __future__ import annotations

import datetime
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader, HistogramLogWriter

from harness.store.safe import write_text_inside

LOG_NAME = "latency.hlog"           # the tool's latencies (harness/suite/run.py)
LEGACY_HISTOGRAM_CSV = "latency-histogram.csv"   # what folders before the HdrHistogram log kept (read only)
WIRE_LOG = "wire-latency.hlog"      # the wire's, with --capture (harness/network/capture.py)
NS_PER_MS = 1_000_000
LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS = 1, 3_600 * 1_000 * NS_PER_MS, 3   # 1 ns .. 1 h, 0.1%


@dataclass(frozen=True)
class LatencyHistogram:
    """A run's latencies as {ms: requests}, for merging several generators' runs (harness/row/merge.py)."""

    counts: dict[float, int]
    total: int          # requests it stands for; above sum(counts): only the lowest latencies are known
    source: str         # where it came from


def write_histogram(histogram: LatencyHistogram, folder: Path, resolution_ms: float | None = None,
                    started_at: float = 0.0, duration_s: float = 0.0) -> dict:
    """A part's latencies as an HdrHistogram log beside its output (the tool's own per-request data can be
    large and some adapters drop it once read); returns what the part's record keeps about it."""
    comments = [f"source: {histogram.source}", f"requests: {histogram.total} (recorded: {sum(histogram.counts.values())})"]
    if resolution_ms is not None:
        comments.append(f"the tool's timing resolution: {resolution_ms:g} ms")
    name = write_log(histogram.counts, folder, comments, started_at, duration_s)
    return {"file": name, "total": histogram.total, "source": histogram.source, "format": "hdrhistogram log, ns"}


def read_histogram(folder: Path, stored: dict) -> LatencyHistogram:
    """The histogram a part's record names (``stored``: what write_histogram returned), from ``folder``."""
    path = folder / stored["file"]
    if stored["file"] == LEGACY_HISTOGRAM_CSV:
        rows = path.read_text().splitlines()[1:]
        counts = {float(ms): int(count) for ms, count in (row.split(",") for row in rows)}
    else:
        counts = to_counts(read_log(path))
    return LatencyHistogram(counts, total=stored["total"], source=stored["source"])


def empty() -> HdrHistogram:
    return HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)


def from_counts(counts: Mapping[float, int]) -> HdrHistogram:
    """{latency ms: count} as a histogram (a latency beyond an hour is clamped to the hour)."""
    histogram = empty()
    for ms, count in counts.items():
        if count > 0:
            histogram.record_value(min(max(0, round(ms * NS_PER_MS)), HIGHEST_NS), count)
    return histogram


def counts_of(latencies_ms: np.ndarray) -> dict[float, int]:
    """Many latencies as {ms: count}, each value first floored to the lowest one its HdrHistogram bucket holds
    (numpy, so that millions of requests are tens of thousands of record calls, not millions)."""
    ns = np.clip(np.rint(np.asarray(latencies_ms, dtype=np.float64) * NS_PER_MS), 0, HIGHEST_NS).astype(np.int64)
    shift = np.maximum(0, np.floor(np.log2(np.maximum(ns, 1))).astype(np.int64) - 10)   # 2048 sub-buckets: 3 digits
    values, counts = np.unique((ns >> shift) << shift, return_counts=True)
    return {int(v) / NS_PER_MS: int(c) for v, c in zip(values, counts)}


def to_counts(histogram: HdrHistogram) -> dict[float, int]:
    """{latency ms: count}, each bucket at the highest value it stands for (as HdrHistogram reports it)."""
    return {item.value_iterated_to / NS_PER_MS: item.count_at_value_iterated_to
            for item in histogram.get_recorded_iterator()}


def write_log(counts: Mapping[float, int], folder: Path, comments: Iterable[str], started_at: float = 0.0,
              duration_s: float = 0.0, name: str = LOG_NAME) -> str:
    """The counts as a one-interval HdrHistogram log in ``folder``; returns its file name. comments: what
    the values are (the source, the tool's resolution), one ``#`` line each."""
    text = io.StringIO()
    writer = HistogramLogWriter(text)
    writer.output_log_format_version()
    for comment in comments:
        writer.output_comment(" ".join(str(comment).split()))
    writer.output_comment("values in nanoseconds (max column in ms), 3 significant digits")
    if started_at:
        when = datetime.datetime.fromtimestamp(started_at, datetime.timezone.utc).isoformat()
        writer.output_comment(f"[StartTime: {started_at:.3f} (seconds since epoch), {when}]")
    writer.output_legend()
    histogram = from_counts(counts)
    writer.output_interval_histogram(histogram, end_time_stamp_sec=duration_s)   # starts at 0: the StartTime
    write_text_inside(folder, name, text.getvalue())
    return name


def read_log(path: Path) -> HdrHistogram:
    """Every interval of the log added into one histogram."""
    total = empty()
    reader = HistogramLogReader(str(path), empty())
    try:
        while reader.add_next_interval_histogram(total) is not None:
            pass
    finally:
        reader.close()
    return total
