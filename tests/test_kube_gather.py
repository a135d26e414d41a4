"""The Kubernetes route's harness side without a cluster (harness/suite/kube_results.py): the rendering's
commands.json served by a real Coordinator on loopback to two real task_agent.pl processes (as the Indexed Job's
pods would run them, LTH_LOG_RESULTS=1), their stdout kept as `kubectl logs` would give it, then gathered into a
results folder that harness/row derives into one merged row and `rederive` derives again.

No swarm or Kubernetes part folder was ever captured here, so the tools' output is the real one of
tests/fixtures/multigen/ (the two parts of a real two-generator wrk run, vu20-rtt0.1, 10 VUs each), which each
task prints with `cat` in place of running wrk (no load run in the unit tier). The two stub_status pages are
written by the test: the server's count they give is the check's input, not a measurement."""
import binascii
import csv
import json
import os
import shutil
import socket
import subprocess
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES
from harness.errors import HarnessError
from harness.runtimes.task import AGENT
from harness.runtimes.task_results import read_logs
from harness.suite import kubernetes
from harness.suite.kube_results import RenderedRun, gather, serve, server_requests
from harness.suite.rederive import rederive
from harness.tools.registry import discover

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"
PARTS = [FIXTURES / "multigen" / f"wrk-generator-{i}.stdout" for i in (1, 2)]
MERGED_REQUESTS = 77421          # 36,758 + 40,663: the two captured outputs (tests/test_multigen.py)


def stub_status(path: Path, requests: int) -> Path:
    path.write_text(f"Active connections: 1 \nserver accepts handled requests\n 3 3 {requests} \n"
                    "Reading: 0 Writing: 1 Waiting: 0 \n")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pod(address: str, token: str, index: int, tmp_path: Path) -> subprocess.Popen:
    """One Job pod's agent, with the environment the rendered Job gives it."""
    env = {"PATH": os.environ["PATH"], "LTH_COORDINATOR": address, "LTH_TOKEN": token, "LTH_TASK": str(index),
           "LTH_NODE": f"node-{index}", "LTH_LOG_RESULTS": "1", "LTH_TASK_DIR": str(tmp_path / f"pod{index}")}
    return subprocess.Popen(["perl", str(AGENT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture
def logged_run(tmp_path):
    """A rendering of 2 generators, served on loopback to 2 agents that print the captured wrk outputs; returns
    the rendering's folder, the rendering (its commands made `cat`) and the two pods' logs."""
    if shutil.which("perl") is None:
        pytest.skip("perl is not installed here (every tool image has it)")
    folder = tmp_path / "k8s"
    assert kubernetes.main(["--tool", "wrk", "--scenario", SCENARIO, "--generators", "2",
                            "--coordinator", "127.0.0.1:7000", "--out", str(folder)]) == 0
    rendered = RenderedRun.load(folder)
    assert [share["vus"] for share in rendered.shares] == [10, 10]
    rendered = replace(rendered, commands=[["/bin/sh", "-c", 'cat "$1"; sleep 1.2', "sh", str(p)] for p in PARTS])
    port, failures = free_port(), []

    def coordinate() -> None:
        try:
            serve(rendered, folder, "127.0.0.1", port, wait_s=30)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    server = threading.Thread(target=coordinate)
    server.start()
    pods = [pod(f"127.0.0.1:{port}", rendered.token, i, tmp_path) for i in range(2)]
    logs = []
    for index, proc in enumerate(pods):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        logs.append(tmp_path / f"task-{index}.log")
        logs[-1].write_bytes(b"kubectl: some line of the pod's own\n" + out)
    server.join(60)
    assert not failures and not server.is_alive(), failures
    return folder, rendered, logs


def test_the_pods_logs_gather_into_one_merged_row_with_the_servers_count(logged_run, tmp_path):
    folder, rendered, logs = logged_run
    served = server_requests(stub_status(tmp_path / "before.txt", 10),
                             stub_status(tmp_path / "after.txt", 10 + MERGED_REQUESTS + 1))
    barrier = json.loads((folder / "barrier.json").read_text())
    out = tmp_path / "results"
    row = gather(rendered, logs, out, served, barrier, tool_version="4.1.0")
    assert row.status == "ok", row.error
    assert row.generators == 2 and row.requests == MERGED_REQUESTS == row.server_requests
    assert row.runtime == "kubernetes" and row.lat_p99_ms is not None        # merged from the parts' HDR logs
    run_dir = out / "vu20-rtt0.1" / "wrk"
    for index, part in enumerate(PARTS, start=1):
        part_dir = run_dir / f"generator-{index}"
        assert (part_dir / "stdout.txt").read_text() == part.read_text()      # the tool's output as it printed it
        assert {"latency.hlog", "samples.csv", "execution.json", "task.json", "meta.json"} <= {
            p.name for p in part_dir.iterdir()}
        task = json.loads((part_dir / "task.json").read_text())
        assert task["task"] == str(task["index"]) or task["node"].startswith("node-")
        assert task["barrier"]["start_spread_s"] is not None and task["barrier"]["task"]["started_at"]
    meta = json.loads((run_dir / "meta.json").read_text())
    assert [p["requests"] for p in meta["parts"]] == [36758, 40663]
    assert "merged HdrHistogram logs" in meta["metric_source"]
    with (out / "runs.csv").open() as handle:
        (stored,) = list(csv.DictReader(handle))
    assert stored["requests"] == str(MERGED_REQUESTS) and stored["run_dir"] == "vu20-rtt0.1/wrk"
    rows, _ = rederive(out, discover())                                       # `lth rederive` gives it again
    assert len(rows) == 1 and rows[0].requests == MERGED_REQUESTS and rows[0].lat_p99_ms == row.lat_p99_ms


def test_the_gather_command_says_the_merged_and_the_servers_count(logged_run, tmp_path, capsys):
    folder, _, logs = logged_run
    before = stub_status(tmp_path / "before.txt", 10)
    after = stub_status(tmp_path / "after.txt", 10 + MERGED_REQUESTS + 1)
    capsys.readouterr()
    assert kubernetes.main(["gather", "--from", str(folder), "--logs", *map(str, logs), "--stub-status-before",
                            str(before), "--stub-status-after", str(after), "--out", str(tmp_path / "out")]) == 0
    said = capsys.readouterr().out.strip().splitlines()
    assert said[-1].endswith("wrk vu20-rtt0.1, 2 generators: ok, 77,421 requests merged, server counted 77,421")
    assert json.loads((tmp_path / "out" / "environment.json").read_text())["barrier"]["tasks"] == 2


def test_a_missing_or_cut_log_is_refused(logged_run, tmp_path):
    _, rendered, logs = logged_run
    with pytest.raises(HarnessError, match=r"task\(s\) \[[01]\] missing"):
        read_logs([logs[0]])
    text = logs[1].read_text()
    cut = tmp_path / "cut.log"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(HarnessError, match="has no end"):
        read_logs([logs[0], cut])
    with pytest.raises(HarnessError, match="in two logs"):
        read_logs([logs[0], logs[0], logs[1]])


def test_a_block_whose_files_are_not_the_agents_leaves_no_folder(logged_run, tmp_path):
    _, rendered, logs = logged_run
    text = logs[1].read_text()
    head, rest = text.split("files ", 1)
    size, _ = rest.split("\n", 1)
    garbage = b"not a tar.gz" + b"." * (int(size) - 12)
    forged = tmp_path / "forged.log"
    forged.write_text(f"{head}files {size}\n" + "".join(
        binascii.b2a_uu(garbage[i:i + 45]).decode() for i in range(0, len(garbage), 45))
        + f"lth-task-results-end 1\n")
    with pytest.raises(HarnessError, match="no tar.gz the agent wrote"):
        gather(rendered, [logs[0], forged], tmp_path / "out", None)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))


def test_serve_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert kubernetes.main(["serve", "--from", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a rendering of this harness" in err[0]
    folder = tmp_path / "k8s"
    assert kubernetes.main(["--tool", "wrk", "--scenario", SCENARIO, "--generators", "2",
                            "--coordinator", "127.0.0.1:7000", "--out", str(folder)]) == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        capsys.readouterr()
        assert kubernetes.main(["serve", "--from", str(folder), "--bind", "127.0.0.1",
                                "--port", str(taken.getsockname()[1])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the coordinator cannot listen on 127.0.0.1:" in err[0], err


@pytest.mark.parametrize("extra, fragment", [
    (["--logs", "{tmp}/nowhere.log"], "no such file"),
    (["--logs", "{tmp}/empty.log"], "no `lth-task-results` block"),
    (["--stub-status-before", "{tmp}/empty.log"], "go together"),
])
def test_gather_bad_input_is_one_line_exit_2_and_no_folder(tmp_path, capsys, extra, fragment):
    folder = tmp_path / "k8s"
    assert kubernetes.main(["--tool", "wrk", "--scenario", SCENARIO, "--generators", "2",
                            "--coordinator", "127.0.0.1:7000", "--out", str(folder)]) == 0
    (tmp_path / "empty.log").write_text("")
    capsys.readouterr()
    args = {"--from": str(folder), "--logs": str(tmp_path / "empty.log"), "--out": str(tmp_path / "out")}
    args.update(dict(zip(extra[::2], [e.format(tmp=tmp_path) for e in extra[1::2]])))
    assert kubernetes.main(["gather", *[w for pair in args.items() for w in pair]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0] and not (tmp_path / "out").exists(), err
