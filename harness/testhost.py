"""A second "machine" on this one, for testing the two-host paths end to end: a network namespace
reached over a veth pair, running Debian's sshd with a throw-away host key and a per-session client
key. The filesystem is shared, so the "remote" host has the same nginx and /opt/lth tools.

    root ns  lth-h<pid> 198.18.2.1/30  <-- veth -->  lth-r<pid> 198.18.2.2/30  netns lth-remote-<pid> (sshd)

Nothing under /etc/ssh is read or changed: sshd gets its own config, keys and pid file in a temp
folder (/tmp/lth-testhost-*), which goes with everything else when the block ends (also on
Ctrl-C). One second host at a time per machine (the addresses are fixed): a lock file says so.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from harness import PREFIX
from harness.cleanup import signals_deferred
from harness.errors import HarnessError
from harness.execution import signal_pids
from harness.runtimes.base import run
from harness.runtimes.host import veth_namespace
from harness.ssh import SshHost

# 198.18.0.0/30 is the host runtime's veth, 198.18.1.0/24 the Docker runtime's network.
LOCAL_IP, REMOTE_IP, PREFIX_LEN = "198.18.2.1", "198.18.2.2", 30
SSHD = Path("/usr/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")     # compiled into Debian's sshd; the package creates it at start
LOCK_FILE = Path(f"/tmp/{PREFIX}-testhost.lock")
WORKDIR_PREFIX = f"{PREFIX}-testhost-"
READY_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class TestHost:
    netns: str
    local_veth: str
    workdir: Path
    sshd_pid: int

    @property
    def ssh_config(self) -> Path:
        return self.workdir / "ssh_config"

    @property
    def url(self) -> str:
        return f"ssh://root@{REMOTE_IP}"

    def ssh(self) -> SshHost:
        return SshHost(url=self.url, host=REMOTE_IP, address=REMOTE_IP, user="root", config=str(self.ssh_config))

    def pids(self) -> set[int]:
        """Every process in the namespace (sshd and whatever was started over ssh)."""
        return {int(p) for p in run(["ip", "netns", "pids", self.netns], check=False).stdout.split()}


def missing() -> str | None:
    """Why a second host cannot be made here (None: it can)."""
    if os.geteuid() != 0:
        return "a second host needs root (network namespaces)"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed: run `NEED_SSHD=1 scripts/deps.sh`"
    if not SSHD.is_file():
        return f"{SSHD} is not installed (Debian's openssh-server): run `NEED_SSHD=1 scripts/deps.sh`"
    return None


def _lock() -> IO:
    handle = LOCK_FILE.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise HarnessError(f"another second host is up on this machine ({LOCK_FILE} is held)") from None
    return handle


def _keys(workdir: Path) -> None:
    for name in ("host_key", "client_key"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{PREFIX}-testhost", "-f", str(workdir / name)])
    shutil.copy(workdir / "client_key.pub", workdir / "authorized_keys")
    host_key = (workdir / "host_key.pub").read_text().split()
    (workdir / "known_hosts").write_text(f"{REMOTE_IP} {host_key[0]} {host_key[1]}\n")
    (workdir / "sshd_config").write_text("\n".join([
        f"ListenAddress {REMOTE_IP}", "Port 22", f"HostKey {workdir / 'host_key'}",
        f"PidFile {workdir / 'sshd.pid'}", f"AuthorizedKeysFile {workdir / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "PrintMotd no", "AcceptEnv none", ""]))
    (workdir / "ssh_config").write_text("\n".join([
        f"Host {REMOTE_IP}", "  User root", f"  IdentityFile {workdir / 'client_key'}", "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {workdir / 'known_hosts'}", "  StrictHostKeyChecking yes",
        "  GlobalKnownHostsFile /dev/null", "  LogLevel ERROR", ""]))


def _wait_for_sshd(proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise HarnessError(f"second host: sshd exited ({proc.returncode}): {log.read_text().strip()[-300:]}")
        try:
            socket.create_connection((REMOTE_IP, 22), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise HarnessError(f"second host: sshd did not listen on {REMOTE_IP}:22 within "
                                   f"{READY_TIMEOUT_S:.0f} s") from None
            time.sleep(0.1)


def _kill_namespace_processes(netns: str) -> None:
    for _ in range(50):
        pids = {int(p) for p in run(["ip", "netns", "pids", netns], check=False).stdout.split()}
        if not pids:
            return
        signal_pids(pids, signal.SIGKILL)
        time.sleep(0.1)


@contextmanager
def second_host() -> Iterator[TestHost]:
    """Up for the block; everything it made is gone afterwards, whatever happened inside."""
    if reason := missing():
        raise HarnessError(reason)
    lock = _lock()
    pid = os.getpid()
    netns, local, remote = f"{PREFIX}-remote-{pid}", f"{PREFIX}-h{pid}", f"{PREFIX}-r{pid}"
    workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
    made_privsep = not PRIVSEP_DIR.exists()
    sshd: subprocess.Popen | None = None
    try:
        _keys(workdir)
        veth_namespace(netns, (local, LOCAL_IP), (remote, REMOTE_IP), PREFIX_LEN, "second host")
        if made_privsep:
            PRIVSEP_DIR.mkdir(mode=0o755)
        with (workdir / "sshd.log").open("w") as log:
            sshd = subprocess.Popen(["ip", "netns", "exec", netns, str(SSHD), "-D", "-e", "-f",
                                     str(workdir / "sshd_config")],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        _wait_for_sshd(sshd, workdir / "sshd.log")
        yield TestHost(netns, local, workdir, sshd.pid)
    finally:
        with signals_deferred():
            _kill_namespace_processes(netns)
            if sshd is not None:
                sshd.wait(timeout=10)
            run(["ip", "netns", "delete", netns], check=False)
            run(["ip", "link", "delete", local], check=False)
            if made_privsep:
                shutil.rmtree(PRIVSEP_DIR, ignore_errors=True)
            shutil.rmtree(workdir, ignore_errors=True)
            lock.close()
