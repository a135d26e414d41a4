"""Schedule fidelity of a paced (open-model) tool, from when its requests left on the wire
(wire.request_send_times): did they leave at the declared rate, evenly over the run, with the gaps
of the declared schedule? All connections together: the schedule is the tool's, not a connection's.

- Rate over time: the requests in each full 100 ms window from the first request on (the partial
  window before the last request is left out) x 10 = the window's rps; wire_rate_cv = std / mean.
- Gaps between consecutive requests: wire_gap_cv = std / mean. A uniform schedule's gaps are equal
  (CV 0), a Poisson schedule's exponential (CV 1).
- wire_rate_rps = (requests - 1) / span = 1 / the mean gap (n requests span n - 1 gaps).

The verdict, one line:
- the gaps: within GAP_CV_TOLERANCE (0.25) of the declared schedule's CV is "as declared"; above it
  "bursty", below it (a Poisson schedule only) "more regular than declared". Sampling moves a
  Poisson gap CV by about 1/sqrt(gaps): 0.1 at 100 gaps, so below MIN_GAPS (100) there is no verdict.
- the rate over time, when the window CV exceeds what the declared schedule's counting noise gives
  (Poisson: 1/sqrt(requests per window); uniform: 0.5/requests per window, a window holding one
  request more or less) by more than WINDOW_CV_MARGIN (0.15): "rate uneven", with the window range.
- the rate, when the wire rate fell short of the declared one by more than the scenarios' RATE_TOLERANCE.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from harness.scenarios import RATE_TOLERANCE

WINDOW_NS = 100_000_000
EXPECTED_GAP_CV = {"uniform": 0.0, "poisson": 1.0}
GAP_CV_TOLERANCE = 0.25
WINDOW_CV_MARGIN = 0.15
MIN_GAPS = 100


@dataclass
class Fidelity:
    schedule: str                               # as declared: "uniform" or "poisson"
    declared_rps: float
    requests: int
    span_s: float | None                        # first request to last
    wire_rate_rps: float | None                 # (requests - 1) / span
    windows: int                                # full 100 ms windows
    wire_rate_cv: float | None                  # std / mean of the window rates (2 windows or more)
    wire_rate_min_window_rps: float | None
    wire_rate_max_window_rps: float | None
    mean_gap_ms: float | None
    wire_gap_cv: float | None                   # std / mean of the gaps between consecutive requests
    expected_gap_cv: float                      # the declared schedule's
    expected_window_cv: float | None            # the declared schedule's counting noise per window
    verdict: str
    window_rps: np.ndarray = field(repr=False, default_factory=lambda: np.array([]))

    def describe(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "window_rps"}


def schedule_fidelity(send_ns: np.ndarray, declared_rps: float, schedule: str) -> Fidelity:
    """How faithfully requests sent at ``send_ns`` (ns, any order) keep a ``schedule`` at ``declared_rps``."""
    if schedule not in EXPECTED_GAP_CV:
        raise ValueError(f"unknown schedule {schedule!r} (known: {', '.join(EXPECTED_GAP_CV)})")
    times = np.sort(np.asarray(send_ns, dtype=np.int64))
    span_ns = int(times[-1] - times[0]) if len(times) else 0
    gaps = np.diff(times)
    window_rps = _window_rps(times, span_ns)
    facts = dict(
        schedule=schedule, declared_rps=declared_rps, requests=len(times), span_s=span_ns / 1e9 if len(times) else None,
        wire_rate_rps=(len(times) - 1) / (span_ns / 1e9) if span_ns else None, windows=len(window_rps),
        wire_rate_cv=_cv(window_rps) if len(window_rps) >= 2 else None,
        wire_rate_min_window_rps=float(window_rps.min()) if len(window_rps) else None,
        wire_rate_max_window_rps=float(window_rps.max()) if len(window_rps) else None,
        mean_gap_ms=float(gaps.mean()) / 1e6 if len(gaps) else None,
        wire_gap_cv=_cv(gaps) if len(gaps) >= 2 else None,
        expected_gap_cv=EXPECTED_GAP_CV[schedule],
        expected_window_cv=_counting_noise(schedule, window_rps),
    )
    return Fidelity(**facts, verdict=_verdict(facts, len(gaps)), window_rps=window_rps)


def _window_rps(times: np.ndarray, span_ns: int) -> np.ndarray:
    full = span_ns // WINDOW_NS
    index = (times - times[0]) // WINDOW_NS if len(times) else times
    return np.bincount(index[index < full], minlength=full).astype(float) * (1e9 / WINDOW_NS)


def _cv(values: np.ndarray) -> float | None:
    mean = float(values.mean())
    return float(values.std()) / mean if mean > 0 else None


def _counting_noise(schedule: str, window_rps: np.ndarray) -> float | None:
    """The window CV the declared schedule gives by itself at the observed requests per window."""
    per_window = float(window_rps.mean()) * WINDOW_NS / 1e9 if len(window_rps) else 0.0
    if per_window <= 0:
        return None
    return 1 / math.sqrt(per_window) if schedule == "poisson" else 0.5 / per_window


def _verdict(facts: dict, gaps: int) -> str:
    if gaps < MIN_GAPS or facts["wire_gap_cv"] is None:
        return f"too few requests to judge ({facts['requests']} on the wire, {MIN_GAPS + 1} needed)"
    return "; ".join(filter(None, (_gaps_verdict(facts), _window_verdict(facts), _rate_verdict(facts))))


def _gaps_verdict(facts: dict) -> str:
    schedule, cv, expected = facts["schedule"], facts["wire_gap_cv"], facts["expected_gap_cv"]
    if cv > expected + GAP_CV_TOLERANCE:
        return f"bursty: gap CV {cv:.2g} where {schedule} is {expected:g}"
    if cv < expected - GAP_CV_TOLERANCE:
        return f"more regular than declared: gap CV {cv:.2f} where {schedule} is {expected:g}"
    return f"{schedule} as declared (gap CV {cv:.2f})"


def _window_verdict(facts: dict) -> str:
    cv, noise = facts["wire_rate_cv"], facts["expected_window_cv"]
    if cv is None or noise is None or cv <= noise + WINDOW_CV_MARGIN:
        return ""
    return (f"rate uneven: 100 ms windows from {facts['wire_rate_min_window_rps']:,.0f} to "
            f"{facts['wire_rate_max_window_rps']:,.0f} rps (CV {cv:.2f})")


def _rate_verdict(facts: dict) -> str:
    rate, declared = facts["wire_rate_rps"], facts["declared_rps"]
    if rate is None or not declared or rate >= (1 - RATE_TOLERANCE) * declared:
        return ""
    return f"{rate / declared:.0%} of the declared {declared:,.0f} rps"
