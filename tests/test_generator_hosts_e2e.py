"""Generator and target on two other machines (--generator-host, --target-host): three test hosts
on one LAN (harness/lab.py lab: sshd in namespaces behind a bridge). The tools run in the
generator hosts' namespaces, started over ssh; their files come back here. Nothing may remain on
any side afterwards."""
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

from conftest import REPO, assert_rederives, harness, require_root_tools
from harness.ssh import SSH_CONFIG_ENV
from harness.lab import lab, missing

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"
TOOLS = ("wrk", "ab", "k6", "jmeter", "oha")
pytestmark = [pytest.mark.e2e, pytest.mark.tools(*TOOLS)]


@pytest.fixture(scope="module")
def lab_hosts():
    """Generators A and B, target C: made once for the module (tests/test_lab.py proves a lab comes and goes)."""
    require_root_tools("ip", "ssh", "wrk")
    if reason := missing():
        pytest.skip(reason)
    with lab(3) as made:
        yield made


@pytest.fixture
def hosts(lab_hosts, monkeypatch):
    """The module's lab, checked after each test: only its sshd runs on every host, nothing in /tmp."""
    monkeypatch.setenv(SSH_CONFIG_ENV, str(lab_hosts[0].ssh_config))
    yield lab_hosts
    for host in lab_hosts:
        assert settled(host) == {host.sshd_pid}, host.url     # only the test's sshd runs there
    assert not list(Path("/tmp").glob("lth-generator-*")) and not list(Path("/tmp").glob("lth-target-*"))


def settled(host, timeout_s: float = 5) -> set[int]:
    deadline = time.monotonic() + timeout_s
    while (pids := host.pids()) != {host.sshd_pid} and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


def rows(results: Path) -> dict[str, dict]:
    return {r["tool"]: r for r in csv.DictReader((results / "latest" / "runs.csv").open())}


def test_the_tools_run_on_one_host_and_load_nginx_on_another(tmp_path, hosts):
    a, _, c = hosts
    tools = ("wrk", "ab", "k6", "jmeter")
    result = harness("run", "--runtime", "host", "--target-host", c.url, "--generator-host", a.url,
                     "--tools", ",".join(tools), "--scenarios", SCENARIO, "--duration", "3",
                     "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    found = rows(tmp_path)
    assert set(found) == set(tools)
    for tool, row in found.items():
        assert row["status"] == "ok", (tool, row["error"])
        requests, served = int(row["requests"]), int(row["server_requests"])
        assert requests > 0 and abs(served - requests) <= 0.01 * requests, (tool, served, requests)
        assert 0 < float(row["rtt_measured_ms"]) < 5 and row["generators"] == "1"
        assert float(row["mem_avg_mb"]) > 0, tool          # sampled by top on the generator host
        assert float(row["target_cpu_pct"]) > 0, tool      # and Nginx by top on the target host
        run_dir = tmp_path / "latest" / row["run_dir"]
        assert (run_dir / "stdout.txt").stat().st_size > 0 and (run_dir / "nginx.log").is_file()
    assert (tmp_path / "latest" / found["jmeter"]["run_dir"] / "jmeter.jtl").is_file()   # a tool's file, copied back
    environment = json.loads((tmp_path / "latest" / "environment.json").read_text())
    assert environment["target_host"]["address"] == c.address and environment["target_host"]["nic"] == c.device
    (generator,) = environment["generator_hosts"]
    assert generator["address"] == a.address and generator["nic"] == a.device and generator["cores"] >= 1
    rtt = environment["rtt_between_hosts"]
    assert rtt["from"] == a.url and 0 < rtt["median_ms"] < 5


def part_requests(results: Path, row: dict) -> list[int]:
    meta = json.loads((results / "latest" / row["run_dir"] / "meta.json").read_text())
    return [part["requests"] for part in meta["parts"]]


def test_two_generators_make_one_merged_row(tmp_path, hosts):
    a, b, c = hosts
    result = harness("run", "--runtime", "host", "--target-host", c.url, "--generator-host", f"{a.url},{b.url}",
                     "--tools", "wrk,oha,ab", "--scenarios", SCENARIO, "--duration", "3",
                     "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    found = rows(tmp_path)
    for tool, row in found.items():
        assert row["status"] == "ok" and row["generators"] == "2", (tool, row["error"])
        parts = part_requests(tmp_path, row)
        assert len(parts) == 2 and all(p > 0 for p in parts)
        assert int(row["requests"]) == sum(parts), tool
        served = int(row["server_requests"])
        assert abs(served - int(row["requests"])) <= 0.01 * served, (tool, served, row["requests"])
        assert "merged from 2 generators" in row["notes"]
        assert float(row["target_cpu_pct"]) > 0                 # sampled once, by the first generator's session
        for index in (1, 2):
            part = json.loads((tmp_path / "latest" / row["run_dir"] / f"generator-{index}" / "meta.json").read_text())
            assert part["row"]["vus"] == 10 and part["row"]["status"] == "ok"
    for tool in ("wrk", "oha"):      # histograms: the percentiles of the union
        assert float(found[tool]["lat_p50_ms"]) <= float(found[tool]["lat_p99_ms"])
        histogram = tmp_path / "latest" / found[tool]["run_dir"] / "generator-1" / "latency-histogram.csv"
        assert histogram.is_file()
    assert not list((tmp_path / "latest").rglob("oha.db"))        # read into the histogram, then removed
    assert found["ab"]["lat_p50_ms"] == "" and "percentiles stay empty" in found["ab"]["notes"]
    assert_rederives((tmp_path / "latest").resolve(), tmp_path)     # the merge, from the parts' raw files


def test_two_generators_shape_with_a_proxy_each(tmp_path, hosts):
    a, b, c = hosts
    result = harness("run", "--runtime", "host", "--target-host", c.url, "--generator-host", f"{a.url},{b.url}",
                     "--tools", "wrk", "--scenarios", "scenarios/shootout.yaml:vu20-rtt10", "--duration", "3",
                     "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    row = rows(tmp_path)["wrk"]
    assert row["status"] == "ok" and row["shaper"] == "toxiproxy" and row["generators"] == "2", row["error"]
    assert 9 <= float(row["rtt_measured_ms"]) <= 13
    assert int(row["requests"]) == sum(part_requests(tmp_path, row))
    for index in (1, 2):     # each generator host had its own proxy, on its loopback
        part = tmp_path / "latest" / row["run_dir"] / f"generator-{index}"
        assert (part / "toxiproxy.log").is_file()
        assert json.loads((part / "meta.json").read_text())["row"]["rtt_measured_ms"] >= 9


def test_a_rate_scenario_splits_its_rate_over_the_generators(tmp_path, hosts):
    a, b, c = hosts
    result = harness("run", "--runtime", "host", "--target-host", c.url, "--generator-host", f"{a.url},{b.url}",
                     "--tools", "oha", "--scenarios", "scenarios/open-model.yaml:rate1000-rtt0.1", "--duration", "3",
                     "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    row = rows(tmp_path)["oha"]
    assert row["status"] == "ok" and row["generators"] == "2" and row["rate_ok"] == "True", row
    assert 950 <= float(row["rate_achieved_rps"]) <= 1050     # 500/s each: the whole rate on each would give 2000


@pytest.mark.parametrize("generators, scenario", [(1, SCENARIO), (2, "scenarios/shootout.yaml:vu20-rtt10")])
def test_sigint_stops_the_tools_on_the_generator_hosts(tmp_path, hosts, generators, scenario):
    *on, c = hosts[:generators] + [hosts[2]]
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--runtime", "host", "--target-host", c.url,
                             "--generator-host", ",".join(h.url for h in on), "--tools", "wrk", "--scenarios", scenario,
                             "--duration", "60", "--results-root", str(tmp_path)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while len(wrk := subprocess.run(["pgrep", "-x", "wrk"], capture_output=True, text=True).stdout.split()) \
            < generators and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(wrk) == generators, "wrk should be running on every generator host"
    where = {subprocess.run(["ip", "netns", "identify", pid], capture_output=True, text=True).stdout.strip() for pid in wrk}
    assert where == {h.netns for h in on}         # it runs on the generator hosts, not here
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert not subprocess.run(["pgrep", "-x", "wrk"], capture_output=True).stdout
    assert not subprocess.run(["pgrep", "-f", "toxiproxy-server"], capture_output=True).stdout   # the proxies too


STALL = "scenarios:\n  - {id: stall, rate_rps: 500, vus: 20, rtt_ms: 0.1, duration_s: 6, stall_ms: 1000, stall_at_s: 2}\n"


@pytest.mark.tools("bombardier")
@pytest.mark.parametrize("generators", [1, 2])
def test_the_stall_test_freezes_nginx_on_its_host(tmp_path, hosts, generators):
    *on, c = hosts[:generators] + [hosts[2]]
    scenarios = tmp_path / "stall.yaml"
    scenarios.write_text(STALL)
    result = harness("run", "--runtime", "host", "--target-host", c.url, "--generator-host", ",".join(h.url for h in on),
                     "--tools", "bombardier", "--scenarios", f"{scenarios}:stall", "--results-root", str(tmp_path))
    row = rows(tmp_path)["bombardier"]
    assert row["status"] == "ok" and row["generators"] == str(generators), \
        row["error"] + result.stdout[-1000:] + result.stderr[-1000:]
    actual = float(row["stall_actual_ms"])              # timed on the target host's clock
    assert 1000 <= actual <= 1100, actual
    assert abs(float(row["lat_max_ms"]) - actual) <= 0.1 * actual, row["lat_max_ms"]   # the tool saw it all
    assert float(row["expected_p99_ms"]) > 900 and "SIGSTOP of" in row["notes"]


@pytest.mark.tools("bombardier")
def test_ctrl_c_during_a_remote_stall_leaves_no_frozen_nginx(tmp_path, hosts):
    a, _, c = hosts
    scenarios = tmp_path / "stall.yaml"
    scenarios.write_text(STALL)
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--runtime", "host", "--target-host", c.url,
                             "--generator-host", a.url, "--tools", "bombardier", "--scenarios", f"{scenarios}:stall",
                             "--results-root", str(tmp_path)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not any(p.info["status"] == psutil.STATUS_STOPPED for p in nginx_there()):   # pids are shared here
        assert time.monotonic() < deadline and proc.poll() is None, "the stall never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert not nginx_there(), "nginx left behind after Ctrl-C during the stall"


def nginx_there() -> list:
    return [p for p in psutil.process_iter(["cmdline", "status"]) if "/tmp/lth-target-" in " ".join(p.info["cmdline"] or [])]


def test_a_hung_tool_on_a_generator_host_is_killed_there(tmp_path, hosts):
    a, _, c = hosts
    faults = str(REPO / "tests" / "fault_tools")
    result = subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "host", "--target-host", c.url,
                             "--generator-host", a.url, "--tools", "fault-hang", "--scenarios", SCENARIO,
                             "--duration", "2", "--grace", "2", "--results-root", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "LTH_EXTRA_TOOLS": faults})
    (row,) = rows(tmp_path).values()
    assert row["status"] == "timeout", result.stdout[-2000:] + result.stderr[-2000:]
    # It ignores SIGTERM and leaves a child: the fixture checks only sshd is left on every host.


def test_clean_state_stops_what_a_killed_harness_left_on_a_generator_host(hosts):
    from harness.registry import discover
    from harness.runtimes.generator import GeneratorHost, clean_generator
    a = hosts[0]
    generator = GeneratorHost(a.ssh())
    generator.start([discover()["wrk"]])                  # as a harness killed with -9 leaves it:
    generator.processes.__exit__(None, None, None)
    a.ssh().run(f"mkdir -p {generator.workdir}/runs/x && cd {generator.workdir}/runs/x && "
                "(sleep 600 >/dev/null 2>&1 </dev/null &)")   # a tool still running in its run's folder
    removed = clean_generator(a.ssh())
    assert any(line.startswith("process ") for line in removed), removed
    assert any(f"folder {generator.workdir}" in line for line in removed), removed
    assert clean_generator(a.ssh()) == []
