"""Two machines end to end (--target-host): Nginx on the tests' second host (harness/lab.py:
sshd in its own namespace, behind a veth), started over ssh; the tools run here and load it over
the veth. Nothing may remain on either side afterwards."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import REPO, harness, require_root_tools
from harness.lab import REMOTE_IP, missing, second_host
from harness.runtimes.ssh import SSH_CONFIG_ENV

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"
TOOLS = ("wrk", "ab", "k6", "jmeter")
pytestmark = [pytest.mark.e2e, pytest.mark.tools(*TOOLS)]


@pytest.fixture(scope="module")
def the_second_host():
    """Made once for the module; gone without a trace at its end."""
    require_root_tools("ip", "ssh", "wrk", "ab")
    if reason := missing():
        pytest.skip(reason)
    with second_host() as host:
        yield host
    assert host.netns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not psutil.pid_exists(host.sshd_pid) and not host.workdir.exists()


@pytest.fixture
def other_host(the_second_host, monkeypatch):
    """The module's second host, checked after each test: no Nginx left, only its sshd running there."""
    monkeypatch.setenv(SSH_CONFIG_ENV, str(the_second_host.ssh_config))
    yield the_second_host
    assert target_leftovers() == []
    assert settled(the_second_host) == {the_second_host.sshd_pid}


def settled(host, timeout_s: float = 5) -> set[int]:
    """The other side's processes once the last ssh session's sshd child has exited."""
    deadline = time.monotonic() + timeout_s
    while (pids := host.pids()) != {host.sshd_pid} and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


def target_leftovers() -> list[str]:
    """Nginx started by the harness and its folder (the filesystem and pids are shared here)."""
    masters = [p.pid for p in psutil.process_iter(["cmdline"]) if "/tmp/lth-target-" in " ".join(p.info["cmdline"] or [])]
    return [f"nginx {pid}" for pid in masters] + [str(p) for p in Path("/tmp").glob("lth-target-*")]


def test_tools_here_load_nginx_on_the_other_host(tmp_path, other_host):
    tools = TOOLS   # `make test` installs every tool (scripts/deps.sh all)
    result = harness("run", "--runtime", "host", "--target-host", other_host.url, "--tools", ",".join(tools),
                     "--scenarios", SCENARIO, "--duration", "3", "--results-root", str(tmp_path), "--capture")
    rows = {r["tool"]: r for r in csv.DictReader((tmp_path / "latest" / "runs.csv").open())}
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert set(rows) == set(tools)
    for tool, row in rows.items():
        assert row["status"] == "ok", (tool, row["error"])
        requests, served = int(row["requests"]), int(row["server_requests"])
        assert requests > 0 and abs(served - requests) <= 0.01 * requests, (tool, served, requests)
        assert 0 < float(row["rtt_measured_ms"]) < 5, tool
        # tcpdump on this side of the veth saw the tool's requests (the probe and stub_status reads are outside)
        assert abs(int(row["wire_requests"]) - served) <= 0.01 * served, (tool, row["wire_requests"], served)
        cores = f"0-{len(os.sched_getaffinity(0)) - 1}"
        assert row["cpus_target"] == row["cpus_tool"] == cores    # two machines: each side has all of its own
        assert float(row["target_cpu_pct"]) > 0                   # sampled by top on the other host
        assert (tmp_path / "latest" / row["run_dir"] / "nginx.log").is_file()   # fetched over ssh
    environment = json.loads((tmp_path / "latest" / "environment.json").read_text())
    other = environment["target_host"]
    assert other["address"] == REMOTE_IP and other["nic"] == f"lth-r{other_host.netns.rsplit('-', 1)[1]}"
    assert other["kernel"] and other["cores"] >= 1 and other["memory_gib"] > 0
    assert other["nic_speed_mbps"] == 10000                  # a veth reports 10 Gbit/s
    assert environment["generator_nic"] == other_host.local_veth
    assert 0 < environment["rtt_between_hosts"]["median_ms"] < 5


def test_a_shaped_scenario_runs_through_toxiproxy_beside_the_tool(tmp_path, other_host):
    result = harness("run", "--runtime", "host", "--target-host", other_host.url, "--tools", "wrk",
                     "--scenarios", "scenarios/shootout.yaml:vu20-rtt10", "--duration", "3",
                     "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "RTT shaping: toxiproxy (with --target-host the RTT is shaped on the generator side" in result.stdout
    (row,) = csv.DictReader((tmp_path / "latest" / "runs.csv").open())
    assert row["status"] == "ok" and row["shaper"] == "toxiproxy", row["error"]
    assert 9 <= float(row["rtt_measured_ms"]) <= 13       # the 10 ms toxic on top of the veth's hop
    requests, served = int(row["requests"]), int(row["server_requests"])
    assert abs(served - requests) <= 0.01 * requests       # counted by Nginx itself, not through the proxy
    assert "Toxiproxy ran beside the tool" in row["notes"]
    assert (tmp_path / "latest" / row["run_dir"] / "toxiproxy.log").is_file()


def test_netem_is_refused_across_two_machines_in_one_line(tmp_path, other_host):
    result = harness("run", "--runtime", "host", "--target-host", other_host.url, "--tools", "wrk", "--shaper", "netem",
                     "--scenarios", "scenarios/shootout.yaml:vu20-rtt10", "--duration", "3",
                     "--results-root", str(tmp_path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "--shaper netem: with --target-host the RTT is shaped on the generator side by Toxiproxy" in result.stderr


def test_sigint_stops_and_removes_the_remote_nginx(tmp_path, other_host):
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--runtime", "host", "--target-host",
                             other_host.url, "--tools", "wrk", "--scenarios", SCENARIO, "--duration", "60",
                             "--results-root", str(tmp_path)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not subprocess.run(["pgrep", "-x", "wrk"], capture_output=True).stdout and time.monotonic() < deadline:
        time.sleep(0.2)
    assert target_leftovers(), "the remote nginx should be running while wrk is"
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert target_leftovers() == []
    assert not subprocess.run(["pgrep", "-x", "wrk"], capture_output=True).stdout   # the tool stopped too


def test_clean_state_removes_what_a_killed_harness_left_on_the_other_host(other_host):
    from harness.runtimes.remote import clean_remote
    from harness.runtimes.remote_nginx import RemoteNginx
    RemoteNginx(other_host.ssh()).start()          # as a harness killed with -9 leaves it
    assert target_leftovers()
    removed = clean_remote(other_host.url)
    assert any(line.startswith("nginx ") for line in removed) and any("folder /tmp/lth-target-" in l for l in removed)
    assert target_leftovers() == []
    assert clean_remote(other_host.url) == []      # nothing left: nothing reported
