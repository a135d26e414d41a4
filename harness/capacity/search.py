"""The capacity search: the highest arrival rate a (tool, target) pair sustains, for a tool that paces
an open-model rate. After Envoy Nighthawk's adaptive load controller: an exponential phase from
``start_rps`` multiplying by ``growth`` until a step fails, then a binary search between the highest
passing rate and the lowest failing one until their gap is within ``resolution`` of the passing rate.
If the very first step fails the search walks down (dividing by ``growth``) until a step passes.

The module runs nothing: the caller's ``measure(rate_rps) -> Step`` does one short run at that rate.
Rates are integers (tools take integers) and no rate is measured twice.

The first probe inside the bracket is the failing step's achieved rate when that lies inside it: an
overloaded open-model run delivers about what the pair can carry, so the probe lands near the knee
(37,000 rps from 1,000 at 2% takes 11 steps instead of plain bisection's 13). Every later probe is the
midpoint, so a poor guess costs one step at most.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

RUN_FAILED, ERRORS, TOOL, TARGET, RATE, SLO = "run failed", "errors", "tool", "target", "rate", "slo"


@dataclass(frozen=True)
class Step:
    """The facts of one short run at one rate."""
    rate_target_rps: int
    rate_achieved_rps: float | None
    errors: int
    requests: int
    lat_p99_ms: float | None
    tool_saturated: bool | None
    target_saturated: bool | None
    status: str                 # "ok", or how the run ended: "failed", "timeout"
    error: str = ""
    scheduled_s: float | None = None   # the step's length: its schedule holds rate x this many requests

    @property
    def delivered_fraction(self) -> float | None:
        """Requests answered / the requests the step's schedule holds; None without a schedule."""
        if self.scheduled_s is None or not self.rate_target_rps:
            return None
        return self.requests / (self.rate_target_rps * self.scheduled_s)


@dataclass(frozen=True)
class Criteria:
    slo_p99_ms: float                    # e.g. 10 x the unloaded p99
    min_achieved_fraction: float = 0.99  # of the schedule's requests delivered (or of the rate, without one)
    min_window_fraction: float = 0.95    # of the rate, over the tool's own window (the suite's rate_ok tolerance)
    max_error_fraction: float = 0.0
    resolution: float = 0.02             # stop when (lowest fail - highest pass) / highest pass <= this
    max_steps: int = 12
    start_rps: int = 1000
    growth: float = 2.0
    max_rps: int = 1_000_000

    def __post_init__(self) -> None:
        if self.growth <= 1 or self.resolution <= 0 or self.max_steps < 1 or not 1 <= self.start_rps <= self.max_rps:
            raise ValueError(f"criteria cannot drive a search: {self}")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    limited_by: str | None          # the first of ``failed``; None when the step passed
    failed: tuple[str, ...] = ()    # every criterion missed, in blame order (see judge)
    target_saturated: bool = False  # True even on a pass: then the knee is the target's


def judge(step: Step, criteria: Criteria) -> Verdict:
    """Which criteria ``step`` fails, in blame order: "run failed" (status not ok: nothing else is
    judged), "errors" (errors / requests above max_error_fraction), "tool", "target", "rate" (see
    rate_missed), "slo" (p99 above the SLO, or not reported).

    Saturation alone fails nothing: a pair that met the rate and the SLO with a side at full CPU
    sustained that rate. When the rate or the SLO was missed, a saturated side is named before them as
    the limit: the tool first (it could not keep up, so the target was not the one tested), then the
    target. ``limited_by`` is the first criterion failed."""
    target_saturated = step.target_saturated is True
    if step.status != "ok":
        return Verdict(False, RUN_FAILED, (RUN_FAILED,), target_saturated)
    missed = []
    if step.errors > criteria.max_error_fraction * step.requests:
        missed.append(ERRORS)
    missed_rate = rate_missed(step, criteria)
    slo_missed = step.lat_p99_ms is None or step.lat_p99_ms > criteria.slo_p99_ms
    if missed_rate or slo_missed:
        missed += [side for side, flag in ((TOOL, step.tool_saturated), (TARGET, step.target_saturated)) if flag]
    missed += [name for name, flag in ((RATE, missed_rate), (SLO, slo_missed)) if flag]
    return Verdict(not missed, missed[0] if missed else None, tuple(missed), target_saturated)


def rate_missed(step: Step, criteria: Criteria) -> bool:
    """The rate is missed when the tool reports none; with a schedule, when fewer than
    min_achieved_fraction of its requests were delivered, or the rate over the tool's own window fell
    below min_window_fraction; without one, when that rate fell below min_achieved_fraction.

    The count decides to 1%, not the tool's window: that window also holds the tool's start-up (oha
    opens its 1000 connections first) and the drain of the last responses, 46 ms of a 2-s step on a
    loaded 2-core machine (977 rps for 1,999 of 2,000 requests), more than 1% of a short step. The
    window still counts to 5%: a tool that delivered the count only by running long did not hold the rate."""
    achieved, target = step.rate_achieved_rps, step.rate_target_rps
    if achieved is None:
        return True
    delivered = step.delivered_fraction
    if delivered is None:
        return achieved < criteria.min_achieved_fraction * target
    return delivered < criteria.min_achieved_fraction or achieved < criteria.min_window_fraction * target


@dataclass
class SearchResult:
    max_sustained_rps: int | None   # the highest passing rate
    limited_by: str                 # what failed at the lowest failing rate above it, or why none was found
    stopped_because: str            # "resolution", "step budget", "max rate", "no passing rate"
    steps: list[tuple[Step, Verdict]] = field(default_factory=list)   # in the order run

    def verdict_at(self, rate_rps: int | None) -> Verdict | None:
        return next((v for s, v in self.steps if s.rate_target_rps == rate_rps), None)

    def describe(self) -> dict:
        at_max = self.verdict_at(self.max_sustained_rps)
        return {"max_sustained_rps": self.max_sustained_rps, "limited_by": self.limited_by,
                "stopped_because": self.stopped_because, "steps": len(self.steps),
                "target_saturated_at_max": at_max.target_saturated if at_max else None,
                "rates": [s.rate_target_rps for s, _ in self.steps]}


class _Search:
    def __init__(self, measure: Callable[[int], Step], criteria: Criteria) -> None:
        self.measure, self.criteria = measure, criteria
        self.steps: list[tuple[Step, Verdict]] = []
        self.passed: int | None = None   # the highest passing rate so far
        self.failed: int | None = None   # the lowest failing rate so far

    @property
    def budget_left(self) -> bool:
        return len(self.steps) < self.criteria.max_steps

    def run(self, rate: int) -> Verdict:
        assert all(s.rate_target_rps != rate for s, _ in self.steps), f"{rate} rps measured twice"
        step = self.measure(rate)
        verdict = judge(step, self.criteria)
        self.steps.append((step, verdict))
        if verdict.passed:
            self.passed = max(rate, self.passed or 0)
        else:
            self.failed = min(rate, self.failed or rate)
        return verdict

    def result(self, limited_by: str, stopped_because: str) -> SearchResult:
        return SearchResult(self.passed, limited_by, stopped_because, self.steps)

    def at_failed(self) -> tuple[Step, Verdict]:
        return next((s, v) for s, v in self.steps if s.rate_target_rps == self.failed)


def search(measure: Callable[[int], Step], criteria: Criteria) -> SearchResult:
    """Find the highest rate that passes ``criteria`` (see the module docstring for the strategy)."""
    state = _Search(measure, criteria)
    rate = criteria.start_rps
    while state.budget_left and state.run(rate).passed:
        if rate >= criteria.max_rps:
            return state.result("max_rps", "max rate")
        rate = min(criteria.max_rps, max(rate + 1, round(rate * criteria.growth)))
    if state.failed is None:
        return state.result("step budget", "step budget")
    if state.passed is None:
        rate = math.floor(rate / criteria.growth)
        while rate >= 1 and state.budget_left and not state.run(rate).passed:
            rate = math.floor(rate / criteria.growth)
        if state.passed is None:
            return state.result("nothing passed", "no passing rate" if rate < 1 else "step budget")
    return _bisect(state)


def _bisect(state: _Search) -> SearchResult:
    guess = _guess(*state.at_failed())
    while not _resolved(state):
        if not state.budget_left:
            return state.result(state.at_failed()[1].limited_by, "step budget")
        inside = guess is not None and state.passed < guess < state.failed
        state.run(guess if inside else (state.passed + state.failed) // 2)
        guess = None
    return state.result(state.at_failed()[1].limited_by, "resolution")


def _guess(step: Step, verdict: Verdict) -> int | None:
    """The achieved rate of a step that missed its rate: about what the pair can carry."""
    if RATE not in verdict.failed or step.rate_achieved_rps is None:
        return None
    return math.floor(step.rate_achieved_rps)


def _resolved(state: _Search) -> bool:
    gap = state.failed - state.passed
    return gap <= 1 or gap / state.passed <= state.criteria.resolution
