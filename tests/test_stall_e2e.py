"""The stall test end to end (issue 13): real Nginx frozen with SIGSTOP, a real µs tool at a fixed rate."""
import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import REPO, assert_rederives, harness, require_root_tools
from harness.row.stall import expected

pytestmark = pytest.mark.e2e
BOMBARDIER = "/opt/lth/bin/bombardier"
SCENARIOS = """scenarios:
  - {id: stall, rate_rps: 500, vus: 20, rtt_ms: 0.1, duration_s: 6, stall_ms: 1000, stall_at_s: 2, closed_model_tools: run}
  - {id: rate, rate_rps: 500, vus: 20, rtt_ms: 0.1, duration_s: 3}
"""


def _target_processes() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if "/tmp/lth-target-" in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "stall.yaml"
    path.write_text(SCENARIOS)
    return path


@pytest.mark.tools("bombardier", "ab")
def test_a_us_tool_sees_the_whole_stall_and_a_closed_tool_gets_an_unsupported_row(tmp_path):
    require_root_tools("ip", "nginx", "top", BOMBARDIER, "ab")
    scenarios = _scenario_file(tmp_path)
    result = harness("run", "--runtime", "host", "--tools", "bombardier,ab", "--scenarios", f"{scenarios}:stall,rate",
                     "--results-root", str(tmp_path / "results"), timeout=300)
    rows = {(r["scenario"], r["tool"]): r for r in csv.DictReader((tmp_path / "results/latest/runs.csv").open())}
    stalled = rows[("stall", "bombardier")]
    assert stalled["status"] == "ok", stalled["error"] + result.stderr
    actual = float(stalled["stall_actual_ms"])
    assert 1000 <= actual < 1100
    assert abs(float(stalled["lat_max_ms"]) - actual) <= 0.1 * actual, stalled["lat_max_ms"]
    assert float(stalled["rate_target_rps"]) == 500 and stalled["rate_ok"] in ("True", "False")
    # 6 s at 500/s with a 1 s stall: a sixth of the requests wait, p99 = RTT + 0.94 x the stall.
    figures = expected(500, float(stalled["measured_s"]), 0, actual, float(stalled["rtt_measured_ms"]))
    assert float(stalled["expected_p99_ms"]) == pytest.approx(figures.p99_ms, abs=0.01)
    assert 0.9 * actual < figures.p99_ms < actual < figures.max_ms < actual + 1
    assert "SIGSTOP of" in stalled["notes"]
    closed = rows[("stall", "ab")]
    assert closed["status"] == "ok" and closed["rate_target_rps"] == "" and closed["rate_model"].startswith("closed model")
    unsupported = rows[("rate", "ab")]
    assert unsupported["status"] == "unsupported"
    assert unsupported["error"].startswith("open model not supported: closed model only")
    assert unsupported["rps"] == "" and unsupported["rate_target_rps"] == "500"
    assert not _target_processes(), "nginx outlived the run"
    assert_rederives((tmp_path / "results" / "latest").resolve(), tmp_path)   # the stall, from its record


@pytest.mark.tools("bombardier")
def test_ctrl_c_during_the_stall_leaves_no_frozen_nginx(tmp_path):
    require_root_tools("ip", "nginx", "top", BOMBARDIER)
    scenarios = _scenario_file(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--runtime", "host", "--tools", "bombardier",
                             "--scenarios", f"{scenarios}:stall", "--results-root", str(tmp_path / "results")],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not any(p.info["status"] == psutil.STATUS_STOPPED for p in _target_processes()):
        assert time.monotonic() < deadline and proc.poll() is None, "the stall never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert not _target_processes(), "nginx left behind after Ctrl-C during the stall"
