"""A rate or stall scenario's columns (issue 13): the rate asked for and achieved, and the p99/max
a tool timing from intended send times must report through the stall (harness/row/stall.py; the stall as recorded: harness/store/stall.py)."""
from __future__ import annotations

from harness.row.stall import expected
from harness.scenarios import RATE_TOLERANCE, Scenario
from harness.store.results import RunRow
from harness.store.stall import StallRecord
from harness.tools.adapter import Declarations



def rate_ok(achieved_rps: float | None, target_rps: float) -> bool | None:
    return None if achieved_rps is None else achieved_rps >= (1 - RATE_TOLERANCE) * target_rps


def fill_rate(row: RunRow, scenario: Scenario, declared: Declarations) -> None:
    if scenario.rate_rps is None:
        return
    row.rate_model = declared.rate_model if declared.open_model else f"closed model, {scenario.vus} looping users: {declared.rate_model}"
    if declared.open_model:
        row.rate_target_rps = scenario.rate_rps
        row.rate_achieved_rps = row.rps
        row.rate_ok = rate_ok(row.rps, scenario.rate_rps)
        row.co_corrected = declared.co_corrected or declared.rate_co_corrected


def fill_unsupported(row: RunRow, scenario: Scenario, declared: Declarations) -> None:
    row.rate_model, row.rate_target_rps = declared.rate_model, scenario.rate_rps
    row.stall_ms, row.stall_at_s = scenario.stall_ms, scenario.stall_at_s


def fill_stall(row: RunRow, scenario: Scenario, record: StallRecord | None) -> None:
    """The stall as it happened, and the p99/max a tool timing from intended send times must report:
    at the target rate, or for a closed-model tool at the rate it achieved (what it would have had
    to send had the stall not held its users back), over the tool's own load window (measured_s)."""
    if scenario.stall_ms is None:
        return
    row.stall_ms, row.stall_at_s = scenario.stall_ms, scenario.stall_at_s
    if record is not None:
        row.stall_actual_ms = record.actual_ms
        row.notes = "; ".join(filter(None, [row.notes, record.describe(), _outside_window(row, record)]))
    rate = row.rate_target_rps or row.rps
    rtt = row.rtt_measured_ms if row.rtt_measured_ms is not None else scenario.rtt_ms
    if rate and record is not None and record.actual_ms is not None:
        duration = row.measured_s or scenario.duration_s
        # Only the stall's length shapes the distribution, not where in the run it falls.
        figures = expected(rate, duration, 0.0, record.actual_ms, rtt)
        row.expected_p99_ms, row.expected_max_ms = figures.p99_ms, figures.max_ms


def _outside_window(row: RunRow, record: StallRecord) -> str:
    """A warning when the stall missed the tool's load window (e.g. a slow start-up)."""
    if record.stopped_at is None or record.actual_ms is None or row.measured_s is None:
        return ""
    start = record.stopped_at - record.origin
    load_start = row.startup_s or 0.0
    if start < load_start or start + record.actual_ms / 1000 > load_start + row.measured_s:
        return (f"WARNING: the stall (+{start:.1f} s) fell outside the tool's load window "
                f"(+{load_start:.1f} s to +{load_start + row.measured_s:.1f} s)")
    return ""
