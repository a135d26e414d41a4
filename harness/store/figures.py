"""The figures a tool reports, declared once in the runs.csv order (the first columns of a row,
harness/store/results.py RunRow), and what a tool's parse() returns: Metrics."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Any


def column(doc: str, default: Any = None) -> Any:
    """A runs.csv column; ``doc`` is its line in the README's column table (harness/store/results.py).
    ``default=MISSING`` makes it a required argument."""
    return field(default=default, metadata={"doc": doc})


@dataclass
class Figures:
    """What a tool reports that becomes the runs.csv column of the same name: declared here once,
    in the csv's order (RunRow inherits them). ``None`` means the tool does not report it (never 0)."""

    requests: int | None = column("requests the tool completed, by its own count")
    errors: int | None = column("requests the tool counted as failed")
    rps: float | None = column("requests per second as the tool reports them, over its load window")
    lat_min_ms: float | None = column("fastest response as the tool timed it, ms")
    lat_mean_ms: float | None = column("mean response time, ms")
    lat_p50_ms: float | None = column("median response time, ms")
    lat_p75_ms: float | None = column("75th percentile response time, ms")
    lat_p90_ms: float | None = column("90th percentile response time, ms")
    lat_p95_ms: float | None = column("95th percentile response time, ms")
    lat_p99_ms: float | None = column("99th percentile response time, ms")
    lat_max_ms: float | None = column("slowest response, ms")


@dataclass
class Metrics(Figures):
    """What a tool achieved: its :class:`Figures`, the load window as it timed it, and where they came from."""

    measured_s: float | None = None   # the load window as the tool itself timed it
    # Seconds from launch to the first request, for tools with a start-up phase (JVM, compile,
    # spawning workers), from the tool's own timestamps. The load window is then
    # [load_start_s, load_start_s + measured_s]: memory and CPU averages cover only that window.
    load_start_s: float | None = None
    source: str = ""                  # how the figures were obtained, kept in the results
    notes: list[str] = field(default_factory=list)
    # A flow (issue 37), where the tool times its steps apart: the columns of the same name (harness/store/results.py).
    lat_login_p50_ms: float | None = None
    lat_login_p99_ms: float | None = None
    lat_api_get_p50_ms: float | None = None
    lat_api_get_p99_ms: float | None = None
    lat_p99_9_ms: float | None = None   # where the harness reads the tool's every latency (harness/stats.py)


BELOW_RESOLUTION = "below the tool's {resolution:g} ms timing resolution, left empty: {columns}"
LATENCY_FIELDS = tuple(f.name for f in fields(Figures) if f.name.startswith("lat_"))
# Every latency a tool reports, a flow's steps too: what the tool's clock step may empty.
TIMED_FIELDS = tuple(f.name for f in fields(Metrics) if f.name.startswith("lat_"))


UNDER_STEP, AT_STEP = "<", "~"


def resolution_mark(value: float | None, resolution_ms: float | None) -> str | None:
    """The one below-resolution rule (issue 50.2), for the row and the report alike. A latency under the tool's clock
    step is no figure (a whole-ms tool's 0 means "under 1 ms", not 0 ms): UNDER_STEP, the row leaves it empty. One
    at the step is a figure no finer than the step (a whole-ms tool's 1): AT_STEP, the row keeps it and the report
    shows "~step", never drawing nor ranking it. None: a figure (or no value, or no known step)."""
    if value is None or resolution_ms is None:
        return None
    if value < resolution_ms:
        return UNDER_STEP
    return AT_STEP if value == resolution_ms else None


def below_resolution(metrics: Metrics, resolution_ms: float) -> Metrics:
    """Empty every latency figure under the tool's clock step (resolution_mark), naming them in a note."""
    hidden = [name for name in TIMED_FIELDS if resolution_mark(getattr(metrics, name), resolution_ms) == UNDER_STEP]
    for name in hidden:
        setattr(metrics, name, None)
    if hidden:
        metrics.notes.append(BELOW_RESOLUTION.format(resolution=resolution_ms, columns=", ".join(hidden)))
    return metrics


def emptied_cell(columns: list[str]) -> str | None:
    """The lat_below_resolution cell: the emptied columns as a JSON list (None: none emptied)."""
    return json.dumps(columns) if columns else None


def emptied_columns(cell: str | None) -> list[str]:
    """The columns a lat_below_resolution cell names; a folder written before the JSON list holds them
    comma-separated."""
    if not cell:
        return []
    return json.loads(cell) if cell.startswith("[") else [name.strip() for name in cell.split(",")]


# The order a tool's latency figures keep: each at most the next (the mean lies between the fastest and slowest).
LATENCY_ORDER = ("lat_min_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p99_9_ms",
                 "lat_max_ms")
ORDER_SLACK = 1e-6   # relative: figures printed at different precisions may tie, never cross by more


def figure_problems(metrics: Metrics) -> list[str]:
    """The invariants a tool's figures keep, whatever the tool (harness/row derives every row through this): each
    count, rate, latency and duration a finite number, none below 0 (a duration above it), the latency percentiles
    in order and the mean within min..max. Each one broken, said with its figures (empty: none)."""
    problems = []
    for name in ("requests", "errors", "rps", *TIMED_FIELDS, "measured_s", "load_start_s"):
        value = getattr(metrics, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            problems.append(f"{name} {value!r} is not a finite number")
        elif value < 0 or (name == "measured_s" and value == 0):
            problems.append(f"{name} {value:g} is {'not above' if value == 0 else 'below'} 0")
    if problems:
        return problems
    present = [(name, getattr(metrics, name)) for name in LATENCY_ORDER if getattr(metrics, name) is not None]
    for (low, low_value), (high, high_value) in zip(present, present[1:]):
        if low_value > high_value * (1 + ORDER_SLACK):
            problems.append(f"{low} {low_value:g} > {high} {high_value:g}: the latency figures are out of order")
    mean, least, most = metrics.lat_mean_ms, metrics.lat_min_ms, metrics.lat_max_ms
    if mean is not None and ((least is not None and mean < least * (1 - ORDER_SLACK))
                             or (most is not None and mean > most * (1 + ORDER_SLACK))):
        problems.append(f"lat_mean_ms {mean:g} lies outside lat_min_ms..lat_max_ms ({least}..{most})")
    for step in ("login", "api_get"):
        p50, p99 = getattr(metrics, f"lat_{step}_p50_ms"), getattr(metrics, f"lat_{step}_p99_ms")
        if p50 is not None and p99 is not None and p50 > p99 * (1 + ORDER_SLACK):
            problems.append(f"lat_{step}_p50_ms {p50:g} > lat_{step}_p99_ms {p99:g}")
    return problems
