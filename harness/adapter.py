"""The base class every tool adapter implements, and the data it receives and returns.

An adapter is a small, stateless description of one load tool: which command to run for a
:class:`RunSpec`, and how to turn the tool's own output into :class:`Metrics`. It never
starts processes itself: the runtime does, identically for every tool.
"""
from __future__ import annotations

import json
import re
import shutil
import tomllib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import HarnessError


@dataclass(frozen=True)
class RunSpec:
    url: str          # full URL of the target file, e.g. http://198.18.0.2:80/style.css
    vus: int          # virtual users = concurrent connections held for the whole run
    duration_s: int
    out_dir: Path     # the run's folder; the same absolute path inside a container
    cpus: int         # cores the generator may use
    rate_rps: int | None = None  # open model: send at this arrival rate, vus capping connections (issue 13)
    per_request: bool = False    # one of several generators: keep what latency_histogram() needs
    keepalive: bool = True       # False: a new TCP connection for every request (issue 23)

    @property
    def tls(self) -> bool:
        """An https:// URL: TLS to a throw-away self-signed certificate, which the tool must not verify."""
        return self.url.startswith("https://")


@dataclass(frozen=True)
class ToolOutput:
    spec: RunSpec
    stdout: str
    stderr: str
    exit_code: int
    launched_at: float = 0.0          # epoch seconds when the tool's process was started

    def file(self, name: str) -> Path:
        return self.spec.out_dir / name

    def json(self, name: str, missing: str) -> Any:
        """The tool's JSON file ``name``, parsed; a ParseError saying ``missing`` when there is none, or that
        it is not JSON."""
        path = self.file(name)
        if not path.is_file():
            raise ParseError(missing)
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ParseError(f"{name} is not JSON: {exc}") from None


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


@dataclass(frozen=True)
class LatencyHistogram:
    """A run's latencies as {ms: requests}, for merging several generators' runs (harness/row/merge.py)."""

    counts: dict[float, int]
    total: int          # requests it stands for; above sum(counts): only the lowest latencies are known
    source: str         # where it came from


class ParseError(Exception):
    """The tool's output could not be turned into metrics."""


@cache
def read_manifest(folder: Path) -> dict[str, str]:
    """tools/<id>/tool.toml: the tool's pinned version, install kind and paths (keys: tools/README.md),
    which its install.sh reads too; empty for a folder without one."""
    path = folder / "tool.toml"
    return tomllib.loads(path.read_text()) if path.is_file() else {}


SHARED_DOCKERFILES = "_docker"   # tools/_docker/: the generator images' Dockerfiles, one per way of installing
# Each install kind's Dockerfile there: installed in the image itself, or in a build stage whose result
# alone is copied into the image (the kinds that need a toolchain to install but not to run).
KIND_DOCKERFILES = {"apt": "in-image", "pip": "in-image",
                    "go": "build-stage", "cargo": "build-stage", "npm": "build-stage", "maven": "build-stage"}
# Fetched in a layer every tool of the kind shares (tools/_lib/<kind>-toolchain.sh): built once per machine.
KIND_TOOLCHAINS = {kind: f"{kind}-toolchain.sh" for kind in ("go", "cargo", "npm", "maven")}


@dataclass(frozen=True)
class DockerBuild:
    dockerfile: str            # relative to tools/, the build context
    args: dict[str, str]       # build args; compose.yaml takes each as LTH_<ARG> (harness/runtimes/docker.py)


def installed_path(folder: Path, manifest: dict[str, str]) -> str:
    """What a build stage installed, to copy into the image: the manifest's `installed`, else its `home`,
    else the folder of its `binary` (the Go tools' /opt/lth/bin: the binary and what install.sh put beside it)."""
    path = manifest.get("installed") or manifest.get("home") or str(Path(manifest.get("binary", "")).parent)
    if not Path(path).is_absolute():
        raise HarnessError(f"{folder}/tool.toml: set `installed`, the absolute path its build stage installs")
    return path


def docker_build(folder: Path) -> DockerBuild:
    """How the generator image of tools/<folder>/ is built: its own Dockerfile when it has one (a tool that
    truly differs), else its install kind's shared one, with build args from its manifest."""
    manifest = read_manifest(folder)
    kind = manifest.get("kind", "")
    args = {"TOOL": folder.name, "RUNTIME_PACKAGES": manifest.get("runtime_packages", "")}
    if (folder / "Dockerfile").is_file():
        return DockerBuild(f"{folder.name}/Dockerfile", args)
    if kind not in KIND_DOCKERFILES:
        raise HarnessError(f"{folder}: no Dockerfile, and install kind {kind!r} has no shared one "
                           f"(tools/README.md: Install and Docker)")
    if KIND_DOCKERFILES[kind] == "build-stage":
        # The host's compiled binary (tools/<id>/prebuilt/<id>, tools/_lib/go.sh and cargo.sh) is what the build
        # stage installs: the toolchain's layer is then dead weight (cargo's installs Debian's rustc in the
        # image: ~50 s on a fresh machine). install.sh fetches the toolchain itself if the binary is not usable.
        prebuilt = (folder / "prebuilt" / folder.name).is_file()
        args |= {"INSTALLED": installed_path(folder, manifest),
                 "TOOLCHAIN": "" if prebuilt else KIND_TOOLCHAINS.get(kind, "")}
    return DockerBuild(f"{SHARED_DOCKERFILES}/{KIND_DOCKERFILES[kind]}.Dockerfile", args)


class ToolAdapter(ABC):
    name: str                         # the tool id in TOOLS= and in results
    # Arguments that make the manifest's binary print its version (see version_command).
    version_args: ClassVar[list[str]] = ["--version"]
    # One line on how VUs map to the tool's knobs, shown by `list-tools` and kept in meta.json.
    concurrency_model: ClassVar[str]
    # The smallest latency step the tool's output can express, in ms: 0.001 for µs, 1 for whole-ms
    # tools. A latency below it reads 0 and is left empty (see below_resolution).
    timing_resolution_ms: ClassVar[float]
    # True for a tool whose latency figures are coordinated-omission corrected (not raw measurements).
    co_corrected: ClassVar[bool] = False
    # True for a tool that stops timing at its duration but closes its connections only when it exits:
    # no FIN or RST marks the requests it left in flight, so its wire p50/p99 leave out the responses
    # that ended after its last request (harness/wire.py: p50_until_stop_ms).
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
    # capture against it (harness/fidelity.py, the wire_schedule column).
    rate_schedule: ClassVar[str] = "uniform"
    # Issue 23: True when command() honours RunSpec.keepalive=False (a new TCP connection for every
    # request, checked on the wire) and an https:// URL (TLS, the self-signed certificate not verified);
    # otherwise the one-line reason it cannot, which list-tools prints and an `unsupported` row keeps.
    keepalive_off: ClassVar[bool | str] = "not wired in this adapter yet"
    tls: ClassVar[bool | str] = "not wired in this adapter yet"

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

    def latency_histogram(self, output: ToolOutput) -> LatencyHistogram | None:
        """Every request's latency as a histogram, from the tool's own histogram or per-request log
        (None: the tool has neither, so merged runs keep counts only). A tool may need
        RunSpec.per_request set in command() to write it."""
        return None

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


BELOW_RESOLUTION = "below the tool's {resolution:g} ms timing resolution, left empty: {columns}"
LATENCY_FIELDS = tuple(f.name for f in fields(Figures) if f.name.startswith("lat_"))


def below_resolution(metrics: Metrics, resolution_ms: float) -> Metrics:
    """Empty every latency figure smaller than the tool's clock step (a whole-ms tool's 0 means
    "under 1 ms", not 0 ms), naming them in a note."""
    hidden = [name for name in LATENCY_FIELDS
              if getattr(metrics, name) is not None and getattr(metrics, name) < resolution_ms]
    for name in hidden:
        setattr(metrics, name, None)
    if hidden:
        metrics.notes.append(BELOW_RESOLUTION.format(resolution=resolution_ms, columns=", ".join(hidden)))
    return metrics
