"""The tests' second host (harness/lab.py): a real sshd in its own namespace, reached over a
veth, gone without a trace afterwards, also when the block fails."""
import subprocess
from pathlib import Path

import psutil
import pytest

from harness.lab import LOCAL_IP, REMOTE_IP, missing, second_host

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _needs_sshd():
    if reason := missing():
        pytest.skip(reason)


def leftovers(host) -> list[str]:
    found = []
    if host.netns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout:
        found.append(f"namespace {host.netns}")
    if subprocess.run(["ip", "link", "show", host.local_veth], capture_output=True).returncode == 0:
        found.append(f"link {host.local_veth}")
    if psutil.pid_exists(host.sshd_pid):
        found.append(f"sshd {host.sshd_pid}")
    if host.workdir.exists():
        found.append(f"folder {host.workdir}")
    return found


def test_ssh_reaches_the_second_host_over_its_veth_and_nothing_is_left():
    with second_host() as host:
        ssh = host.ssh()
        answer = ssh.text("id -u; ip -o -4 addr show; cat /proc/net/route | wc -l")
        assert answer.splitlines()[0] == "0"
        assert f"inet {REMOTE_IP}/24" in answer
        # The other side has no address of this machine's: only its veth (and lo).
        assert LOCAL_IP not in answer and "eth0" not in answer
        assert host.sshd_pid in host.pids()
        assert Path("/etc/ssh/sshd_config").exists() is False or "lth" not in Path("/etc/ssh/sshd_config").read_text()
    assert leftovers(host) == []


def test_the_second_host_is_removed_when_the_block_fails():
    with pytest.raises(RuntimeError):
        with second_host() as host:
            host.ssh().run("sleep 60 >/dev/null 2>&1 &")   # a process left running on the other side
            raise RuntimeError("a failing test")
    assert leftovers(host) == []
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "60"]]
