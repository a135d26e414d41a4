"""Scenario files: YAML, validated on load with pydantic.

A selector is ``FILE`` or ``FILE:id1,id2``; every error names the file, the field and
what is allowed, in one line.
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness import targets
from harness.errors import HarnessError

MAX_VUS = 100_000
MAX_DURATION_S = 24 * 3600
# At or below this RTT the scenario runs on the native hop, with no shaping.
NATIVE_RTT_MS = 0.5
MAX_RATE_RPS = 10_000_000
MAX_STALL_MS = 600_000


MAX_DELAY_MS = 60_000


def parse_delay(text: str) -> tuple[float, float]:
    """``"50"`` -> (50, 50); ``"0..1000"`` -> (0, 1000); anything else: ValueError saying what is allowed."""
    low, sep, high = text.partition("..")
    try:
        bounds = (float(low), float(high) if sep else float(low))
    except ValueError:
        raise ValueError(f"backend_delay_ms must be milliseconds (50) or a range (0..1000), got {text!r}") from None
    if not 0 <= bounds[0] <= bounds[1] <= MAX_DELAY_MS:
        raise ValueError(f"backend_delay_ms {text!r}: need 0 <= min <= max <= {MAX_DELAY_MS}")
    return bounds


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=64)
    vus: int = Field(gt=0, le=MAX_VUS, strict=True)
    rtt_ms: float = Field(gt=0, le=10_000)
    duration_s: int = Field(gt=0, le=MAX_DURATION_S, strict=True)
    # Open model and the stall test (issue 13): see harness/openmodel.py, harness/stall.py and harness/row/rate.py.
    rate_rps: int | None = Field(default=None, gt=0, le=MAX_RATE_RPS, strict=True)
    closed_model_tools: Literal["unsupported", "run"] = "unsupported"
    stall_ms: int | None = Field(default=None, gt=0, le=MAX_STALL_MS, strict=True)
    stall_at_s: float | None = Field(default=None, ge=0)
    # Issue 23: what is loaded and how (see targets/README.md). keepalive False: a new TCP connection per
    # request; tls: HTTPS to a throw-away self-signed certificate; backend_delay_ms: the file server sleeps
    # this long per request, fixed ("50" or 50) or uniform in a range ("0..1000").
    target: str = Field(default="nginx", pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=32)
    keepalive: bool = Field(default=True, strict=True)
    tls: bool = Field(default=False, strict=True)
    backend_delay_ms: str | None = None

    @field_validator("target")
    @classmethod
    def _known_target(cls, value: str) -> str:
        available = targets.discover()
        if value not in available:
            raise ValueError(f"unknown target {value!r}; available: {', '.join(available)} (folders in targets/)")
        return value

    @field_validator("backend_delay_ms", mode="before")
    @classmethod
    def _delay_text(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("backend_delay_ms is milliseconds: a number (50) or a range (0..1000)")
        return str(value) if isinstance(value, (int, float)) else value

    @field_validator("backend_delay_ms")
    @classmethod
    def _delay_range(cls, value: str | None) -> str | None:
        if value is not None:
            parse_delay(value)
        return value

    @property
    def delay_range_ms(self) -> tuple[float, float] | None:
        """(min, max) of the backend delay, equal for a fixed one; None: no delay."""
        return None if self.backend_delay_ms is None else parse_delay(self.backend_delay_ms)

    @model_validator(mode="after")
    def _stall_inside_the_run(self) -> "Scenario":
        if (self.stall_ms is None) != (self.stall_at_s is None):
            raise ValueError("stall_ms and stall_at_s go together: give both (e.g. stall_ms: 1000, stall_at_s: 10)")
        if self.stall_ms is not None and self.stall_at_s + self.stall_ms / 1000 >= self.duration_s:
            raise ValueError(f"the stall (stall_at_s {self.stall_at_s:g} + stall_ms {self.stall_ms}) must end "
                             f"before the run does (duration_s {self.duration_s})")
        if self.closed_model_tools == "run" and self.rate_rps is None:
            raise ValueError("closed_model_tools only applies to a rate scenario: add rate_rps")
        return self

    @property
    def needs_shaping(self) -> bool:
        return self.rtt_ms > NATIVE_RTT_MS

    def with_duration(self, duration_s: int) -> "Scenario":
        try:
            return Scenario.model_validate({**self.model_dump(), "duration_s": duration_s})
        except ValidationError as exc:
            raise HarnessError(f"--duration {duration_s} does not fit scenario {self.id}: "
                               f"{_describe(exc, Scenario)}") from None


class _Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    duration_s: int | None = Field(default=None, gt=0, le=MAX_DURATION_S, strict=True)


class _ScenarioFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: _Defaults = _Defaults()
    scenarios: list[dict] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> "_ScenarioFile":
        ids = [s.get("id") for s in self.scenarios]
        duplicates = sorted({str(i) for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate scenario id(s) {', '.join(duplicates)}")
        return self


def _describe(err: ValidationError, model: type[BaseModel], prefix: str = "") -> str:
    first = err.errors()[0]
    field = ".".join(str(p) for p in (prefix, *first["loc"]) if p != "")
    if first["type"] == "extra_forbidden":
        return f"{field}: unknown field; allowed: {', '.join(model.model_fields)}"
    got = first.get("input")
    got_text = f" (got {got!r})" if not isinstance(got, (dict, list)) else ""
    message = first["msg"].removeprefix("Value error, ")
    return f"{field or 'file'}: {message}{got_text}"


def load_file(path: Path) -> list[Scenario]:
    if not path.is_file():
        raise HarnessError(f"scenario file {path} does not exist: pass an existing YAML file (see scenarios/)")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise HarnessError(f"{path}: malformed YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise HarnessError(f"{path}: expected a mapping with 'scenarios:' (a list of id/vus/rtt_ms), got {type(raw).__name__}")
    try:
        parsed = _ScenarioFile.model_validate(raw)
    except ValidationError as exc:
        raise HarnessError(f"{path}: {_describe(exc, _ScenarioFile)}") from None
    scenarios = []
    for index, item in enumerate(parsed.scenarios):
        merged = {"duration_s": parsed.defaults.duration_s, **item} if isinstance(item, dict) else item
        if isinstance(merged, dict) and merged.get("duration_s") is None:
            merged.pop("duration_s")
        try:
            scenarios.append(Scenario.model_validate(merged))
        except ValidationError as exc:
            raise HarnessError(f"{path}: {_describe(exc, Scenario, f'scenarios[{index}]')}") from None
    return scenarios


def select(selector: str, duration_override: int | None = None) -> list[Scenario]:
    """Resolve ``FILE`` or ``FILE:id1,id2`` to scenarios, in the order given."""
    file_part, _, ids_part = selector.partition(":")
    scenarios = load_file(Path(file_part))
    if ids_part:
        by_id = {s.id: s for s in scenarios}
        wanted = [i.strip() for i in ids_part.split(",") if i.strip()]
        unknown = [i for i in wanted if i not in by_id]
        if unknown:
            raise HarnessError(
                f"{file_part}: unknown scenario id {', '.join(unknown)}; allowed: {', '.join(by_id)}"
            )
        scenarios = [by_id[i] for i in wanted]
    if duration_override is not None:
        scenarios = [s.with_duration(duration_override) for s in scenarios]
    return scenarios
