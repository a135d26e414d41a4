"""A stall as it happened (issue 13): when the target's Nginx was frozen and for how long, as harness/suite/stall.py
recorded it during the run and the row's derivation (harness/row/rate.py) reads it back."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class StallRecord:
    at_s: float
    ms: int
    origin: float = 0.0                       # epoch s the schedule counts from (just before the launch)
    stopped_at: float | None = None           # epoch s of the SIGSTOP
    resumed_at: float | None = None           # epoch s of the SIGCONT
    pids: set[int] = field(default_factory=set)

    @property
    def actual_ms(self) -> float | None:
        if self.stopped_at is None or self.resumed_at is None:
            return None
        return (self.resumed_at - self.stopped_at) * 1000

    def describe(self) -> str:
        if self.actual_ms is None:
            return f"stall of {self.ms} ms at +{self.at_s:g} s did not happen (the tool ended first)"
        return (f"stall: SIGSTOP of {len(self.pids)} Nginx processes at +{self.stopped_at - self.origin:.3f} s "
                f"after launch, SIGCONT {self.actual_ms:.1f} ms later")

    def to_dict(self) -> dict:
        return {**asdict(self), "pids": sorted(self.pids)}

    @classmethod
    def from_dict(cls, data: dict) -> "StallRecord":
        return cls(**{**data, "pids": set(data.get("pids", ()))})
