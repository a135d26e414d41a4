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
from harness.cpus import CpuSplit
from harness.errors import HarnessError
from harness.processes import end_process, signals_deferred
from harness.runtimes import compiles
from harness.runtimes.base import Runtime, Session, run, undone_on_error
from harness.sampling import PidSource
from harness.targets import (FILE_SERVER, Certificate, Setup, Stack, get, make_certificate, served_folder,
                             stack_facts, stage, version_of)
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter

NETNS = f"{PREFIX}-target"
VETH_HOST, VETH_TARGET = f"{PREFIX}-veth0", f"{PREFIX}-veth1"
HOST_IP, TARGET_IP, PREFIX_LEN = "198.18.0.1", "198.18.0.2", 30


def process_tree(root_pid: int) -> set[int]:
    """``root_pid`` and every process below it (empty: it is gone). The sampler asks once a second during a load:
    walking the kernel's children lists reads the tree's own files (0.1 ms here) where psutil reads every
    process's (2 ms); psutil where the kernel keeps no such list (CONFIG_PROC_CHILDREN)."""
    if not os.path.exists(f"/proc/{root_pid}/task/{root_pid}/children"):
        try:
            root = psutil.Process(root_pid)
            return {root_pid, *(child.pid for child in root.children(recursive=True))}
        except psutil.NoSuchProcess:
            return set()
    found, todo = set(), [root_pid]
    while todo:
        pid = todo.pop()
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:        # ended meanwhile: neither it nor its children are there any more
            continue
        found.add(pid)
        for thread in threads:
            try:
                todo += [int(child) for child in Path(f"/proc/{pid}/task/{thread}/children").read_text().split()]
            except OSError:
                continue
    return found


def host_version(adapter: ToolAdapter) -> str:
    result = run(adapter.version_command, check=False, timeout=60)
    return adapter.parse_version(result.stdout + result.stderr)


def local_problems(adapters: list[ToolAdapter], commands: tuple[str, ...]) -> list[str]:
    """System commands and the selected tools missing on this machine."""
    found = [f"'{command}' is not installed: run `make deps` (iproute2, nginx, procps)"
             for command in commands if shutil.which(command) is None]
    missing = [a.name for a in adapters if not a.unavailable and not a.installed_here()]
    # a tool scripts/deps.sh is still compiling in the background: found once the compile ends
    if missing and compiles.wait_for_compiles(f"host: {', '.join(missing)}"):
        missing = [a.name for a in adapters if not a.unavailable and not a.installed_here()]
    if missing:
        failed = compiles.last_compile_failed()
        found.append(f"not installed on the host: {', '.join(missing)}: run `make deps RUNTIME=host TOOLS={','.join(missing)}`"
                     + (f" ({compiles.COMPILE_LOG} ends: {failed})" if failed else ""))
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


def _output(argv: list[str]) -> str:
    result = run(argv, check=False)
    return result.stdout + result.stderr


def remove_namespace() -> None:
    """Deleting the namespace removes the veth pair with it."""
    run(["ip", "netns", "delete", NETNS], check=False)
    run(["ip", "link", "delete", VETH_HOST], check=False)


class HostSession(Session):
    def __init__(self, target: Target, split: CpuSplit, stack: "HostStack | None"):
        self.target, self.split, self._stack = target, split, stack
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
        return self._stack.pids() if self._stack else set()   # `ip netns exec` execs each server: masters, workers

    def proxy_pids(self) -> set[int]:
        return self._stack.pids("proxy") if self._stack else set()

    def pids(self, proc: subprocess.Popen) -> PidSource:
        return lambda: process_tree(proc.pid)

    def version(self, adapter: ToolAdapter) -> str:
        return host_version(adapter)

    def save_logs(self, run_dir: Path) -> None:
        if self._stack:
            self._stack.save_logs(run_dir)


class HostStack:
    """A target stack's processes in the target namespace, each pinned to its share of the target's CPUs."""

    def __init__(self, stack: Stack, split: CpuSplit, folder: Path):
        """``folder``: the stack's; the file server's (stack.files) may be outside it: both are removed with it."""
        self.stack, self.folder = stack, folder
        self.cpus = split.stack_cpus(proxy=stack.has_proxy)
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, IO] = {}

    def start(self) -> None:
        for process in self.stack.processes:
            self.logs[process.role] = (self.folder / f"{process.role}.log").open("w")
            cpus = self.cpus[process.role]
            self.procs[process.role] = subprocess.Popen(
                ["ip", "netns", "exec", NETNS, *process.argv], stdout=self.logs[process.role], stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        self.stack.target.wait_ready()
        self.check_running()

    def check_running(self) -> None:
        for process in self.stack.processes:
            proc = self.procs[process.role]
            if proc.poll() is not None:
                raise HarnessError(f"host runtime: the target's {process.role} ({process.argv[0]}) exited with "
                                   f"{proc.returncode}: {self._log_tail(process.role)}")

    def _log_tail(self, role: str) -> str:
        self.logs[role].flush()
        lines = Path(self.logs[role].name).read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def pids(self, role: str | None = None) -> set[int]:
        return {pid for name, proc in self.procs.items() if role in (None, name) for pid in process_tree(proc.pid)}

    def save_logs(self, run_dir: Path) -> None:
        for role, log in self.logs.items():
            log.flush()
            shutil.copy(Path(log.name), run_dir / ("nginx.log" if role == "upstream" else f"{role}.log"))

    def stop(self) -> None:
        """Stop every master and make sure no worker outlives it (a worker still writing into the
        folder would keep it from being removed)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    workers = psutil.Process(proc.pid).children(recursive=True)
                except psutil.NoSuchProcess:
                    workers = []
                end_process(proc)
                for worker in psutil.wait_procs(workers, timeout=5)[1]:
                    worker.kill()
        for log in self.logs.values():
            log.close()
        shutil.rmtree(self.stack.files, ignore_errors=True)


class HostRuntime(Runtime):
    name = "host"
    any_target = True

    def __init__(self) -> None:
        self._stack: HostStack | None = None
        self._workdir: Path | None = None
        self._certificate: Certificate | None = None
        self._facts: dict = {}

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        found = []
        if os.geteuid() != 0:
            found.append("the host runtime creates a network namespace and needs root: run as root (sudo)")
        return found + local_problems(adapters, ("ip", "nginx", "top", "tc"))

    def __enter__(self) -> "HostRuntime":
        remove_namespace()  # leftovers of a killed run; these names are the harness's own
        with undone_on_error(self):
            self._create_namespace()
            self._workdir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-target-"))
            self._workdir.chmod(0o755)   # the servers' workers read their folders below it
            self.use_target(Setup())
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            self._stop_stack()
            remove_namespace()
            self._remove_workdir()

    def _stop_stack(self) -> None:
        if self._stack is not None:
            self._stack.stop()
            self._stack = None

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

    def use_target(self, setup: Setup) -> None:
        if self._stack is not None and self._stack.stack.setup == setup:
            return
        self._stop_stack()
        if setup.tls and self._certificate is None:
            self._certificate = make_certificate(self._workdir / "certificate")
        folder, served = Path(tempfile.mkdtemp(prefix="stack-", dir=self._workdir)), served_folder()
        # The file server and a proxy share the namespace: the proxy reaches it on the namespace's address.
        stack = stage(setup, folder, TARGET_IP, TARGET_IP, self._certificate,
                      self.split.stack_cpus(proxy=get(setup.target).is_proxy), files=served)
        self._stack = HostStack(stack, self.split, folder)
        self._facts = {}
        self._stack.start()

    def check_target(self) -> None:
        self._stack.check_running()
        self._stack.stack.target.verify()

    def target_facts(self) -> dict:
        """Asked once per stack (the servers' versions are a process each)."""
        if self._stack is None:
            return {}
        if not self._facts:
            servers = {get(self._stack.stack.setup.target), get(FILE_SERVER)}
            versions = {server.id: version_of(_output(list(server.version_command))) for server in servers}
            self._facts = stack_facts(self._stack.stack, self._stack.cpus, versions)
        return self._facts

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        if self._stack is None:
            raise HarnessError("host runtime: no target is running; see nginx.log in the results folder")
        self._stack.check_running()
        yield HostSession(self._stack.stack.target, self.split, self._stack)

    def describe(self) -> dict:
        nginx = run(["nginx", "-v"], check=False)
        return {"target": f"nginx in netns {NETNS} at {TARGET_IP}, veth pair from the root namespace",
                "nginx_version": nginx.stderr.strip()}
