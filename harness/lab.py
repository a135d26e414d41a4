"""Lab hosts, a feature (`make bench-lab`, and the two-host tests): other "machines" on this one, to
run the two-host paths end to end: each is a network
namespace running Debian's sshd with a throw-away host key and a per-session client key, and all
of them, with this machine, sit on one LAN: a bridge in a namespace of its own (the "switch"), so
the generator and the target reach each other directly, not through this machine. The
filesystem and the pids are shared, so every "host" has the same nginx and /opt/lth tools.

    root ns  lth-h<pid> 198.18.2.1/24 ──┐
    netns lth-remote-<pid>  (sshd) lth-r<pid>  198.18.2.2/24 ──┤  bridge in netns lth-switch-<pid>
    netns lth-remote2-<pid> (sshd) lth-r2-<pid> 198.18.2.3/24 ──┘

Nothing under /etc/ssh is read or changed: every sshd gets its own config, keys and pid file in a
temp folder (/tmp/lth-testhost-*), which goes with everything else when the block ends (also on
Ctrl-C). One set of test hosts at a time per machine (the addresses are fixed): a lock says so
(harness/store/lock.py).

With ``docker=True`` every host also runs a Docker engine of its own (Debian's dockerd, its data,
exec root and socket in that folder, in the host's network namespace and a mount namespace of its
own, so its mounts go with it); its sshd sets DOCKER_HOST for the sessions, so `docker` run there
over ssh (or through a Docker context) talks to that host's engine, as on a real machine.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness import PREFIX
from harness.errors import HarnessError
from harness.processes import run, signal_pids, signals_deferred
from harness.runtimes.ssh import SshHost
from harness.store.lock import TESTHOST, acquire

# 198.18.0.0/30 is the host runtime's veth, 198.18.1.0/24 the Docker runtime's network.
LAN, PREFIX_LEN = "198.18.2", 24
LOCAL_IP, REMOTE_IP = f"{LAN}.1", f"{LAN}.2"     # this machine; the first test host
MAX_HOSTS = 4
SSHD = Path("/usr/sbin/sshd")
DOCKERD = Path("/usr/sbin/dockerd")
DOCKERD_READY_TIMEOUT_S = 60.0
PRIVSEP_DIR = Path("/run/sshd")     # compiled into Debian's sshd; the package creates it at start
WORKDIR_PREFIX = f"{PREFIX}-testhost-"
READY_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class TestHost:
    netns: str
    device: str          # its NIC, inside netns
    address: str
    local_veth: str      # this machine's NIC on the LAN
    workdir: Path        # shared by every test host of the block: keys, configs
    sshd_pid: int
    docker_socket: Path | None = None   # its own Docker engine (lab(docker=True))

    @property
    def ssh_config(self) -> Path:
        return self.workdir / "ssh_config"

    @property
    def url(self) -> str:
        return f"ssh://root@{self.address}"

    def ssh(self) -> SshHost:
        return SshHost(url=self.url, host=self.address, address=self.address, user="root", config=str(self.ssh_config))

    def pids(self) -> set[int]:
        """Every process in the namespace (sshd and whatever was started over ssh)."""
        return {int(p) for p in run(["ip", "netns", "pids", self.netns], check=False).stdout.split()}


def missing(docker: bool = False) -> str | None:
    """Why a test host (``docker``: with its own Docker engine) cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "a test host needs root (network namespaces)"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed: run `NEED_SSHD=1 scripts/deps.sh`"
    if not SSHD.is_file():
        return f"{SSHD} is not installed (Debian's openssh-server): run `NEED_SSHD=1 scripts/deps.sh`"
    if docker and not (DOCKERD.is_file() and shutil.which("docker") and shutil.which("unshare")):
        return f"{DOCKERD} or the docker CLI is not installed (Debian's docker.io): run `scripts/deps.sh`"
    return None


def _docker_root(workdir: Path, address: str) -> Path:
    return workdir / f"docker-{address}"


def _keys(workdir: Path, addresses: list[str]) -> None:
    """One host key and one client key for every test host; each sshd listens on its own address."""
    for name in ("host_key", "client_key"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{PREFIX}-testhost", "-f", str(workdir / name)])
    shutil.copy(workdir / "client_key.pub", workdir / "authorized_keys")
    host_key = (workdir / "host_key.pub").read_text().split()
    (workdir / "known_hosts").write_text("".join(f"{a} {host_key[0]} {host_key[1]}\n" for a in addresses))
    for address in addresses:
        (workdir / f"sshd_config-{address}").write_text("\n".join([
            f"ListenAddress {address}", "Port 22", f"HostKey {workdir / 'host_key'}",
            f"PidFile {workdir / f'sshd-{address}.pid'}", f"AuthorizedKeysFile {workdir / 'authorized_keys'}",
            "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", "PrintMotd no", "AcceptEnv none",
            f"SetEnv DOCKER_HOST=unix://{_docker_root(workdir, address) / 'docker.sock'}", ""]))
    (workdir / "ssh_config").write_text("\n".join([
        f"Host {' '.join(addresses)}", "  User root", f"  IdentityFile {workdir / 'client_key'}",
        "  IdentitiesOnly yes", f"  UserKnownHostsFile {workdir / 'known_hosts'}", "  StrictHostKeyChecking yes",
        "  GlobalKnownHostsFile /dev/null", "  LogLevel ERROR", ""]))


def _step(argv: list[str]) -> None:
    result = run(argv, check=False)
    if result.returncode != 0:
        raise HarnessError(f"test hosts: `{' '.join(argv)}` failed: {result.stderr.strip()}")


def _plug(switch: str, port: str, netns: str | None, device: str, address: str) -> None:
    """A veth from the switch's bridge to ``device`` (in ``netns``; None: the root namespace)."""
    inside = ["ip", "-n", netns] if netns else ["ip"]
    _step(["ip", "link", "add", device, "type", "veth", "peer", "name", port, "netns", switch])
    if netns:
        _step(["ip", "link", "set", device, "netns", netns])
        _step([*inside, "link", "set", "lo", "up"])
    _step([*inside, "addr", "add", f"{address}/{PREFIX_LEN}", "dev", device])
    _step([*inside, "link", "set", device, "up"])
    _step(["ip", "-n", switch, "link", "set", port, "master", "br0", "up"])


def _wait_for_sshd(proc: subprocess.Popen, address: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise HarnessError(f"test host: sshd exited ({proc.returncode}): {log.read_text().strip()[-300:]}")
        try:
            socket.create_connection((address, 22), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise HarnessError(f"test host: sshd did not listen on {address}:22 within "
                                   f"{READY_TIMEOUT_S:.0f} s") from None
            time.sleep(0.1)


def _kill_namespace_processes(netns: str) -> None:
    for _ in range(50):
        pids = {int(p) for p in run(["ip", "netns", "pids", netns], check=False).stdout.split()}
        if not pids:
            return
        signal_pids(pids, signal.SIGKILL)
        time.sleep(0.1)


def _names(index: int, pid: int) -> tuple[str, str]:
    """The i-th host's namespace and NIC (the first keeps the one-host names)."""
    suffix = "" if index == 0 else str(index + 1)
    return f"{PREFIX}-remote{suffix}-{pid}", f"{PREFIX}-r{suffix}{'-' if suffix else ''}{pid}"


@contextmanager
def _switch(pid: int) -> Iterator[str]:
    switch, local = f"{PREFIX}-switch-{pid}", f"{PREFIX}-h{pid}"
    try:
        _step(["ip", "netns", "add", switch])
        _step(["ip", "-n", switch, "link", "add", "br0", "type", "bridge"])
        _step(["ip", "-n", switch, "link", "set", "br0", "up"])
        _plug(switch, "p0", None, local, LOCAL_IP)
        yield switch
    finally:
        with signals_deferred():
            run(["ip", "netns", "delete", switch], check=False)    # takes every veth's switch end
            run(["ip", "link", "delete", local], check=False)


def _docker(socket_path: Path, *args: str) -> subprocess.CompletedProcess:
    return run(["docker", "-H", f"unix://{socket_path}", *args], check=False, timeout=60)


@contextmanager
def _dockerd(netns: str, index: int, root: Path) -> Iterator[Path]:
    """A Docker engine in ``netns`` (its bridge and the networks it makes stay there, in
    198.18.16.0/20 and above), up for the block; its socket is yielded."""
    socket_path = root / "docker.sock"
    root.mkdir()
    with (root / "dockerd.log").open("w") as log:
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "nsenter", f"--net=/var/run/netns/{netns}",
             str(DOCKERD), "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
             "--pidfile", str(root / "dockerd.pid"), "-H", f"unix://{socket_path}",
             "--bip", f"198.18.{16 + index}.1/24", "--default-address-pool", f"base=198.18.{32 + 8 * index}.0/21,size=24"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + DOCKERD_READY_TIMEOUT_S
        while _docker(socket_path, "version").returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise HarnessError(f"test host: dockerd did not start: {(root / 'dockerd.log').read_text().strip()[-300:]}")
            time.sleep(0.5)
        yield socket_path
    finally:
        with signals_deferred():
            containers = _docker(socket_path, "ps", "-aq").stdout.split() if proc.poll() is None else []
            if containers:
                _docker(socket_path, "rm", "-f", *containers)
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@contextmanager
def _host(switch: str, index: int, pid: int, workdir: Path, docker: bool = False) -> Iterator[TestHost]:
    netns, device = _names(index, pid)
    address = f"{LAN}.{index + 2}"
    sshd: subprocess.Popen | None = None
    try:
        _step(["ip", "netns", "add", netns])
        _plug(switch, f"p{index + 1}", netns, device, address)
        with (workdir / f"sshd-{address}.log").open("w") as log:
            sshd = subprocess.Popen(["ip", "netns", "exec", netns, str(SSHD), "-D", "-e", "-f",
                                     str(workdir / f"sshd_config-{address}")],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        _wait_for_sshd(sshd, address, workdir / f"sshd-{address}.log")
        with ExitStack() as engine:
            socket_path = engine.enter_context(_dockerd(netns, index, _docker_root(workdir, address))) if docker else None
            yield TestHost(netns, device, address, f"{PREFIX}-h{pid}", workdir, sshd.pid, socket_path)
    finally:
        with signals_deferred():
            _kill_namespace_processes(netns)
            if sshd is not None:
                sshd.wait(timeout=10)
            run(["ip", "netns", "delete", netns], check=False)


@contextmanager
def lab(count: int, docker: bool = False) -> Iterator[list[TestHost]]:
    """``count`` hosts on one LAN with this machine, up for the block (``docker``: each with its own
    Docker engine); everything they made is gone afterwards, whatever happened inside."""
    if not 1 <= count <= MAX_HOSTS:
        raise HarnessError(f"test hosts: 1 to {MAX_HOSTS}, not {count}")
    if reason := missing(docker):
        raise HarnessError(reason)
    pid = os.getpid()
    with ExitStack() as stack:
        stack.enter_context(acquire(TESTHOST, "other test hosts are up on this machine", wait=False))
        workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        if not PRIVSEP_DIR.exists():
            PRIVSEP_DIR.mkdir(mode=0o755)
            stack.callback(shutil.rmtree, PRIVSEP_DIR, ignore_errors=True)
        _keys(workdir, [f"{LAN}.{i + 2}" for i in range(count)])
        switch = stack.enter_context(_switch(pid))
        yield [stack.enter_context(_host(switch, i, pid, workdir, docker)) for i in range(count)]


@contextmanager
def second_host() -> Iterator[TestHost]:
    """One other machine (the two-host tests' target)."""
    with lab(1) as (host,):
        yield host


def main(argv: list[str]) -> int:
    """``python -m harness.lab --generators N [--docker] -- RUN ARGS``: `harness run RUN ARGS` with
    the tools on N test hosts and Nginx on one more, all made here for the run (make bench-lab)."""
    import argparse
    import sys

    from harness.cli import check_run_arguments
    parser = argparse.ArgumentParser(prog="lth lab", epilog="example: lth lab --generators 2 -- --tools wrk,ab "
                                     "--scenarios scenarios/quick.yaml --runtime host (make bench-lab)")
    parser.add_argument("--generators", type=int, default=1, choices=range(1, MAX_HOSTS))
    parser.add_argument("--docker", action="store_true", help="give every test host its own Docker engine")
    parser.add_argument("run_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
    try:
        check_run_arguments(run_args)     # bad input: one line, before any namespace or engine is made
        with lab(args.generators + 1, docker=args.docker) as hosts:
            *generators, target = hosts
            env = {**os.environ, "LTH_SSH_CONFIG": str(target.ssh_config)}
            print(f"test hosts: generators {', '.join(h.url for h in generators)}; target {target.url}", flush=True)
            return subprocess.call([sys.executable, "-m", "harness", "run", *run_args, "--target-host", target.url,
                                    "--generator-host", ",".join(h.url for h in generators)], env=env)
    except HarnessError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
