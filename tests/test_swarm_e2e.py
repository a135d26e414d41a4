"""The swarm runtime for real (harness/runtimes/swarm.py): this machine's Docker engine made a single-node
swarm by the harness (--swarm-init), the target a service, each run's generators a replicated job of 2 tasks
of the tool's image released by the coordinator's barrier, one merged row per run counted by Nginx, and the
engine left as it was found, Ctrl-C included. Cost: one suite of wrk and k6, 3 s each, about 30 s; a refused
run, ~3 s; an interrupted one, ~15 s."""
import ipaddress
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, harness, require_root_tools, rows
from harness.runtimes.docker import docker_available
from harness.runtimes.task import START_WINDOW_S, TASK_RECORD

pytestmark = [pytest.mark.e2e, pytest.mark.tools("wrk", "k6")]
SCENARIOS = "scenarios:\n  - {id: swarm, vus: 4, rtt_ms: 0.1, duration_s: 3}\n"


def lines(*argv: str) -> list[str]:
    return [line for line in subprocess.run(argv, capture_output=True, text=True).stdout.splitlines() if line]


def swarm_state() -> dict:
    """What a swarm run may change on the engine: its swarm membership and the swarm's networks and services."""
    state = lines("docker", "info", "--format", "{{.Swarm.LocalNodeState}}")
    networks = [n for n in lines("docker", "network", "ls", "--format", "{{.Name}} {{.Driver}}")
                if n.startswith(("docker_gwbridge ", "ingress ", "lth-swarm")) or n.endswith(" overlay")]
    return {"swarm": state, "networks": sorted(networks),
            "containers": lines("docker", "ps", "-aq", "--filter", "label=com.docker.swarm.service.name")}


@pytest.fixture(scope="module")
def swarm_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, dict, dict]:
    require_root_tools("docker")
    if docker_available() is None:
        pytest.skip("no Docker daemon answers: run `make deps`")
    before = swarm_state()
    if before["swarm"] != ["inactive"]:
        pytest.skip(f"this engine is in a swarm already ({before['swarm']}): the test makes and leaves its own")
    results = tmp_path_factory.mktemp("swarm")
    (results / "swarm.yaml").write_text(SCENARIOS)
    result = harness("run", "--runtime", "swarm", "--swarm-init", "--generators", "2", "--tools", "wrk,k6",
                     "--scenarios", str(results / "swarm.yaml"), "--results-root", str(results))
    return results, result, before, swarm_state()


def test_each_run_is_one_merged_row_counted_by_nginx(swarm_run):
    results, result, _, _ = swarm_run
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    found = {tool: row for (_, tool), row in rows(results).items()}
    assert set(found) == {"wrk", "k6"}
    for tool, row in found.items():
        assert row["status"] == "ok" and row["generators"] == "2" and row["runtime"] == "swarm", (tool, row["error"])
        meta = json.loads((results / "latest" / row["run_dir"] / "meta.json").read_text())
        parts = [part["requests"] for part in meta["parts"]]
        assert [part["vus"] for part in meta["parts"]] == [2, 2] and all(parts), (tool, meta["parts"])
        requests, served = int(row["requests"]), int(row["server_requests"])
        assert requests == sum(parts), (tool, parts, requests)
        assert abs(served - requests) <= 0.01 * served, (tool, served, requests)
        assert float(row["mem_avg_mb"]) > 0, tool      # the tasks' own samples
        for index in (1, 2):                             # the per-task rows, kept beside the merged one
            part = json.loads((results / "latest" / row["run_dir"] / f"generator-{index}" / "meta.json").read_text())
            assert part["row"]["status"] == "ok" and part["row"]["vus"] == 2


def test_the_tasks_start_together_past_the_barrier(swarm_run):
    results, result, _, _ = swarm_run
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    for (_, tool), row in rows(results).items():
        tasks = [json.loads((results / "latest" / row["run_dir"] / f"generator-{i}" / TASK_RECORD).read_text())
                 for i in (1, 2)]
        assert len({t["task"] for t in tasks}) == 2 and [t["index"] for t in tasks] == [0, 1], tool
        last_ready = max(t["ready_at"] for t in tasks)
        starts = [t["started_at"] for t in tasks]
        assert all(start >= last_ready for start in starts), (tool, tasks)    # none began before all were ready
        assert max(starts) - min(starts) <= START_WINDOW_S, (tool, starts)
        assert all(t["exit_code"] == 0 for t in tasks), (tool, tasks)


def test_every_swarm_network_is_in_198_18_and_the_engine_is_left_as_found(swarm_run):
    results, result, before, after = swarm_run
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    facts = json.loads((results / "latest" / "environment.json").read_text())["swarm"]
    assert facts["swarm_initialised_by_harness"] and set(facts["subnets"]) == {"ingress", "docker_gwbridge",
                                                                                facts["network"]}
    for name, subnets in facts["subnets"].items():       # as `docker network inspect` gave them during the suite
        assert subnets and all(ipaddress.ip_network(s).subnet_of(ipaddress.ip_network("198.18.0.0/15"))
                               for s in subnets), (name, subnets)
    assert after == before


def test_no_swarm_and_no_swarm_init_is_one_line_and_exit_2(tmp_path):
    require_root_tools("docker")
    if docker_available() is None or swarm_state()["swarm"] != ["inactive"]:
        pytest.skip("needs a Docker engine in no swarm")
    (tmp_path / "swarm.yaml").write_text(SCENARIOS)
    result = harness("run", "--runtime", "swarm", "--generators", "2", "--tools", "wrk",
                     "--scenarios", str(tmp_path / "swarm.yaml"), "--results-root", str(tmp_path / "results"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "in no swarm: pass --swarm-init" in result.stderr
    assert not list((tmp_path / "results").glob("*")) and swarm_state()["swarm"] == ["inactive"]   # no results folder


def test_ctrl_c_during_a_run_leaves_the_engine_as_found(tmp_path):
    """Its own suite: an interrupt while the tasks load the target (about 15 s)."""
    require_root_tools("docker")
    if docker_available() is None or swarm_state()["swarm"] != ["inactive"]:
        pytest.skip("needs a Docker engine in no swarm")
    before = swarm_state()
    (tmp_path / "long.yaml").write_text("scenarios:\n  - {id: long, vus: 4, rtt_ms: 0.1, duration_s: 60}\n")
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--runtime", "swarm", "--swarm-init",
                             "--generators", "2", "--tools", "wrk", "--scenarios", str(tmp_path / "long.yaml"),
                             "--results-root", str(tmp_path / "results")], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while len(lines("docker", "ps", "-q", "--filter", "label=lth=swarm-generator")) < 2 and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.3)
    loading = len(lines("docker", "ps", "-q", "--filter", "label=lth=swarm-generator")) == 2
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=180)
    assert loading, output[-2000:]
    assert proc.returncode == 130, output[-2000:]
    assert swarm_state() == before
