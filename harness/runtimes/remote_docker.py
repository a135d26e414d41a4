"""The Docker runtime across machines (``--runtime docker --target-host X [--generator-host Y,...]``,
each an ssh:// URL or a Docker context over ssh): Nginx and the tools in containers of the same
images as on one machine, each on its own host's Docker engine.

- Images are built here (docker/compose.yaml, as the Docker runtime does) and copied to each host
  that needs them with ``docker save | ssh host docker load``, only when that host's image id
  differs; the ids then match, so both ends run the very same bits.
- ``docker`` there is that host's own CLI run over ssh, against its default engine (what a Docker
  context over ssh does: ``docker system dial-stdio`` there); the same ssh runs top and ps there.
- The target container publishes port 80 on the target host's address only
  (``-p ADDR:80:80``), for the suite; nothing else of it is reachable.
- A tool container uses the generator host's network (``--network host``): the load leaves by
  that machine's NIC as from a bare process, and a latency proxy on its loopback is reachable;
  on a generator host it also shares the host's pids (``--pid host``) so top and ps there read
  the tool as on bare metal. One container per tool image and host, for the suite.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Callable

from harness import PREFIX, REPO_ROOT, TOOLS_DIR
from harness.cpus import CpuSplit
from harness.errors import HarnessError
from harness.runtimes.base import Session, run
from harness.runtimes.docker import TARGET_IMAGE, DockerRuntime, InContainer, tool_image
from harness.runtimes.generator import LABEL, GeneratorHost, RemoteGeneratorSession
from harness.runtimes.host import local_problems
from harness.runtimes.remote import RemoteTargetRuntime, RemoteTargetSession, route_device
from harness.runtimes.remote_nginx import RemoteNginx
from harness.runtimes.ssh import SshHost
from harness.runtimes.together import StartBarrier
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter

COPY_TIMEOUT_S = 1800
DOCKER_CHECK = "command -v docker >/dev/null || { echo 'no docker CLI'; exit 0; }; " \
               "docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || echo 'no Docker engine answers'; true"


def docker_problem(ssh: SshHost, role: str) -> str | None:
    """Why ``docker`` over ssh cannot run containers there (None: it can)."""
    try:
        answer = ssh.text(DOCKER_CHECK, timeout=30).strip()
    except HarnessError as exc:
        return f"{exc} (the harness needs key-based ssh there, no password prompt)"
    return (f"the {role} host {ssh.url}: {answer}: install Docker there (Debian: apt-get install docker.io) and start "
            "its engine, or use --runtime host") if answer else None


def image_id(image: str, ssh: SshHost | None = None) -> str | None:
    """The image's id here, or on ``ssh``'s host (None: it has no such image)."""
    argv = ["docker", "image", "inspect", "--format", "{{.Id}}", image]
    if ssh is None:
        result = run(argv, check=False)
        return result.stdout.strip() if result.returncode == 0 else None
    answer = ssh.run(shlex.join(argv), check=False)
    return answer.stdout.decode().strip() if answer.returncode == 0 else None


def copy_image(image: str, ssh: SshHost) -> None:
    """``image`` on ``ssh``'s engine, the same id as here: ``docker save | docker load`` when it differs."""
    wanted = image_id(image)
    if wanted is None:
        raise HarnessError(f"docker: no image {image} here to copy to {ssh.url}")
    if image_id(image, ssh) == wanted:
        return
    print(f"docker: copying {image} to {ssh.url} (docker save | ssh docker load)", flush=True)
    save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        load = subprocess.run(ssh.argv("docker load -q"), stdin=save.stdout, capture_output=True, timeout=COPY_TIMEOUT_S)
    finally:
        save.stdout.close()
        save.wait(timeout=60)
    if load.returncode != 0 or image_id(image, ssh) != wanted:
        last = (load.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise HarnessError(f"docker: copying {image} to {ssh.url} failed: {last}")


def docker_there(ssh: SshHost, *args: str, timeout: float = 120) -> str:
    """``docker ARGS`` on ``ssh``'s host; its output (a failure is one HarnessError line: docker's
    own error, not its closing "Run 'docker run --help'" hint)."""
    result = ssh.run(shlex.join(["docker", *args]), timeout=timeout, check=False)
    if result.returncode != 0:
        lines = [line for line in result.stderr.decode(errors="replace").strip().splitlines()
                 if line.strip() and not line.startswith("Run 'docker")]
        cause = next((line for line in lines if "rror" in line), lines[-1] if lines else "no message")
        raise HarnessError(f"{ssh.url}: docker {args[0]} failed: {cause.strip()}")
    return result.stdout.decode(errors="replace").strip()


class NginxContainer(RemoteNginx):
    """The target image on the target host's engine, port 80 published on that host's address only."""

    def __init__(self, host: SshHost):
        super().__init__(host)
        self.name = Path(self.workdir).name     # lth-target-<random>

    def start(self) -> None:
        self.started = True
        try:
            docker_there(self.host, "run", "-d", "--init", "--name", self.name, "--label", f"{LABEL}=target",
                         "-p", f"{self.host.address}:80:80", TARGET_IMAGE)
        except HarnessError as exc:
            hint = f": stop what listens on {self.host.address}:80 there" if "address already in use" in str(exc) else ""
            raise HarnessError(f"{exc}{hint}") from None

    def stop(self) -> None:
        if self.started:
            self.host.run(shlex.join(["docker", "rm", "-f", self.name]), check=False, timeout=60)
            self.started = False

    def log(self) -> str:
        result = self.host.run(shlex.join(["docker", "logs", self.name]) + " 2>&1", check=False)
        return result.stdout.decode(errors="replace")

    @property
    def pids_command(self) -> str:
        """Nginx's processes in the container, as the target host's pids."""
        return f"docker top {shlex.quote(self.name)} -eo pid,comm | awk '$2 == \"nginx\" {{print $1}}'"


def docker_here(*args: str, timeout: float = 300) -> str:
    result = run(["docker", *args], check=False, timeout=timeout)
    if result.returncode != 0:
        raise HarnessError(f"docker {args[0]} failed: {(result.stderr.strip().splitlines() or ['no message'])[-1]}")
    return result.stdout.strip()


class ToolContainers:
    """One idle container per tool image on a machine, for the suite; tools are ``docker exec``'d into it."""

    def __init__(self, docker: Callable[..., str], run_options: list[str]):
        self._docker, self._options = docker, run_options   # docker_here or docker_there; ``docker run`` options
        self._ids: dict[str, str] = {}

    def of(self, image: str) -> str:
        if image not in self._ids:
            self._ids[image] = self._docker("run", "-d", "--init", *self._options, image, "sleep", "infinity")
        return self._ids[image]

    def remove_all(self) -> None:
        ids, self._ids = list(self._ids.values()), {}
        if ids:
            self._docker("rm", "-f", *ids)


class LocalToolSession(InContainer, RemoteTargetSession):
    """The tool in a container here on this machine's network, against Nginx in a container on the target host."""

    def __init__(self, target: Target, split: CpuSplit, nginx: NginxContainer, device: str,
                 target_cores: int | None, container: str, image: str):
        RemoteTargetSession.__init__(self, target, split, nginx, device, target_cores)
        InContainer.__init__(self, container)
        self.where = f"this machine, in a container of {image} (--network host)"


class ContainerGeneratorSession(RemoteGeneratorSession):
    """The tool in a container on a generator host (host network and pids): launched, sampled and
    stopped there as a bare tool is, through ``docker exec``."""

    def __init__(self, *args, container: str, image: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.container = container
        self.where = f"{self.generator.ssh.url}, in a container of {image} (--network host --pid host; " \
                     f"paths under {REPO_ROOT} as copied to {self.generator.workdir})"

    def launcher(self, script: str) -> list[str]:
        return self.generator.ssh.argv(f"exec docker exec -i {self.container} sh -c {shlex.quote(script)}")

    def version(self, adapter: ToolAdapter) -> str:
        command = shlex.join(["docker", "exec", self.container, *adapter.version_command])
        result = self.generator.ssh.run(command + " 2>&1", check=False, timeout=60)
        return adapter.parse_version(result.stdout.decode(errors="replace"))


class ContainerGeneratorHost(GeneratorHost):
    """A generator host whose tools run in containers of the images built here."""

    def __init__(self, ssh: SshHost):
        super().__init__(ssh)
        # The suite's folder is mounted at the same path: the rewritten command lines hold there too.
        self.containers = ToolContainers(lambda *args: docker_there(ssh, *args), [
            "--network", "host", "--pid", "host", "--label", f"{LABEL}=generator",
            "-v", f"{self.workdir}:{self.workdir}"])

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        found = super().problems([])     # ssh, top, ps, python3, tar: the tools are in the images
        return found or [p for p in [docker_problem(self.ssh, "generator")] if p]

    def session(self, adapter: ToolAdapter | None, target: Target, split: CpuSplit, barrier: StartBarrier | None,
                nginx: RemoteNginx | None, target_cores: int | None) -> RemoteGeneratorSession:
        if adapter is None:     # the RTT probe: python3 on the host, on the same network as the containers
            return super().session(adapter, target, split, barrier, nginx, target_cores)
        image = tool_image(adapter)
        return ContainerGeneratorSession(target, split, self, barrier, nginx, target_cores,
                                         container=self.containers.of(image), image=image)

    def stop(self) -> None:
        try:
            self.containers.remove_all()
        finally:
            super().stop()


class RemoteDockerRuntime(RemoteTargetRuntime):
    """Nginx's container on the target host; the tools' containers here or on the generator hosts."""

    name = "docker"

    def __init__(self, url: str, generators: list[str] | None = None, results_dir: Path | None = None):
        super().__init__(url, generators)
        self._builder = DockerRuntime(results_dir)     # builds the images here, as on one machine
        self._images: list[str] = []
        self._here = ToolContainers(docker_here, [
            "--network", "host", "--label", f"{PREFIX}=generator",
            "-v", f"{self._builder.results_dir}:{self._builder.results_dir}",
            "-v", f"{TOOLS_DIR}:{TOOLS_DIR}:ro"])

    def _make_target(self, ssh: SshHost) -> RemoteNginx:
        return NginxContainer(ssh)

    def _make_generator(self, ssh: SshHost) -> GeneratorHost:
        return ContainerGeneratorHost(ssh)

    def _local_session(self, adapter: ToolAdapter | None) -> Session:
        if adapter is None:
            return super()._local_session(adapter)
        image = tool_image(adapter)
        return LocalToolSession(self.target, self.split, self._nginx, route_device(self.target.host),
                                self._target_cores, self._here.of(image), image)

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        found = local_problems([], ("ip", "top", "ssh")) or self._builder.problems(adapters)   # images are built here
        if found:
            return found
        found = [p for p in [docker_problem(self.remote, "target")] if p]
        return found + [p for g in self.generators for p in g.problems(adapters)]

    def prepare(self, adapters: list[ToolAdapter]) -> dict[str, str]:
        broken = self._builder.prepare(adapters)
        copy_image(TARGET_IMAGE, self.remote)
        images = _images(adapters, broken)
        self._images = list(images)
        for generator in self.generators:
            for image, names in images.items():
                try:
                    copy_image(image, generator.ssh)
                except HarnessError as exc:
                    broken.update({name: str(exc) for name in names})
        return {**super().prepare(adapters), **broken}

    def __exit__(self, *exc) -> None:
        try:
            self._here.remove_all()
        finally:
            super().__exit__(*exc)

    def describe(self) -> dict:
        described = super().describe()
        # The image's Nginx, not the host's (the host's facts say which Nginx it has installed, if any).
        nginx = self.remote.run(shlex.join(["docker", "run", "--rm", TARGET_IMAGE, "nginx", "-v"]) + " 2>&1",
                                check=False).stdout.decode(errors="replace").strip()
        where = " on the generator hosts (--network host --pid host)" if self.generators else " here (--network host)"
        return {**described, "nginx_version": nginx,
                "target": f"nginx container of {TARGET_IMAGE} on {self.remote.url}'s Docker engine, port 80 published on "
                          f"{self.remote.address} only",
                "tools": "tool containers" + where, "docker_version": self._builder.describe()["docker_version"],
                "base_image": self._builder.base_image,
                "images": {image: image_id(image) for image in [TARGET_IMAGE, *self._images]},
                "images_copied": "docker save | ssh HOST docker load, where the host's image id differed: the same ids there"}


def _images(adapters: list[ToolAdapter], broken: dict[str, str]) -> dict[str, list[str]]:
    """Each tool image that built, with the tool ids that run it (variants share one)."""
    images: dict[str, list[str]] = {}
    for adapter in adapters:
        if not adapter.unavailable and adapter.name not in broken:
            images.setdefault(tool_image(adapter), []).append(adapter.name)
    return images
