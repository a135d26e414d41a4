"""Docker: the target and a per-tool generator container on a Compose user network
(docker/compose.yaml, 198.18.1.0/24). One Compose project per suite: the target stack starts once
(and again only when a scenario needs another stack), each run gets a fresh generator container,
removed when the run ends; the project goes down with the suite.

Images build locally FROM ``debian:bookworm-slim``; where that cannot be pulled (no registry),
a base is made once with debootstrap + ``docker import`` (docker/base/build-base-image.sh).
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

import psutil

from harness import DOCKER_DIR, PREFIX, TOOLS_DIR, targets
from harness.cpus import CpuSplit, format_cpus
from harness.errors import HarnessError
from harness.processes import signals_deferred
from harness.runtimes import compiles
from harness.runtimes.base import Runtime, Session, run, undone_on_error
from harness.runtimes.images import DockerBuild, docker_build
from harness.sampling import PidSource
from harness.targets import Certificate, Stack, TargetAdapter
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter
from harness.tools.manifest import read_manifest

PROJECT = PREFIX
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
UPSTREAM_FILE = DOCKER_DIR / "compose.upstream.yaml"   # added for a proxy target
# The local base's tag changes whenever build-base-image.sh makes a different image (-2: host CAs).
OFFICIAL_BASE, LOCAL_BASE = "debian:bookworm-slim", f"{PREFIX}-base:bookworm-2"
TARGET_IP, UPSTREAM_IP = "198.18.1.10", "198.18.1.11"   # as compose.yaml and compose.upstream.yaml fix them


def docker_available() -> str | None:
    """The daemon's version, or None if no daemon answers."""
    try:
        result = run(["docker", "version", "--format", "{{.Server.Version}}"], check=False, timeout=20)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def compose_command() -> list[str]:
    if run(["docker", "compose", "version"], check=False).returncode == 0:
        return ["docker", "compose"]
    if run(["docker-compose", "version"], check=False).returncode == 0:
        return ["docker-compose"]
    raise HarnessError("neither `docker compose` nor `docker-compose` works: run `make deps` (installs docker-compose)")


def image_exists(name: str) -> bool:
    return run(["docker", "image", "inspect", name], check=False).returncode == 0


def ensure_base_image() -> str:
    if image_exists(OFFICIAL_BASE) or image_exists(LOCAL_BASE):
        return OFFICIAL_BASE if image_exists(OFFICIAL_BASE) else LOCAL_BASE
    if run(["docker", "pull", OFFICIAL_BASE], check=False, timeout=300).returncode == 0:
        return OFFICIAL_BASE
    print(f"cannot pull {OFFICIAL_BASE}: building {LOCAL_BASE} with debootstrap (once)", flush=True)
    result = subprocess.run(["bash", str(DOCKER_DIR / "base" / "build-base-image.sh"), LOCAL_BASE])
    if result.returncode != 0:
        raise HarnessError(f"could not pull {OFFICIAL_BASE} nor build {LOCAL_BASE}: install debootstrap or make the registry reachable")
    return LOCAL_BASE


# What each image was last built from (the sha256 of its build's files, arguments and base image) and the
# image id it gave: a suite builds an image only when either changed (~1-2 s per image and suite otherwise).
BUILDS_FILE = Path("/var/cache/lth/image-builds.json")
IGNORED = {"__pycache__", "node_modules", "target", ".m2"}   # as tools/.dockerignore: never in a build context


def build_inputs(base_image: str, paths: list[Path], args: dict[str, str]) -> str:
    digest = hashlib.sha256(json.dumps([image_id(base_image), sorted(args.items())]).encode())
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if not IGNORED & set(file.parts) and file.suffix != ".pyc":
                # the path within the build context, so that another clone of the same files reuses the image
                digest.update(str(file.relative_to(path.parent)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


def image_id(image: str) -> str:
    return run(["docker", "image", "inspect", "--format", "{{.Id}}", image], check=False).stdout.strip()


def _builds() -> dict:
    try:
        return json.loads(BUILDS_FILE.read_text())
    except (OSError, ValueError):
        return {}


def built_from(image: str) -> str | None:
    """The inputs ``image`` was built from, if it is still the image that build made."""
    found = _builds().get(image, {})
    return found.get("inputs") if found.get("id") and found.get("id") == image_id(image) else None


def record_build(image: str, inputs: str) -> None:
    builds = {**_builds(), image: {"inputs": inputs, "id": image_id(image)}}
    BUILDS_FILE.parent.mkdir(parents=True, exist_ok=True)
    partial = BUILDS_FILE.with_suffix(".tmp")
    partial.write_text(json.dumps(builds, indent=1))
    partial.replace(BUILDS_FILE)


# scripts/deps.sh holds it while it compiles the Go and cargo tools in the background (RUNTIME=docker: it does
# not wait for them); their images copy the binary it leaves in tools/<id>/prebuilt instead of compiling again.
COMPILE_LOCK = compiles.COMPILE_LOCK
COMPILED_KINDS = ("go", "cargo")


def compiled_on_this_machine(folder: Path) -> bool:
    return read_manifest(folder).get("kind") in COMPILED_KINDS


def wait_for_compiles(folder: Path) -> None:
    """Until deps.sh's background compiles have ended (at once when none runs)."""
    compiles.wait_for_compiles(f"docker: the image of {folder.name}", COMPILE_LOCK)


TARGET_IMAGE = f"{PREFIX}-target:latest"   # the target service's image, as compose.yaml names it


def tool_image(adapter: ToolAdapter) -> str:
    """The generator image of an adapter's folder (variants share it); named as in compose.yaml."""
    return folder_image(adapter.folder.name)


def folder_image(folder_name: str) -> str:
    return f"{PREFIX}-tool-{folder_name}:latest"


def container_pids(container_id: str) -> set[int]:
    """Host pids of every process in the container (docker exec'd ones included): read from the container's
    cgroup once it is known. The sampler asks at every frame, from the tool's CPUs: a scan of every process's
    /proc/<pid>/cgroup cost ~2 ms of CPU there per call, two calls a frame (tool and target; issue 53)."""
    folder = _cgroup_folders.get(container_id)
    if folder is not None:
        try:
            return cgroup_pids(folder)
        except OSError:   # the container is gone: no processes
            return set()
    pids = scanned_pids(container_id)
    if pids and (found := cgroup_folder(min(pids), container_id)) is not None:
        _cgroup_folders[container_id] = found
    return pids


_cgroup_folders: dict[str, Path] = {}   # container id -> its cgroup folder, found at its first listing
CGROUP_ROOT = Path("/sys/fs/cgroup")


def scanned_pids(container_id: str) -> set[int]:
    """Every process whose cgroup names the container (the slow way: each process's /proc/<pid>/cgroup)."""
    pids = set()
    for proc in psutil.process_iter():
        try:
            with open(f"/proc/{proc.pid}/cgroup") as handle:
                if container_id in handle.read():
                    pids.add(proc.pid)
        except OSError:
            continue
    return pids


def cgroup_folder(pid: int, container_id: str) -> Path | None:
    """The container's cgroup folder holding ``pid``: cgroup v2's unified one, or v1's pids (or memory)
    controller; None when none of them lists the pid (another layout: the scan goes on)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if container_id not in path:
            continue
        mounts = ["", "unified"] if not controllers else [c for c in controllers.split(",") if c in ("pids", "memory")]
        for mount in mounts:
            folder = CGROUP_ROOT / mount / path.lstrip("/")
            try:
                if pid in cgroup_pids(folder):
                    return folder
            except OSError:
                continue
    return None


def cgroup_pids(folder: Path) -> set[int]:
    """The pids in a cgroup folder and the folders below it."""
    pids = set()
    for below, _, _ in os.walk(folder, onerror=_raise):
        with open(os.path.join(below, "cgroup.procs"), "rb") as handle:   # bytes: a third of read_text()'s time
            pids.update(map(int, handle.read().split()))
    return pids


def _raise(error: OSError) -> None:
    raise error


def netns_of(container_id: str) -> list[str]:
    """A prefix running a host program inside the container's network namespace."""
    pid = run(["docker", "inspect", "-f", "{{.State.Pid}}", container_id]).stdout.strip()
    return ["nsenter", "-t", pid, "-n"]


class InContainer:
    """A session whose tool is ``docker exec``'d into an idle container on this machine: started,
    found and cross-checked there (also the tools here with a target on another host)."""

    # The base Session's check: VmRSS from /proc/<pid>/status of the same processes, as on the host. The
    # container's cgroup memory (memory.current; also anon + mapped file from memory.stat) counts other things:
    # page cache, and shared library pages only where this cgroup first touched them. It fired on 32 of 38 rows
    # of a Docker quick start (ab -51%, autocannon +59%) and anon + mapped file still on ab -65%, h2load -68%
    # and locust-multi -59% (issue 35): a check that always fires checks nothing.
    memory_check_name = "VmRSS of the same processes (/proc)"

    def __init__(self, container: str):
        self.container = container
        self._idle = container_pids(container)  # docker-init and `sleep infinity`

    def popen(self, argv: list[str], stdout: IO, stderr: IO, run_dir: Path | None = None) -> subprocess.Popen:
        return subprocess.Popen(["docker", "exec", self.container, *argv],
                                stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)

    def pids(self, proc: subprocess.Popen) -> PidSource:
        return lambda: container_pids(self.container) - self._idle

    def version(self, adapter: ToolAdapter) -> str:
        result = run(["docker", "exec", self.container, *adapter.version_command], check=False, timeout=60)
        return adapter.parse_version(result.stdout + result.stderr)


class DockerSession(InContainer, Session):
    def __init__(self, generator_id: str, target_id: str, split: CpuSplit, target: Target, upstream_id: str = ""):
        InContainer.__init__(self, generator_id)
        self.target_id, self.upstream_id, self.split = target_id, upstream_id, split
        self.target = target
        self.cpus = len(split.tool_cpus)   # the generator's compose cpuset
        self.generator_netns = self.shape_netns = netns_of(generator_id)
        self.target_netns = [*split.taskset("target"), *netns_of(target_id)]  # a proxy there shares Nginx's CPUs
        self.shape_device = self.capture_device = "eth0"   # the generator's egress: the whole RTT on one side
        self.containers = {"generator": generator_id[:12], "target": target_id[:12]}
        self.since = f"{time.time():.3f}"   # the target outlives the run: its log from here on is the run's
        self.target_pids()   # their cgroup folders found now, before the load, not in its first frame (~2 ms each)

    def target_pids(self) -> set[int]:
        return container_pids(self.target_id) | (container_pids(self.upstream_id) if self.upstream_id else set())

    def proxy_pids(self) -> set[int]:
        return container_pids(self.target_id) if self.upstream_id else set()

    def save_logs(self, run_dir: Path) -> None:
        for container, name in ((self.target_id, "target.log"), (self.upstream_id, "upstream.log")):
            if container:
                logs = run(["docker", "logs", "--since", self.since, container], check=False)
                (run_dir / name).write_text(logs.stdout + logs.stderr)


class DockerRuntime(Runtime):
    name = "docker"
    any_target = True

    def __init__(self, results_dir: Path | None = None) -> None:
        self.results_dir = results_dir or Path("/tmp")
        self.base_image = OFFICIAL_BASE
        self._workdir: Path | None = None
        self._served: list[Path] = []                 # each stack's file server folder, kept until the end: the
                                                      # old stack's container serves from it until compose recreates it
        self._certificate: Certificate | None = None
        self._stack: Stack | None = None
        self._facts: dict = {}
        self._stack_up: targets.Setup | None = None   # the setup whose containers are up
        self._target_ids: tuple[str, str] = ("", "")  # its target and upstream containers

    def _env(self, tool: str | None, build: DockerBuild | None, target: TargetAdapter | None = None) -> dict[str, str]:
        # No tool (down, the target's build): an empty LTH_TOOL takes compose.yaml's default, as those
        # commands do not depend on which generator image the project uses.
        build_env = {"LTH_DOCKERFILE": build.dockerfile, **{f"LTH_{k}": v for k, v in build.args.items()}} if build else {}
        return {**os.environ, "LTH_TOOL": tool or "", "LTH_BASE_IMAGE": self.base_image,
                "LTH_RESULTS_DIR": str(self.results_dir), "LTH_TOOLS_DIR": str(TOOLS_DIR),
                "LTH_CPUS_TARGET": format_cpus(self.split.target_cpus), "LTH_CPUS_TOOL": format_cpus(self.split.tool_cpus),
                **self._target_env(target), **build_env}

    def _target_env(self, building: TargetAdapter | None) -> dict[str, str]:
        """The target's variables: the image being built, else the running stack's commands and CPU sets."""
        if building is not None:
            return {"LTH_TARGET": building.id, "LTH_TARGET_IMAGE": building.image}
        if self._stack is None:
            return {}
        target = targets.get(self._stack.setup.target)
        commands = {p.role: shlex.join(p.argv) for p in self._stack.processes}
        cpus = self.split.stack_cpus(proxy=target.is_proxy)
        return {"LTH_TARGET": target.id, "LTH_TARGET_IMAGE": target.image, "LTH_TARGET_DIR": str(self._workdir),
                "LTH_SERVED_DIR": str(self._stack.files),
                "LTH_TARGET_COMMAND": commands.get("proxy", commands["upstream"]),
                "LTH_UPSTREAM_COMMAND": commands["upstream"],
                "LTH_CPUS_TARGET": format_cpus(cpus.get("proxy", cpus["upstream"])),
                "LTH_CPUS_UPSTREAM": format_cpus(cpus["upstream"])}

    def _compose(self, tool: str | None, *args: str, timeout: float = 600,
                 build: DockerBuild | None = None, target: TargetAdapter | None = None) -> subprocess.CompletedProcess:
        files = [COMPOSE_FILE, *([UPSTREAM_FILE] if self._stack and self._stack.has_proxy else [])]
        argv = [*self._compose_cmd, "-p", PROJECT, *(a for f in files for a in ("-f", str(f))), *args]
        return run(argv, check=False, timeout=timeout, env=self._env(tool, build, target))

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        if docker_available() is None:
            return ["no Docker daemon answers: run `make deps` (installs and starts Docker), start dockerd, "
                    "or use RUNTIME=host"]
        try:
            self._compose_cmd = compose_command()
        except HarnessError as exc:
            return [str(exc)]
        return []

    def prepare(self, adapters: list[ToolAdapter]) -> dict[str, str]:
        """Builds the images whose files changed since their last build (all of them on a new machine),
        numbered as they go; an unchanged image costs a hash of its files. The compiled tools' images come
        last: their binaries may still be compiling in the background (scripts/deps.sh, RUNTIME=docker)."""
        self.base_image = ensure_base_image()
        jobs = [("target", None, targets.get(t)) for t in dict.fromkeys([targets.FILE_SERVER, *sorted(self.target_ids)])]
        folders = dict.fromkeys(a.folder for a in adapters if not a.unavailable)   # variants share an image
        jobs += [("generator", folder, None) for folder in sorted(folders, key=compiled_on_this_machine)]
        stale = [(job, inputs) for job in jobs if (inputs := self._stale(*job))]
        broken = {}
        for index, ((service, folder, target), (build, inputs)) in enumerate(stale, start=1):
            if folder is not None and compiled_on_this_machine(folder):
                wait_for_compiles(folder)
                if (now := self._stale(service, folder, target)) is None:   # built from its binary before
                    continue
                build, inputs = now
            problem = build if isinstance(build, str) else self._build(service, folder, target, build, inputs,
                                                                      f"{index}/{len(stale)}")
            if problem and target is not None:
                raise HarnessError(problem)
            if problem:
                broken.update({a.name: problem for a in adapters if a.folder == folder})
        return broken

    def _stale(self, service: str, folder: Path | None,
               target: TargetAdapter | None) -> tuple[DockerBuild | str | None, str] | None:
        """(the build, its inputs' hash) when the image is to be built; None when it is up to date.
        A tool whose build cannot even be described gives its reason in place of the build."""
        try:
            build = docker_build(folder) if folder else None   # the tool's Dockerfile and build args
        except HarnessError as exc:
            return str(exc), ""
        image = folder_image(folder.name) if folder else target.image
        inputs = build_inputs(self.base_image, [TOOLS_DIR / "_lib", folder, TOOLS_DIR / build.dockerfile]
                              if build else [target.folder], build.args if build else {})
        return None if built_from(image) == inputs else (build, inputs)

    def _build(self, service: str, folder: Path | None, target: TargetAdapter | None, build: DockerBuild | None,
               inputs: str, counted: str) -> str | None:
        tool = folder.name if folder else None
        image = folder_image(tool) if tool else target.image
        print(f"docker: building image {counted}: {service}{' for ' + tool if tool else ''}"
              f"{' ' + target.id if target else ''} (base {self.base_image}{', ' + build.dockerfile if build else ''})",
              flush=True)
        started = time.monotonic()
        result = self._compose(tool, "build", service, timeout=3600, build=build, target=target)
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).strip().splitlines()
            tail = [line for line in lines if "error" in line.lower()][-3:] or lines[-3:]  # the cause, not the noise
            return f"docker build of {service} ({tool}) failed: {' | '.join(tail)}"
        record_build(image, inputs)
        print(f"docker: image {counted} built in {time.monotonic() - started:.0f} s", flush=True)
        return None

    def __enter__(self) -> "DockerRuntime":
        self._workdir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-target-"))
        self._workdir.chmod(0o755)   # the servers' workers read their folders below it
        self._stack_up = None
        if hasattr(self, "_compose_cmd"):
            self._down()  # what a killed suite left of the project
        with undone_on_error(self):
            self.use_target(targets.Setup())
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            if hasattr(self, "_compose_cmd"):
                self._down()
            self._stack_up = None
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
            for served in self._served:
                shutil.rmtree(served, ignore_errors=True)
            self._served = []

    def use_target(self, setup: targets.Setup) -> None:
        if self._stack is not None and self._stack.setup == setup:
            return
        if setup.tls and self._certificate is None:
            self._certificate = targets.make_certificate(self._workdir / "certificate")
        folder, served = Path(tempfile.mkdtemp(prefix="stack-", dir=self._workdir)), targets.served_folder()
        self._served.append(served)   # mounted at its own path (LTH_SERVED_DIR)
        # A proxy reaches the file server in its own container, on the compose network.
        self._stack = targets.stage(setup, folder, TARGET_IP, UPSTREAM_IP, self._certificate,
                                    self.split.stack_cpus(proxy=targets.get(setup.target).is_proxy), files=served)
        self._facts = {}

    def target_facts(self) -> dict:
        if not self._facts and self._stack is not None:
            servers = {targets.get(self._stack.setup.target), targets.get(targets.FILE_SERVER)}
            versions = {s.id: targets.version_of(self._image_output(s.image, list(s.version_command)))
                        for s in servers}
            cpus = self.split.stack_cpus(proxy=self._stack.has_proxy)
            self._facts = targets.stack_facts(self._stack, cpus, versions)
        return self._facts

    @staticmethod
    def _image_output(image: str, argv: list[str]) -> str:
        result = run(["docker", "run", "--rm", "--network", "none", image, *argv], check=False, timeout=60)
        return result.stdout + result.stderr

    def _down(self) -> None:
        """Removes the project's containers and network, found by the project name whatever the tool."""
        self._compose(None, "down", "--volumes", "--remove-orphans", "--timeout", "2", timeout=120)

    @staticmethod
    def _container_id(service: str) -> str:
        """By compose's own labels, with the docker CLI (a docker-compose 1.x call costs ~0.7 s per run)."""
        return run(["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={PROJECT}",
                    "--filter", f"label=com.docker.compose.service={service}"], check=False).stdout.strip()

    def _target_up(self) -> tuple[str, str]:
        """The running stack's target (and upstream) containers, started when the stack changed since the
        last run or its target is no longer running (a crash): compose recreates a service whose command or
        mounts changed and removes the other stack's upstream (an orphan of the files in use)."""
        if self._stack_up != self._stack.setup or self._container_id("target") != self._target_ids[0]:
            services = ["target", *(["upstream"] if self._stack.has_proxy else [])]
            up = self._compose(None, "up", "-d", "--no-build", "--remove-orphans", *services)
            if up.returncode != 0:
                raise HarnessError(f"docker runtime: the target did not start: {up.stderr.strip().splitlines()[-1:]}")
            self._target_ids = (self._container_id("target"),
                                self._container_id("upstream") if self._stack.has_proxy else "")
            self._stack.target.wait_ready()
            self._stack_up = self._stack.setup
        return self._target_ids

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        """A fresh generator container for the run (the target stays up for the suite), removed after it."""
        tool = adapter.folder.name
        generator = ""
        try:
            target_id, upstream_id = self._target_up()
            up = self._compose(tool, "up", "-d", "--no-build", "--no-deps", "generator")
            generator = self._container_id("generator")
            if up.returncode != 0 or not generator:
                raise HarnessError(f"docker runtime: the generator did not start: {up.stderr.strip().splitlines()[-1:]}")
            session = DockerSession(generator, target_id, self.split, self._stack.target, upstream_id)
            yield session
        finally:
            with signals_deferred():
                generator = generator or self._container_id("generator")
                if generator:
                    run(["docker", "rm", "--force", "--volumes", *generator.split()], check=False, timeout=120)

    def describe(self) -> dict:
        return {"target": f"nginx container at {TARGET_IP} on compose network 198.18.1.0/24",
                "docker_version": docker_available(), "base_image": self.base_image,
                "compose": " ".join(getattr(self, "_compose_cmd", []))}
