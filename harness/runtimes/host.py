"""Bare metal: tools are plain processes in the root namespace; Nginx runs in a network
namespace the harness creates, reached over a veth pair, so there is a real network hop.

    root ns  lth-veth0 198.18.0.1/30  <-- veth -->  lth-veth1 198.18.0.2/30  netns lth-target (nginx)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

import psutil

from harness import PREFIX
from harness.adapter import ToolAdapter
from harness.cpus import CpuSplit
from harness.errors import HarnessError
from harness.processes import end_process, signals_deferred
from harness.runtimes.base import Runtime, Session, run, undone_on_error
from harness.sampling import PidSource
from harness.target import Target, stage

NETNS = f"{PREFIX}-target"
VETH_HOST, VETH_TARGET = f"{PREFIX}-veth0", f"{PREFIX}-veth1"
HOST_IP, TARGET_IP, PREFIX_LEN = "198.18.0.1", "198.18.0.2", 30


def process_tree(root_pid: int) -> set[int]:
    try:
        root = psutil.Process(root_pid)
        return {root_pid, *(child.pid for child in root.children(recursive=True))}
    except psutil.NoSuchProcess:
        return set()


def host_version(adapter: ToolAdapter) -> str:
    result = run(adapter.version_command, check=False, timeout=60)
    return adapter.parse_version(result.stdout + result.stderr)


def local_problems(adapters: list[ToolAdapter], commands: tuple[str, ...]) -> list[str]:
    """System commands and the selected tools missing on this machine."""
    found = [f"'{command}' is not installed: run `make deps` (iproute2, nginx, procps)"
             for command in commands if shutil.which(command) is None]
    missing = [a.name for a in adapters if not a.unavailable and shutil.which(a.version_command[0]) is None]
    if missing:
        found.append(f"not installed on the host: {', '.join(missing)}: run `make deps RUNTIME=host TOOLS={','.join(missing)}`")
    return found


def veth_namespace(netns: str, here: tuple[str, str], there: tuple[str, str], prefix_len: int, who: str) -> None:
    """A new namespace reached over a veth pair: ``here`` (device, address) stays in the root
    namespace, ``there`` goes into ``netns``."""
    (local, local_ip), (remote, remote_ip) = here, there
    steps = [
        ["ip", "netns", "add", netns],
        ["ip", "link", "add", local, "type", "veth", "peer", "name", remote],
        ["ip", "link", "set", remote, "netns", netns],
        ["ip", "addr", "add", f"{local_ip}/{prefix_len}", "dev", local],
        ["ip", "link", "set", local, "up"],
        ["ip", "-n", netns, "addr", "add", f"{remote_ip}/{prefix_len}", "dev", remote],
        ["ip", "-n", netns, "link", "set", remote, "up"],
        ["ip", "-n", netns, "link", "set", "lo", "up"],
    ]
    for step in steps:
        result = run(step, check=False)
        if result.returncode != 0:
            raise HarnessError(f"{who}: `{' '.join(step)}` failed: {result.stderr.strip()}")


def remove_namespace() -> None:
    """Deleting the namespace removes the veth pair with it."""
    run(["ip", "netns", "delete", NETNS], check=False)
    run(["ip", "link", "delete", VETH_HOST], check=False)


class HostSession(Session):
    def __init__(self, target: Target, split: CpuSplit, nginx_pid: int):
        self.target, self.split, self._nginx_pid = target, split, nginx_pid
        self.cpus = len(split.tool_cpus)
        self.generator_netns = []
        self.shape_netns = ["ip", "netns", "exec", NETNS]
        self.target_netns = [*split.taskset("target"), *self.shape_netns]  # a proxy there shares Nginx's CPUs
        self.shape_device = VETH_TARGET   # the target's egress: the whole RTT on one side
        self.capture_device = VETH_HOST

    def popen(self, argv: list[str], stdout: IO, stderr: IO, run_dir: Path | None = None) -> subprocess.Popen:
        return subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=lambda: self.split.pin("tool"))

    def target_pids(self) -> set[int]:
        return process_tree(self._nginx_pid)   # `ip netns exec` execs nginx: master and workers

    def pids(self, proc: subprocess.Popen) -> PidSource:
        return lambda: process_tree(proc.pid)

    def version(self, adapter: ToolAdapter) -> str:
        return host_version(adapter)


class HostRuntime(Runtime):
    name = "host"

    def __init__(self) -> None:
        self._nginx: subprocess.Popen | None = None
        self._workdir: Path | None = None
        self._nginx_log: IO | None = None

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        found = []
        if os.geteuid() != 0:
            found.append("the host runtime creates a network namespace and needs root: run as root (sudo)")
        return found + local_problems(adapters, ("ip", "nginx", "top", "tc"))

    def __enter__(self) -> "HostRuntime":
        remove_namespace()  # leftovers of a killed run; these names are the harness's own
        with undone_on_error(self):
            self._create_namespace()
            self._start_nginx()
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            self._stop_nginx()
            remove_namespace()
            self._remove_workdir()

    def _stop_nginx(self) -> None:
        """Stop the master and make sure no worker outlives it (a worker still writing into the
        prefix folder would keep it from being removed)."""
        if self._nginx and self._nginx.poll() is None:
            try:
                workers = psutil.Process(self._nginx.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                workers = []
            end_process(self._nginx)
            for worker in psutil.wait_procs(workers, timeout=5)[1]:
                worker.kill()
        if self._nginx_log:
            self._nginx_log.close()

    def _remove_workdir(self) -> None:
        if not self._workdir:
            return
        for _ in range(5):
            shutil.rmtree(self._workdir, ignore_errors=True)
            if not self._workdir.exists():
                return
            time.sleep(0.2)
        print(f"warning: could not remove {self._workdir}: run `make clean-state`", file=sys.stderr)

    def _create_namespace(self) -> None:
        veth_namespace(NETNS, (VETH_HOST, HOST_IP), (VETH_TARGET, TARGET_IP), PREFIX_LEN, "host runtime")

    def _start_nginx(self) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-target-"))
        stage(self._workdir)
        self._nginx_log = (self._workdir / "nginx.log").open("w")
        self._nginx = subprocess.Popen(
            ["ip", "netns", "exec", NETNS, "nginx", "-p", f"{self._workdir}/", "-c", str(self._workdir / "nginx.conf")],
            stdout=self._nginx_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=lambda: self.split.pin("target"),
        )
        self.target = Target(TARGET_IP)
        self.target.wait_ready()

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        if self._nginx is None or self._nginx.poll() is not None:
            raise HarnessError("host runtime: nginx is not running; see nginx.log in the results folder")
        yield HostSession(self.target, self.split, self._nginx.pid)

    def describe(self) -> dict:
        nginx = run(["nginx", "-v"], check=False)
        return {"target": f"nginx in netns {NETNS} at {TARGET_IP}, veth pair from the root namespace",
                "nginx_version": nginx.stderr.strip()}
