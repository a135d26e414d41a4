"""Scenario files: YAML, validated on load with pydantic.

A selector is ``FILE`` or ``FILE:id1,id2``; every error names the file, the field and
what is allowed, in one line.
"""
from __future__ import annotations

import math
import re
from collections.abc import Hashable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness import targets
from harness.errors import HarnessError
from harness.flows import FLOWS
from harness.slo import Slo
from harness.store.results import RESERVED_NAMES

MAX_VUS = 100_000
MAX_DURATION_S = 24 * 3600
# At or below this RTT the scenario runs on the native hop, with no shaping.
NATIVE_RTT_MS = 0.5
MAX_RATE_RPS = 10_000_000
MAX_STALL_MS = 600_000


MAX_DELAY_MS = 60_000
MAX_STREAMS = 1000
HTTP2_PROTOCOLS = ("h2", "h2c")   # the scenario protocols that are HTTP/2 (issue 38)


RATE_TOLERANCE = 0.05   # a tool achieving less than 95% of the target rate is flagged rate_ok=false


def rtt_tolerance_ms(rtt_ms: float) -> float:
    """How far a run's measured RTT may be from its scenario's: 10%, at least 0.5 ms."""
    return max(0.1 * rtt_ms, 0.5)


PLAIN_MS = re.compile(r"[0-9]+(\.[0-9]+)?")
# `harness capacity` names its steps so (harness/capacity/run.py), and the report reads such an id as a step.
CAPACITY_PREFIX = "capacity-"


def parse_delay(text: str) -> tuple[float, float]:
    """``"50"`` -> (50, 50); ``"0..1000"`` -> (0, 1000); anything else: ValueError saying what is allowed."""
    low, sep, high = text.partition("..")
    try:
        bounds = (float(low), float(high) if sep else float(low))
    except ValueError:
        raise ValueError(f"backend_delay_ms must be milliseconds (50) or a range (0..1000), got {text!r}") from None
    if not all(map(math.isfinite, bounds)):
        raise ValueError(f"backend_delay_ms {text!r}: need finite milliseconds, e.g. 50 or 0..1000")
    # Plain digits only: float() also takes "-0", "+5", " 5" and "5_0", which would reach Nginx's map as written.
    if not all(PLAIN_MS.fullmatch(bound) for bound in ((low, high) if sep else (low,))):
        raise ValueError(f"backend_delay_ms {text!r}: need plain milliseconds (50, 0.5 or 0..1000): no sign, space "
                         f"or underscore")
    if not 0 <= bounds[0] <= bounds[1] <= MAX_DELAY_MS:
        raise ValueError(f"backend_delay_ms {text!r}: need 0 <= min <= max <= {MAX_DELAY_MS}")
    return bounds


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=64)
    vus: int = Field(gt=0, le=MAX_VUS, strict=True)
    # strict: "50" (a string) is not taken as a number; allow_inf_nan: .nan and .inf are refused as such.
    rtt_ms: float = Field(gt=0, le=10_000, strict=True, allow_inf_nan=False)
    duration_s: int = Field(gt=0, le=MAX_DURATION_S, strict=True)
    # Open model and the stall test (issue 13): see harness/tools/openmodel.py, harness/suite/stall.py and harness/row/rate.py.
    rate_rps: int | None = Field(default=None, gt=0, le=MAX_RATE_RPS, strict=True)
    closed_model_tools: Literal["unsupported", "run"] = "unsupported"
    stall_ms: int | None = Field(default=None, gt=0, le=MAX_STALL_MS, strict=True)
    stall_at_s: float | None = Field(default=None, ge=0, strict=True, allow_inf_nan=False)
    # Issue 23: what is loaded and how (see targets/README.md). keepalive False: a new TCP connection per
    # request; tls: HTTPS to a throw-away self-signed certificate; backend_delay_ms: the file server sleeps
    # this long per request, fixed ("50" or 50) or uniform in a range ("0..1000").
    target: str = Field(default="nginx", pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=32)
    keepalive: bool = Field(default=True, strict=True)
    tls: bool = Field(default=False, strict=True)
    backend_delay_ms: str | None = None
    # Issue 38: the HTTP version the tools speak (docs/protocols.md): h2 over TLS (ALPN), h2c cleartext with prior
    # knowledge. VUs stay the requests in flight: connections = vus / streams, each with `streams` at a time.
    protocol: Literal["http/1.1", "h2", "h2c", "h3"] = "http/1.1"
    streams: int = Field(default=1, gt=0, le=MAX_STREAMS, strict=True)
    # Issue 37: a scripted flow (harness/flows.py) instead of one GET: each VU logs in, then GETs the API with its
    # token; relogin_every: it logs in again after that many GETs (none: once per VU).
    flow: str | None = Field(default=None, max_length=32)
    relogin_every: int | None = Field(default=None, gt=0, le=1_000_000, strict=True)
    # Issue 51: objectives each ok row is judged against (harness/slo.py); a failed one makes the suite exit 3.
    slo: Slo | None = None

    @field_validator("id")
    @classmethod
    def _not_a_results_file(cls, value: str) -> str:
        if value.lower() in RESERVED_NAMES:
            raise ValueError(f"scenario id {value!r} is a name the results folder uses for its own files "
                             f"({', '.join(sorted(RESERVED_NAMES))}): choose another id")
        return value

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
        if problem := self._protocol_problem() or self._flow_problem():
            raise ValueError(problem)
        return self

    def _flow_problem(self) -> str | None:
        """Why the flow fields do not fit the rest of the scenario (None: they do)."""
        if self.flow is None:
            return "relogin_every goes with a flow: add flow: login" if self.relogin_every else None
        if self.flow not in FLOWS:
            return f"unknown flow {self.flow!r}; flows: {', '.join(FLOWS)} (harness/flows.py)"
        if self.backend_delay_ms is not None:
            return ("backend_delay_ms with a flow: the delay is the static file's, and a flow GETs the API, which "
                    "answers without it: drop backend_delay_ms (or the flow)")
        target = targets.discover().get(self.target)
        if target is not None and self.flow not in target.flows:
            with_api = [t.id for t in targets.discover().values() if self.flow in t.flows]
            return (f"target {self.target} has no API for flow {self.flow}: use target: "
                    f"{' or '.join(with_api) or '(none here)'} (targets/README.md)")
        if self.protocol != "http/1.1":
            return f"flow with protocol {self.protocol}: flows run over HTTP/1.1 only so far"
        if self.rate_rps is not None:
            return "flow with rate_rps: the open model is not wired for flows"
        return None

    def _protocol_problem(self) -> str | None:
        """Why the protocol fields do not fit the rest of the scenario (None: they do)."""
        if self.protocol == "http/1.1":
            return (None if self.streams == 1 else
                    "streams is HTTP/2's requests in flight per connection: it needs protocol h2 or h2c")
        if self.protocol == "h3" and not self.tls:
            return "protocol h3 is HTTP/3 over QUIC, which is always TLS: add tls: true"
        if self.protocol == "h3" and self.streams > 1:
            return "streams with protocol h3: not wired yet (one request in flight per QUIC connection)"
        if self.protocol == "h2" and not self.tls:
            return "protocol h2 is HTTP/2 over TLS (ALPN): add tls: true, or use h2c (cleartext, prior knowledge)"
        if self.protocol == "h2c" and self.tls:
            return "protocol h2c is cleartext HTTP/2: drop tls: true, or use h2 (over TLS)"
        target, available = targets.discover().get(self.target), targets.discover().values()
        if target is not None and self.protocol not in target.protocols:
            serving = [t.id for t in available if self.protocol in t.protocols]
            return (f"target {self.target} does not serve protocol {self.protocol} (its target.toml protocols: "
                    f"{', '.join(target.protocols)}): use target: {' or '.join(serving) or '(none here)'}")
        if not self.keepalive:
            return f"keepalive: false with protocol {self.protocol}: an HTTP/2 connection is kept by definition"
        if self.rate_rps is not None:
            return f"rate_rps with protocol {self.protocol}: the open model is not wired for HTTP/2 yet"
        if self.vus % self.streams:
            return (f"vus {self.vus} is not a multiple of streams {self.streams}: VUs are the requests in flight, "
                    "connections x streams")
        return None

    @property
    def connections(self) -> int:
        """The connections the scenario asks for: one per VU over HTTP/1.1, vus / streams over HTTP/2."""
        return self.vus // self.streams

    @property
    def needs_shaping(self) -> bool:
        return self.rtt_ms > NATIVE_RTT_MS

    def with_duration(self, duration_s: int) -> "Scenario":
        try:
            return Scenario.model_validate({**self.model_dump(), "duration_s": duration_s})
        except ValidationError as exc:
            raise HarnessError(f"--duration {duration_s} does not fit scenario {self.id}: "
                               f"{describe_error(exc, Scenario)}") from None


class _Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")
    duration_s: int | None = Field(default=None, gt=0, le=MAX_DURATION_S, strict=True)


class _ScenarioFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    defaults: _Defaults = _Defaults()
    scenarios: list[dict] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> "_ScenarioFile":
        # Text ids only: another type is refused by the id field, and an alias-built one could be huge to print.
        ids = [s.get("id") for s in self.scenarios if isinstance(s.get("id"), str)]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate scenario id(s) {', '.join(duplicates)}: give each scenario its own id")
        if capacity := next((i for i in ids if i.lower().startswith(CAPACITY_PREFIX)), None):
            raise ValueError(f"scenario id {capacity[:64]!r} starts with {CAPACITY_PREFIX}, which names `harness "
                             f"capacity`'s steps (the report would take it for one): choose another id")
        return self


def describe_error(err: ValidationError, model: type[BaseModel], prefix: str = "") -> str:
    """pydantic's first error as one line: the field, what is wrong, the value given. An unknown field comes
    first: a typo (`rtt:`) also makes the real field (`rtt_ms`) missing, and the typo is the cause."""
    errors = err.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    field = ".".join(str(p) for p in (prefix, *first["loc"]) if p != "")
    if first["type"] == "extra_forbidden":
        owner = _Defaults if model is _ScenarioFile and first["loc"][:1] == ("defaults",) else model
        owner = Slo if "slo" in first["loc"][:-1] else owner
        return f"{field}: unknown field; allowed: {', '.join(owner.model_fields)}"
    got = first.get("input")
    got_text = f" (got {_shortened(repr(got))})" if not isinstance(got, (dict, list)) else ""
    message = first["msg"].removeprefix("Value error, ")
    return f"{field or 'file'}: {message}{got_text}"


def _shortened(text: str, at_most: int = 80) -> str:
    return text if len(text) <= at_most else text[:at_most - 3] + "..."


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping key given twice (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":   # `<<: *defaults` may be overridden on purpose
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                twice = f"key {_shortened(repr(key))} is given twice: keep one"
                raise yaml.constructor.ConstructorError(None, None, twice, key_node.start_mark)
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep)


def _read_yaml(path: Path) -> object:
    """The file's YAML document, or a one-line HarnessError saying what is wrong with the file."""
    if path.is_dir():
        raise HarnessError(f"scenario file {path} is a directory: pass a YAML file in it (e.g. scenarios/quick.yaml)")
    if not path.is_file():
        raise HarnessError(f"scenario file {path} does not exist: pass an existing YAML file (see scenarios/)")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise HarnessError(f"scenario file {path} cannot be read ({exc.strerror}): check its permissions") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}): "
                           f"save it as UTF-8") from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise HarnessError(f"{path}: malformed YAML{_yaml_problem(exc)}") from None
    except ValueError as exc:   # a plain scalar PyYAML reads as an impossible date: 2024-13-45
        raise HarnessError(f"{path}: malformed YAML: {exc} (quote the value if it is text)") from None
    except RecursionError:
        raise HarnessError(f"{path}: YAML nested too deeply to be a scenario file (see scenarios/)") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """`` at line N: what``, on one line (PyYAML's own text spans several, with the snippet)."""
    if isinstance(exc, yaml.reader.ReaderError):   # a character YAML does not allow, found before parsing
        return f": character {exc.character!r} at offset {exc.position} is not allowed in YAML"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark else ""
    return f"{where}: {' '.join(str(getattr(exc, 'problem', None) or exc).split())}"


def load_file(path: Path) -> list[Scenario]:
    raw = _read_yaml(path)
    if raw is None:
        raise HarnessError(f"{path}: the file is empty: it needs 'scenarios:', a list of id/vus/rtt_ms/duration_s "
                           f"(see scenarios/quick.yaml)")
    if not isinstance(raw, dict):
        raise HarnessError(f"{path}: expected a mapping with 'scenarios:' (a list of id/vus/rtt_ms), got {type(raw).__name__}")
    try:
        parsed = _ScenarioFile.model_validate(raw)
    except ValidationError as exc:
        raise HarnessError(f"{path}: {describe_error(exc, _ScenarioFile)}") from None
    scenarios = []
    for index, item in enumerate(parsed.scenarios):
        merged = {"duration_s": parsed.defaults.duration_s, **item} if isinstance(item, dict) else item
        if isinstance(merged, dict) and merged.get("duration_s") is None:
            merged.pop("duration_s")
        try:
            scenarios.append(Scenario.model_validate(merged))
        except ValidationError as exc:
            raise HarnessError(f"{path}: {describe_error(exc, Scenario, f'scenarios[{index}]')}") from None
    return scenarios


def select(selector: str, duration_override: int | None = None) -> list[Scenario]:
    """Resolve ``FILE`` or ``FILE:id1,id2`` to scenarios, in the order given."""
    file_part, _, ids_part = selector.partition(":")
    scenarios = load_file(Path(file_part))
    if ids_part:
        by_id = {s.id: s for s in scenarios}
        wanted = [i.strip() for i in ids_part.split(",") if i.strip()]
        _refuse_twice_or_none(wanted, selector)
        unknown = [i for i in wanted if i not in by_id]
        if unknown:
            raise HarnessError(
                f"{file_part}: unknown scenario id {', '.join(unknown)}; allowed: {', '.join(by_id)}"
            )
        scenarios = [by_id[i] for i in wanted]
    if duration_override is not None:
        scenarios = [s.with_duration(duration_override) for s in scenarios]
    return scenarios


def _refuse_twice_or_none(wanted: list[str], selector: str) -> None:
    """Each selected scenario once: a second run of it would empty the first one's folder."""
    if not wanted:
        raise HarnessError(f"--scenarios {selector}: names no scenario id after the ':'; give ids, or the file alone "
                           f"for all of them")
    twice = sorted({i for i in wanted if wanted.count(i) > 1})
    if twice:
        raise HarnessError(f"--scenarios {selector}: scenario {', '.join(twice)} is named twice; name each once "
                           f"(--repeat N runs every scenario N times)")
