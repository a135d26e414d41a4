"""Faults, interrupts and resume with real processes: the suite survives and leaves nothing behind."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, harness, leftovers, require_root_tools
from harness.runtimes.docker import docker_available

pytestmark = pytest.mark.e2e
FAULT_TOOLS = str(Path(__file__).resolve().parent / "fault_tools")
QUICK = "scenarios/quick.yaml:vu20-rtt0.1"


def rows_of(folder: Path) -> list[dict]:
    runs_csv = folder / "runs.csv"
    return list(csv.DictReader(runs_csv.open())) if runs_csv.exists() else []


def start(args: list[str], env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", "run", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})


def wait_for_rows(folder_root: Path, count: int, timeout_s: float = 120) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        latest = folder_root / "latest"
        if latest.exists() and len(rows_of(latest)) >= count:
            return latest.resolve()
        time.sleep(0.2)
    raise AssertionError(f"{count} rows did not appear within {timeout_s} s")


@pytest.mark.tools("wrk", "ab")
def test_crash_hang_and_garbage_are_recorded_and_the_suite_goes_on(tmp_path):
    require_root_tools("ip", "nginx", "wrk")
    result = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--runtime", "host", "--scenarios", QUICK, "--duration", "2",
         "--grace", "3", "--tools", "fault-crash,wrk,fault-hang,fault-garbage,ab", "--results-root", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "LTH_EXTRA_TOOLS": FAULT_TOOLS})
    rows = {r["tool"]: r for r in rows_of(tmp_path / "latest")}
    assert result.returncode == 1                       # non-zero: some runs failed
    assert rows["fault-crash"]["status"] == "failed" and "exit status -11" in rows["fault-crash"]["error"]
    assert rows["fault-hang"]["status"] == "timeout" and "killed" in rows["fault-hang"]["error"]
    assert rows["fault-garbage"]["status"] == "failed" and "could not parse" in rows["fault-garbage"]["error"]
    assert rows["wrk"]["status"] == "ok" and rows["ab"]["status"] == "ok"   # the suite went on
    for tool in ("fault-crash", "fault-garbage"):
        assert (tmp_path / "latest" / rows[tool]["run_dir"] / "stdout.txt").stat().st_size > 0  # raw output kept
    summary = result.stdout[result.stdout.index("runs ok"):]
    assert all(f"{t}:" in summary for t in ("fault-crash", "fault-hang", "fault-garbage"))
    assert subprocess.run(["pgrep", "-f", "sleep 3600"], capture_output=True).stdout == b""


@pytest.mark.tools("wrk", "ab")
@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_sigint_mid_run_removes_everything_and_keeps_finished_rows(tmp_path, runtime):
    require_root_tools("ip", "nginx", "wrk", "ab")
    if runtime == "docker" and docker_available() is None:
        pytest.fail("no Docker daemon answers")
    proc = start(["--runtime", runtime, "--tools", "wrk,ab", "--scenarios", "scenarios/shootout.yaml:vu20-rtt0.1,vu20-rtt10",
                  "--duration", "4", "--results-root", str(tmp_path)])
    folder = wait_for_rows(tmp_path, 2)                     # rtt0.1 done; now shaping vu20-rtt10 with a proxy
    time.sleep(4)
    finished = rows_of(folder)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert "interrupted" in output
    assert rows_of(folder)[:len(finished)] == finished and all(r["status"] == "ok" for r in finished)
    assert leftovers() == []


@pytest.mark.tools("wrk", "ab")
def test_kill_9_then_resume_finishes_without_redoing(tmp_path):
    require_root_tools("ip", "nginx", "wrk", "ab")
    args = ["--runtime", "host", "--tools", "wrk,ab", "--scenarios", "scenarios/shootout.yaml:vu20-rtt0.1,vu20-rtt10",
            "--duration", "3", "--results-root", str(tmp_path)]
    proc = start(args)
    folder = wait_for_rows(tmp_path, 1)
    time.sleep(1.5)                                          # mid-run of the second tool
    proc.kill()
    proc.wait(timeout=30)
    before = rows_of(folder)
    assert 1 <= len(before) < 4
    cleaned = harness("clean-state", timeout=120)
    assert cleaned.returncode == 0 and "namespace lth-target" in cleaned.stdout
    resumed = harness("run", *args, "--resume", str(folder), timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = rows_of(folder)
    assert sorted((r["scenario"], r["tool"]) for r in after) == sorted(
        (s, t) for s in ("vu20-rtt0.1", "vu20-rtt10") for t in ("wrk", "ab"))
    assert after[:len(before)] == before                     # finished rows untouched, not redone
    assert f"{len(before)} finished runs kept" in resumed.stdout
    assert leftovers() == []


@pytest.mark.tools("wrk")
def test_resume_with_force_redoes_finished_runs(tmp_path):
    require_root_tools("ip", "nginx", "wrk")
    args = ["--runtime", "host", "--tools", "wrk", "--scenarios", QUICK, "--duration", "1", "--results-root", str(tmp_path)]
    assert harness("run", *args).returncode == 0
    folder = (tmp_path / "latest").resolve()
    first = rows_of(folder)
    assert harness("run", *args, "--resume", str(folder)).stdout.count("run 1/") == 0
    forced = harness("run", *args, "--resume", str(folder), "--force")
    assert forced.returncode == 0 and "run 1/1" in forced.stdout
    (row,) = rows_of(folder)
    assert row["started_at"] >= first[0]["started_at"] and json.loads((folder / row["run_dir"] / "meta.json").read_text())
