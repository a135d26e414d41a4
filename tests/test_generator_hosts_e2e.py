"""Generator and target on two other machines (--generator-host, --target-host): three test hosts
on one LAN (harness/lab.py lab: sshd in namespaces behind a bridge). The tools run in the
generator hosts' namespaces, started over ssh; their files come back here. Nothing may remain on
any side afterwards."""
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from conftest import REPO, LabRun, assert_rederives, require_root_tools, rows
from harness.lab import lab, missing
from harness.runtimes.ssh import SSH_CONFIG_ENV
from harness.store import hdr

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"
TOOLS = ("wrk", "ab", "k6", "jmeter", "oha")
pytestmark = [pytest.mark.e2e, pytest.mark.tools(*TOOLS)]


@pytest.fixture(scope="module")
def lab_hosts():
    """Generators A and B, target C: made once for the module (tests/test_lab.py proves a lab comes and goes)."""
    require_root_tools("ip", "ssh", "wrk")
    if reason := missing():
        pytest.skip(reason)
    with lab(3) as made, pytest.MonkeyPatch.context() as patch:
        patch.setenv(SSH_CONFIG_ENV, str(made[0].ssh_config))
        yield made


@pytest.fixture
def hosts(lab_hosts):
    """The module's lab, checked after each test: only its sshd runs on every host, nothing in /tmp."""
    yield lab_hosts
    for host in lab_hosts:
        assert settled(host) == {host.sshd_pid}, host.url     # only the test's sshd runs there
    assert not list(Path("/tmp").glob("lth-generator-*")) and not list(Path("/tmp").glob("lth-target-*"))


def settled(host, timeout_s: float = 5) -> set[int]:
    deadline = time.monotonic() + timeout_s
    while (pids := host.pids()) != {host.sshd_pid} and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


def run_argv(generators: list, target, results: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "harness", "run", "--runtime", "host", "--target-host", target.url,
            "--generator-host", ",".join(h.url for h in generators), "--results-root", str(results), *args]


def test_the_tools_run_on_one_host_and_load_nginx_on_another(tmp_path, hosts):
    a, _, c = hosts
    tools = ("wrk", "ab", "k6", "jmeter")
    result = subprocess.run(run_argv([a], c, tmp_path, "--tools", ",".join(tools), "--scenarios", SCENARIO,
                                     "--duration", "3"), cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    found = {tool: row for (_, tool), row in rows(tmp_path).items()}
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


# --- one run with two generators, read by the merge, shaping, rate and stall tests ---------------------------
# wrk and ab are closed-model tools: the rate scenarios are oha's alone (their rows: unsupported, not run).
TWO_GENERATORS = """scenarios:
  - {id: closed, vus: 20, rtt_ms: 0.1, duration_s: 3}
  - {id: rate-rtt10, rate_rps: 1000, vus: 50, rtt_ms: 10, duration_s: 3}
  - {id: stall, rate_rps: 500, vus: 20, rtt_ms: 0.1, duration_s: 6, stall_ms: 1000, stall_at_s: 3}
"""


@pytest.fixture(scope="module")
def two_generators(lab_hosts, tmp_path_factory) -> LabRun:
    """A and B load C: a closed-model scenario (wrk, oha, ab), a shaped rate scenario and a stall (oha)."""
    a, b, c = lab_hosts
    results = tmp_path_factory.mktemp("two-generators")
    (results / "lab.yaml").write_text(TWO_GENERATORS)
    result = subprocess.run(run_argv([a, b], c, results, "--tools", "wrk,oha,ab", "--scenarios",
                                     str(results / "lab.yaml")), cwd=REPO, capture_output=True, text=True, timeout=900)
    return LabRun.of(results, result)


def test_two_generators_make_one_merged_row(two_generators, hosts):
    assert two_generators.returncode == 0, two_generators.output
    results, latest = two_generators.results, two_generators.results / "latest"
    found = {tool: two_generators.row("closed", tool) for tool in ("wrk", "oha", "ab")}
    for tool, row in found.items():
        assert row["status"] == "ok" and row["generators"] == "2", (tool, row["error"])
        parts = two_generators.part_requests(row)
        assert len(parts) == 2 and all(p > 0 for p in parts)
        assert int(row["requests"]) == sum(parts), tool
        served = int(row["server_requests"])
        assert abs(served - int(row["requests"])) <= 0.01 * served, (tool, served, row["requests"])
        assert "merged from 2 generators" in row["notes"]
        assert float(row["target_cpu_pct"]) > 0                 # sampled once, by the first generator's session
        for index in (1, 2):
            part = json.loads((latest / row["run_dir"] / f"generator-{index}" / "meta.json").read_text())
            assert part["row"]["vus"] == 10 and part["row"]["status"] == "ok"
    for tool in ("wrk", "oha"):      # HdrHistogram logs: the percentiles of the union, read by the library too
        assert float(found[tool]["lat_p50_ms"]) <= float(found[tool]["lat_p99_ms"])
        logs = [hdr.read_log(latest / found[tool]["run_dir"] / f"generator-{i}" / "latency.hlog") for i in (1, 2)]
        logs[0].add(logs[1])
        assert logs[0].get_total_count() == int(found[tool]["requests"]), tool
        assert logs[0].get_value_at_percentile(50) / hdr.NS_PER_MS == pytest.approx(
            float(found[tool]["lat_p50_ms"]), rel=2e-3), tool      # 3 digits; the library rounds its rank
    assert not list(latest.rglob("oha.db"))        # read into the histogram, then removed
    assert found["ab"]["lat_p50_ms"] == "" and "percentiles stay empty" in found["ab"]["notes"]
    assert_rederives(latest.resolve(), results)     # the merge, from the parts' raw files (every scenario's)


def test_two_generators_shape_with_a_proxy_each(two_generators, hosts):
    row = two_generators.row("rate-rtt10", "oha")
    assert row["status"] == "ok" and row["shaper"] == "toxiproxy" and row["generators"] == "2", row["error"]
    assert 9 <= float(row["rtt_measured_ms"]) <= 13
    assert int(row["requests"]) == sum(two_generators.part_requests(row))
    for index in (1, 2):     # each generator host had its own proxy, on its loopback
        part = two_generators.results / "latest" / row["run_dir"] / f"generator-{index}"
        assert (part / "toxiproxy.log").is_file()
        assert json.loads((part / "meta.json").read_text())["row"]["rtt_measured_ms"] >= 9


def test_a_rate_scenario_splits_its_rate_over_the_generators(two_generators, hosts):
    row = two_generators.row("rate-rtt10", "oha")
    assert row["status"] == "ok" and row["generators"] == "2" and row["rate_ok"] == "True", row
    assert 950 <= float(row["rate_achieved_rps"]) <= 1050     # 500/s each: the whole rate on each would give 2000


# --- one generator: a stall, then Ctrl-C during the next scenario's stall ------------------------------------
STALLS = """scenarios:
  - {id: stall, rate_rps: 500, vus: 20, rtt_ms: 0.1, duration_s: 6, stall_ms: 1000, stall_at_s: 3}
  - {id: held, rate_rps: 500, vus: 20, rtt_ms: 0.1, duration_s: 60, stall_ms: 1000, stall_at_s: 3}
"""
# The held stall is short: the script holding it on the target host ends only when it has sent SIGCONT
# (stall.py), Ctrl-C or not.


@dataclass
class Interrupted(LabRun):
    tool_netns: set[str]          # where bombardier ran when Ctrl-C came
    frozen: bool                  # Nginx was stopped (the held stall) when Ctrl-C came
    tools_left: bool
    nginx_left: list


@pytest.fixture(scope="module")
def one_generator_interrupted(lab_hosts, tmp_path_factory) -> Interrupted:
    """A loads C with bombardier: the stall scenario runs to its end, then Ctrl-C while the next one's
    stall holds Nginx stopped. An interrupt: no shared run can have it."""
    a, _, c = lab_hosts
    results = tmp_path_factory.mktemp("one-generator")
    (results / "stalls.yaml").write_text(STALLS)
    proc = subprocess.Popen(run_argv([a], c, results, "--tools", "bombardier", "--scenarios", str(results / "stalls.yaml")),
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    started = (waited(lambda: ("stall", "bombardier") in rows(results), proc)
               and waited(lambda: bool(pids("bombardier")), proc))
    where = {netns(pid) for pid in pids("bombardier")}
    frozen = started and waited(lambda: any(p.info["status"] == psutil.STATUS_STOPPED for p in nginx_there()), proc)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    return Interrupted(results, proc.returncode, output[-3000:], where, frozen, bool(pids("bombardier")), nginx_there())


def waited(condition: Callable[[], bool], proc: subprocess.Popen, timeout_s: float = 180) -> bool:
    """Whether ``condition`` came true while the harness still ran (a bound, not a timing)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def pids(name: str) -> list[str]:
    return subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split()


def netns(pid: str) -> str:
    return subprocess.run(["ip", "netns", "identify", pid], capture_output=True, text=True).stdout.strip()


def nginx_there() -> list:
    return [p for p in psutil.process_iter(["cmdline", "status"]) if "/tmp/lth-target-" in " ".join(p.info["cmdline"] or [])]


@pytest.mark.tools("bombardier")
@pytest.mark.parametrize("generators, run, tool", [(1, "one_generator_interrupted", "bombardier"),
                                                   (2, "two_generators", "oha")], ids=["1", "2"])
def test_the_stall_test_freezes_nginx_on_its_host(request, hosts, generators, run, tool):
    found: LabRun = request.getfixturevalue(run)
    row = found.row("stall", tool)
    assert row["status"] == "ok" and row["generators"] == str(generators), row["error"] + found.output
    actual = float(row["stall_actual_ms"])              # timed on the target host's clock
    assert 1000 <= actual <= 1100, actual
    assert abs(float(row["lat_max_ms"]) - actual) <= 0.1 * actual, row["lat_max_ms"]   # the tool saw it all
    assert float(row["expected_p99_ms"]) > 900 and "SIGSTOP of" in row["notes"]


@pytest.mark.tools("bombardier")
def test_sigint_stops_the_tool_on_its_generator_host(one_generator_interrupted, hosts):
    run = one_generator_interrupted
    assert run.tool_netns == {hosts[0].netns}, run.output     # it ran on the generator host, not here
    assert run.returncode == 130, run.output
    assert not run.tools_left


@pytest.mark.tools("bombardier")
def test_ctrl_c_during_a_remote_stall_leaves_no_frozen_nginx(one_generator_interrupted, hosts):
    run = one_generator_interrupted
    assert run.frozen, "the held stall never started: " + run.output
    assert run.returncode == 130, run.output
    assert not run.nginx_left, "nginx left behind after Ctrl-C during the stall"


def test_sigint_stops_the_tools_and_their_proxies_on_two_generator_hosts(tmp_path, hosts):
    """Its own run: Ctrl-C with two generators (tools started together, a Toxiproxy beside each) takes
    another path than one generator's."""
    a, b, c = hosts
    proc = subprocess.Popen(run_argv([a, b], c, tmp_path, "--tools", "wrk", "--scenarios",
                                     "scenarios/shootout.yaml:vu20-rtt10", "--duration", "60"),
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    waited(lambda: len(pids("wrk")) >= 2, proc)
    assert {netns(pid) for pid in pids("wrk")} == {a.netns, b.netns}, "wrk should be running on both generator hosts"
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert not pids("wrk")
    assert not subprocess.run(["pgrep", "-f", "toxiproxy-server"], capture_output=True).stdout   # the proxies too


def test_a_hung_tool_on_a_generator_host_is_killed_there(tmp_path, hosts):
    """Its own run: a fault (a tool that ignores SIGTERM and leaves a child)."""
    a, _, c = hosts
    faults = str(REPO / "tests" / "fault_tools")
    result = subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "host", "--target-host", c.url,
                             "--generator-host", a.url, "--tools", "fault-hang", "--scenarios", SCENARIO,
                             "--duration", "1", "--grace", "2", "--results-root", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "LTH_EXTRA_TOOLS": faults})
    (row,) = rows(tmp_path).values()
    assert row["status"] == "timeout", result.stdout[-2000:] + result.stderr[-2000:]
    # It ignores SIGTERM and leaves a child: the fixture checks only sshd is left on every host.


def test_clean_state_stops_what_a_killed_harness_left_on_a_generator_host(hosts):
    from harness.runtimes.generator import GeneratorHost, clean_generator
    from harness.tools.registry import discover
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
