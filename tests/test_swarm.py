"""The swarm runtime without Docker (tests/test_swarm_e2e.py runs it for real): the task contract (the real
task_agent.pl, run by this machine's perl, against a real Coordinator on loopback), and the pre-flight's
refusals (a swarm not reachable, a node label missing, ...) through `python -m harness` with a stand-in
`docker` CLI (tests/fake_docker.py) that answers the read-only questions and refuses anything else."""
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import REPO
from harness.errors import HarnessError
from harness.runtimes.swarm_options import check_shares
from harness.runtimes.task import AGENT, Coordinator, Payload
from harness.scenarios import Scenario


# --- the task contract: two real agents, one coordinator ------------------------------------------------------
def tar_of(name: str, text: str) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(text.encode())
        tar.addfile(info, io.BytesIO(text.encode()))
    return data.getvalue()


def agents(coordinator: Coordinator, tmp_path: Path, count: int, delays: list[float]) -> list[subprocess.Popen]:
    """``count`` agents, the i-th connecting ``delays[i]`` s after the first (a task slower to start)."""
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed here (every tool image has it)")
    started = []
    for i in range(count):
        time.sleep(delays[i])
        env = {"PATH": os.environ["PATH"], "LTH_COORDINATOR": coordinator.address, "LTH_TOKEN": coordinator.token,
               "LTH_TASK": f"task{i}", "LTH_NODE": "here", "LTH_TASK_DIR": str(tmp_path / f"task{i}")}
        started.append(subprocess.Popen(["perl", str(AGENT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    return started


def test_two_tasks_start_only_when_both_are_ready_and_send_back_their_folder(tmp_path):
    script = "cat ../repo/tool.txt; echo \"share $1\" > share.txt; sleep 1.2"
    payloads = [Payload(tar_of("tool.txt", "the bundle\n"), ["/bin/sh", "-c", script, "sh", str(i + 1)])
                for i in range(2)]
    coordinator = Coordinator("127.0.0.1", payloads)
    try:
        procs = agents(coordinator, tmp_path, 2, [0.0, 0.6])
        states = [coordinator.wait_started(i, 30) for i in range(2)]
        for state in states:
            assert state.done.wait(30), state
        assert [p.wait(30) for p in procs] == [0, 0]
    finally:
        coordinator.close()
    last_ready = max(s.ready_at for s in states)
    assert states[1].ready_at - states[0].ready_at >= 0.5          # the second task came later...
    assert all(s.started_at >= last_ready for s in states)          # ...and the first one waited for it
    assert coordinator.spread_s() < 0.5 and coordinator.barrier()["start_spread_s"] == coordinator.spread_s()
    for index, state in enumerate(states):
        assert state.exit_code == 0 and state.task == f"task{index}" and state.error is None
        with tarfile.open(fileobj=io.BytesIO(state.files)) as tar:
            files = {m.name.lstrip("./"): tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}
        assert files["stdout.txt"] == "the bundle\n" and files["share.txt"] == f"share {index + 1}\n"
        assert state.samples and state.samples[0].first_frame and state.samples[0].rss_mb > 0


def test_a_stop_ends_the_tool_and_the_task_still_reports(tmp_path):
    coordinator = Coordinator("127.0.0.1", [Payload(tar_of("x", ""), ["/bin/sh", "-c", "sleep 60"])])
    try:
        (proc,) = agents(coordinator, tmp_path, 1, [0.0])
        state = coordinator.wait_started(0, 30)
        began = time.monotonic()
        coordinator.stop(0)
        assert state.done.wait(20) and proc.wait(20) == 0
    finally:
        coordinator.close()
    assert state.exit_code == 128 + 15 and time.monotonic() - began < 10


def test_a_task_that_never_comes_is_an_error_not_a_hang(tmp_path):
    coordinator = Coordinator("127.0.0.1", [Payload(b"", ["true"]), Payload(b"", ["true"])])
    try:
        with pytest.raises(HarnessError, match="did not report ready within 1 s"):
            coordinator.wait_started(0, 1)
    finally:
        coordinator.close()


# --- the shares ------------------------------------------------------------------------------------------------
def test_every_task_needs_a_vu_and_a_request_per_second():
    check_shares(4, [Scenario(id="a", vus=4, rtt_ms=0.1, duration_s=3)])
    with pytest.raises(HarnessError, match="has 3 VUs, fewer than the tasks"):
        check_shares(4, [Scenario(id="a", vus=3, rtt_ms=0.1, duration_s=3)])
    with pytest.raises(HarnessError, match="asks 3 requests/s, less than one per task"):
        check_shares(4, [Scenario(id="a", vus=8, rate_rps=3, rtt_ms=0.1, duration_s=3)])


# --- the pre-flight, against a stand-in docker CLI --------------------------------------------------------------
MANAGER = {"LocalNodeState": "active", "ControlAvailable": True, "NodeID": "n1", "NodeAddr": "198.18.2.2"}
BOTH = {"lth.target": "true", "lth.generator": "true"}
READ_ONLY = ("version", "compose", "info", "node ls", "node inspect", "network inspect", "network ls")


def stand_in(tmp_path: Path) -> Path:
    """A folder whose `docker` is tests/fake_docker.py."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f"#!/bin/sh\nexec {sys.executable} {REPO / 'tests' / 'fake_docker.py'} \"$@\"\n")
    (bin_dir / "docker").chmod(0o755)
    return bin_dir


def refused(tmp_path: Path, state: dict, *extra: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    bin_dir, log = stand_in(tmp_path), tmp_path / "docker.log"
    (tmp_path / "s.yaml").write_text("scenarios:\n  - {id: s, vus: 4, rtt_ms: 0.1, duration_s: 3}\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_DOCKER_STATE": json.dumps(state),
           "FAKE_DOCKER_LOG": str(log), "LTH_LOCK_WAIT_S": "0"}
    result = subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "swarm", "--generators", "2",
                             "--tools", "wrk", "--scenarios", str(tmp_path / "s.yaml"),
                             "--results-root", str(tmp_path / "results"), *extra],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    return result, log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("state, extra, fragment", [
    ({"down": True}, (), "no Docker daemon answers"),
    ({"swarm": {"LocalNodeState": "inactive"}}, (), "this Docker engine is in no swarm: pass --swarm-init"),
    ({"swarm": {"LocalNodeState": "pending"}}, ("--swarm-init",), "the swarm is not reachable from this engine "
                                                                   "(its state: pending)"),
    ({"swarm": {**MANAGER, "ControlAvailable": False}}, (), "this engine is a swarm worker: run the harness on a manager"),
    ({"swarm": MANAGER, "nodes": {"n1": {"labels": {"lth.generator": "true"}}},
      "networks": {"ingress": ["198.18.128.0/24"]}}, (),
     "no ready swarm node has the label lth.target=true for the target: docker node update --label-add lth.target=true"),
    ({"swarm": MANAGER, "nodes": {"n1": {"labels": BOTH}}, "networks": {"ingress": ["10.0.0.0/24"]}}, (),
     "the swarm's ingress network uses 10.0.0.0/24, outside 198.18.0.0/15"),
    ({"swarm": {"LocalNodeState": "error"}}, (), "the swarm is not reachable from this engine (its state: error)"),
    ({"swarm": MANAGER, "nodes": {"n1": {"labels": {"lth.target": "true"}}},
      "networks": {"ingress": ["198.18.128.0/24"]}}, (),
     "no ready swarm node has the label lth.generator=true for the generators: docker node update --label-add "
     "lth.generator=true"),
], ids=["engine down", "no swarm", "swarm not reachable", "a worker", "label missing", "ingress outside 198.18",
        "swarm in error", "generator label missing"])
def test_a_swarm_that_cannot_run_is_one_line_exit_2_and_changes_nothing(tmp_path, state, extra, fragment):
    result, calls = refused(tmp_path, state, *extra)
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and fragment in lines[0], result.stdout + result.stderr
    assert calls and all(" ".join(c.split()[:2]).startswith(READ_ONLY) for c in calls), calls   # nothing made
    assert not list((tmp_path / "results").glob("*"))                                          # no results folder


def test_a_swarm_ready_to_run_has_no_problem(tmp_path, monkeypatch):
    """The control: the same stand-in, answering a labelled manager in 198.18, gives the pre-flight nothing to say."""
    from harness.runtimes.swarm import swarm_problems
    from harness.runtimes.swarm_options import SwarmOptions
    bin_dir = stand_in(tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DOCKER_LOG", str(tmp_path / "docker.log"))
    monkeypatch.setenv("FAKE_DOCKER_STATE", json.dumps({"swarm": MANAGER, "nodes": {"n1": {"labels": BOTH}},
                                                        "networks": {"ingress": ["198.18.128.0/24"]}}))
    assert swarm_problems(SwarmOptions(2)) == []
