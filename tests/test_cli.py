"""Bad input: one line on stderr naming the value and what is allowed, exit status 2."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MAKE_ENVIRONMENT, REPO, harness

CASES = {
    "unknown tool": (["--tools", "wrk,nosuchtool"], "unknown tool nosuchtool; available:"),
    "unknown scenario id": (["--scenarios", "scenarios/quick.yaml:vu20-rtt0.1,vu9-rtt9"], "unknown scenario id vu9-rtt9"),
    "missing scenario file": (["--scenarios", "scenarios/nope.yaml"], "scenarios/nope.yaml does not exist"),
    "duration not a number": (["--duration", "ten"], "argument --duration: must be a duration such as 300, 300s, 5m or 1h, got 'ten'"),
    "duration zero": (["--duration", "0"], "argument --duration: must be > 0"),
    "unknown runtime": (["--runtime", "vm"], "invalid choice: 'vm'"),
    "malformed rate scenario": (["--scenarios", "tests/fixtures/bad-rate.yaml"],
                                "bad-rate.yaml: scenarios[0].rate_rps: Input should be a valid integer"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_one_clear_line(case, tmp_path):
    args, expected = CASES[case]
    result = harness("run", "--results-root", str(tmp_path), *args, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert not any(tmp_path.iterdir()), "bad input must not create a results folder"


def test_build_images_of_an_unknown_tool_is_one_clear_line():
    result = harness("build-images", "wrk,nosuchtool", timeout=60)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "unknown tool nosuchtool; available:" in line


@pytest.mark.e2e
@pytest.mark.parametrize("command", [
    ["run", "--runtime", "docker", "--tools", "wrk", "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1"],
    ["build-images", "wrk"]], ids=["run", "build-images"])
def test_docker_daemon_down_is_one_clear_line(command, tmp_path):
    result = subprocess.run([sys.executable, "-m", "harness", *command] +
                            (["--results-root", str(tmp_path)] if command[0] == "run" else []),
                            cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "no Docker daemon answers" in line and "make deps" in line


@pytest.mark.e2e
def test_results_folder_not_writable_is_one_clear_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = harness("run", "--runtime", "host", "--tools", "wrk", "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1",
                     "--results-root", str(blocker / "results"), timeout=60)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "is not writable" in line and "--results-root" in line


@pytest.mark.e2e
def test_resuming_something_that_is_not_a_results_folder(tmp_path):
    result = harness("run", "--runtime", "host", "--tools", "wrk", "--resume", str(tmp_path), timeout=60)
    assert result.returncode == 2 and "not a results folder" in result.stderr


def test_list_tools_shows_each_adapter():
    result = harness("list-tools", timeout=60)
    assert result.returncode == 0
    tools, matrix, *_ = result.stdout.split("\n\n")
    rows = {line.split()[0]: line for line in tools.splitlines()}
    assert {"wrk", "ab"} <= set(rows)
    assert " closed " in rows["wrk"] and "closed model only" in rows["wrk"]     # wrk cannot pace a rate
    assert " open " in rows["oha"]                                              # oha can (-q)
    header, *cells = matrix.split("why not:")[0].splitlines()
    assert header.split()[:3] == ["capabilities", "open", "model"] and "keep-alive off" in header and "TLS" in header
    assert {line.split()[0] for line in cells} == set(rows) - {"tool"}            # every tool in the matrix
    assert "wrk, open model: closed model only" in result.stdout                 # a "no" says why
    assert "targets (targets/<id>/" in result.stdout and "haproxy" in result.stdout


@pytest.mark.e2e
def test_a_held_lock_is_one_line_naming_its_holder_and_no_report(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from harness.store.lock import acquire; "
                               "lock = acquire(); print('held', flush=True); time.sleep(120)"],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        env = {k: v for k, v in os.environ.items() if k not in MAKE_ENVIRONMENT}
        result = subprocess.run(["make", "bench-quick", "TOOLS=wrk", "RUNTIME=host", f"RESULTS_ROOT={tmp_path}"],
                                cwd=REPO, capture_output=True, text=True, timeout=600,
                                env={**env, "LTH_LOCK_WAIT_S": "0"})
    finally:
        holder.kill()
        holder.wait()
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error")]
    assert len(errors) == 1, result.stdout + result.stderr
    assert f"pid {holder.pid}" in errors[0] and "acquire()" in errors[0] and "since 20" in errors[0]
    assert "report:" not in result.stdout and not any(tmp_path.iterdir())
    assert "Error 2" in result.stderr      # make's own line: the harness's exit status 2


def test_folders_are_made_absolute_where_they_enter(tmp_path, monkeypatch):
    from harness.cli import build_parser
    from harness.suite.runner import Plan
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["run", "--results-root", "results", "--resume", "results/x"])
    assert args.results_root == tmp_path / "results" and args.resume == tmp_path / "results" / "x"
    # Tools in containers and on other hosts have another working directory: a relative folder is a bug.
    with pytest.raises(ValueError, match="must be absolute"):
        Plan(runtime="host", tools=[], scenarios=[], results_root=Path("results"))
