"""The base class every tool adapter implements (what it receives and returns: harness/tools/output.py,
harness/store/figures.py; its manifest: harness/tools/manifest.py).

An adapter is a small, stateless description of one load tool: which command to run for a
:class:`RunSpec`, and how to turn the tool's own output into :class:`Metrics`. It never
starts processes itself: the runtime does, identically for every tool.
"""
from __future__ import annotations

import csv
import re
import shutil
import struct
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar
from xml.etree import ElementTree

from harness import stats
from harness.store.figures import Metrics, figure_problems
from harness.tools.manifest import read_manifest
from harness.tools.output import LatencyHistogram, ParseError, RunSpec, ToolOutput


@dataclass(frozen=True)
class Declarations:
    """What an adapter declares that its rows read (ToolAdapter's class attributes of the same names). record.json
    keeps them as they were at run time (RunRecord.declarations): a folder derived again later reads its own."""
    concurrency_model: str
    timing_resolution_ms: float
    co_corrected: bool
    stops_timing_before_closing: bool
    open_model: bool
    rate_model: str
    rate_co_corrected: bool

    @classmethod
    def of(cls, adapter: "ToolAdapter", recorded: dict | None = None) -> "Declarations":
        """As ``recorded`` at run time; what it lacks (a record from before them: all), as ``adapter`` declares today."""
        recorded = recorded or {}
        return cls(**{f.name: recorded.get(f.name, getattr(adapter, f.name)) for f in fields(cls)})

    def to_record(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class ToolAdapter(ABC):
    name: str                         # the tool id in TOOLS= and in results
    # Arguments that make the manifest's binary print its version (see version_command).
    version_args: ClassVar[list[str]] = ["--version"]
    # One line on how VUs map to the tool's knobs, shown by `list-tools`, kept in meta.json and written in the
    # README's tool table (harness/tools/readme_tools.py): the one place a tool says it.
    concurrency_model: ClassVar[str]
    # The smallest latency step the tool's output can express, in ms: 0.001 for µs, 1 for whole-ms
    # tools. A latency below it reads 0 and is left empty (see below_resolution).
    timing_resolution_ms: ClassVar[float]
    # True for a tool whose latency figures are coordinated-omission corrected (not raw measurements).
    co_corrected: ClassVar[bool] = False
    # True for a tool that stops timing at its duration but closes its connections only when it exits:
    # no FIN or RST marks the requests it left in flight, so its wire p50/p99 leave out the responses
    # that ended after its last request (harness/network/wire.py: p50_until_stop_ms).
    stops_timing_before_closing: ClassVar[bool] = False
    # The process name to sample when command() wraps the tool in a script (None: the whole tree).
    sampled_process: ClassVar[str | None] = None
    folder: Path = Path()             # set by discovery: tools/<folder>/ (tool.toml, install.sh)
    # False for tools whose output has no latency percentiles (their p50..p99 stay empty).
    reports_percentiles: ClassVar[bool] = True
    # Set for a tool that cannot be made to work (say why): its runs become failed rows with this
    # reason and list-tools shows it, so it is never dropped silently.
    unavailable: ClassVar[str | None] = None
    # Open model (issue 13): True when command() honours RunSpec.rate_rps (a constant arrival rate);
    # rate_model says how in one line (the options, and whether latency counts from the intended
    # send time), or, when False, why not. The default claims only what the base class knows (the
    # adapter passes no rate), true whether or not the tool has a rate option; a tool without one
    # says so in its own rate_model (wrk's, drill's).
    open_model: ClassVar[bool] = False
    rate_model: ClassVar[str] = "closed model: no arrival rate is wired into this adapter"
    # True when the tool's latency in a rate run counts from each request's intended send time
    # (coordinated-omission corrected): the row's co_corrected then says so.
    rate_co_corrected: ClassVar[bool] = False
    # The arrival schedule an open-model tool declares for a rate: "uniform" (evenly spaced sends) or
    # "poisson" (exponential gaps), as its rate_model says; the wire's schedule fidelity judges the
    # capture against it (harness/network/fidelity.py, the wire_schedule column).
    rate_schedule: ClassVar[str] = "uniform"
    # Issue 23: True when command() honours RunSpec.keepalive=False (a new TCP connection for every
    # request, checked on the wire) and an https:// URL (TLS, the self-signed certificate not verified);
    # otherwise the one-line reason it cannot, which list-tools prints and an `unsupported` row keeps.
    keepalive_off: ClassVar[bool | str] = "not wired in this adapter yet"
    tls: ClassVar[bool | str] = "not wired in this adapter yet"
    # Issue 38: True when command() speaks HTTP/2 for RunSpec.protocol "h2" (over TLS, ALPN) or "h2c" (cleartext,
    # prior knowledge), else the one-line reason it cannot. h2_connections: how it spreads the VUs' requests
    # over HTTP/2 connections (harness/tools/capabilities.py H2_CONNECTIONS): "any" (spec.connections connections
    # with spec.streams requests in flight each, as asked), "per_vu" (a connection per VU: streams 1 only) or
    # "one" (one shared connection, every VU a stream on it: streams = vus only); a dict by protocol where h2 and
    # h2c differ.
    h2: ClassVar[bool | str] = "not wired in this adapter yet"
    h2c: ClassVar[bool | str] = "not wired in this adapter yet"
    # HTTP/3 (QUIC) for RunSpec.protocol "h3", one request in flight per connection, else the reason it cannot.
    h3: ClassVar[bool | str] = "not wired in this adapter yet"
    h2_connections: ClassVar[str | dict[str, str]] = "any"
    # Issue 37: True when command() runs RunSpec.flow (harness/flows.py) in the tool's own scripting: each VU logs
    # in, keeps the token from the JSON answer and sends it with every GET of the API, logging in again after
    # RunSpec.relogin_every GETs; else the one-line reason it cannot. The API's server counts judge the run.
    login_flow: ClassVar[bool | str] = "not wired in this adapter yet"

    def wind_down_s(self, protocol: str) -> float:
        """Seconds the tool needs after its load before it exits, beyond the harness's grace (0: none)."""
        return 0.0

    def folder_problem(self, folder: Path) -> str | None:
        """Why the tool cannot write its output under ``folder`` (None: it can); said before the suite starts."""
        return None

    def variants(self) -> list["ToolAdapter"]:
        """Named variants that appear as separate tools (e.g. locust and locust-http).
        Override to return several configured instances; each needs its own ``name``."""
        return [self]

    @abstractmethod
    def command(self, spec: RunSpec) -> list[str]:
        """The argv that runs one benchmark for ``spec``; it must stop by itself after the duration."""

    @abstractmethod
    def parse(self, output: ToolOutput) -> Metrics:
        """Turn the tool's output into metrics; raise ParseError when it cannot."""

    def parsed(self, output: ToolOutput) -> Metrics:
        """parse(), as the harness calls it (harness/row): whatever the output's bytes, metrics that keep the
        invariants every tool's keep, or a ParseError saying why not (see guarded_parse). Not overridden."""
        return _guarded(self, output)

    def latency_histogram(self, output: ToolOutput) -> LatencyHistogram | None:
        """Every request's latency as a histogram, from the tool's own histogram or per-request log
        (None: the tool has neither, so merged runs keep counts only). A tool may need
        RunSpec.per_request set in command() to write it. By default: the latencies parse() handed to
        harness/stats.py for the row it returned, where it computed the row's figures from every latency."""
        with stats.every_latency() as seen:
            metrics = self.parse(output)
        found = next(((counts, total) for made, counts, total in seen if made is metrics), None)
        if found is None or not found[0]:
            return None
        return LatencyHistogram(found[0], total=found[1], source=f"{self.name}: {metrics.source or 'its latencies'}")

    @property
    def version_command(self) -> list[str]:
        """Command printing the tool's version; run where the tool runs (host or container). A class
        attribute overrides it for a tool whose version comes otherwise."""
        return [self.binary, *self.version_args]

    def installed_here(self) -> bool:
        """install.sh has run on this machine: the version command's program is found and, for a tool
        installed as a folder, the folder exists (Grinder's program is java, which may be here without it)."""
        home = self.manifest.get("home")
        return shutil.which(self.version_command[0]) is not None and (home is None or Path(home).is_dir())

    def parse_version(self, text: str) -> str:
        match = re.search(r"\d+\.\d+(\.\d+)?", text)
        return match.group(0) if match else text.strip().splitlines()[0] if text.strip() else "unknown"

    @property
    def manifest(self) -> dict[str, str]:
        return read_manifest(self.folder)

    @property
    def binary(self) -> str:
        """The executable install.sh puts in place (a path, or a name on PATH)."""
        return self.manifest["binary"]

    @property
    def home(self) -> Path:
        """The install prefix, for tools installed as a folder (JVM, Node, venv)."""
        return Path(self.manifest["home"])

    @property
    def install_script(self) -> Path:
        return self.folder / "install.sh"


# What a parser's own code raises on output it did not expect (cut short by a killed tool, corrupted, not UTF-8):
# an unpacking or a number that does not fit, a key or index that is not there, a None where a match was.
UNEXPECTED_OUTPUT = (ValueError, KeyError, IndexError, TypeError, AttributeError, ArithmeticError, EOFError,
                     RecursionError, struct.error, csv.Error, ElementTree.ParseError)


def _guarded(adapter: ToolAdapter, output: ToolOutput) -> Metrics:
    """``adapter.parse(output)`` whose every failure on the tool's output is a ParseError naming where it gave up
    (a tool killed mid-write leaves any bytes), and whose figures keep the invariants every tool's keep
    (figure_problems: none negative or infinite, percentiles in order), else a ParseError saying which: the run
    is then a failed row that says why, never a crash nor a row of impossible figures. The one place every
    parse passes through."""
    try:
        metrics = adapter.parse(output)
    except ParseError:
        raise
    except UNEXPECTED_OUTPUT as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno}"
        text = " ".join(str(exc).split())[:200]
        raise ParseError(f"{adapter.name}'s output is not what its parser reads ({type(exc).__name__}: {text}, "
                         f"at {where}): cut short or corrupted?") from exc
    if problems := figure_problems(metrics):
        raise ParseError(f"{adapter.name}'s figures break an invariant every tool's keep: {'; '.join(problems)}")
    return metrics
