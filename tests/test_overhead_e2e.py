"""The overhead benchmark (harness/suite/overhead_check.py, make bench-overhead) run briefly for real, so that it
cannot rot unnoticed again (issue 53): 1 pair of 2 s, wrk, host runtime. Its arithmetic: tests/test_overhead.py."""
import json
import subprocess
import sys

import pytest

from conftest import REPO, leftovers, require_root_tools

pytestmark = pytest.mark.e2e


@pytest.mark.tools("wrk")
def test_one_brief_pair_gives_a_ratio_of_two_measured_rates_and_leaves_nothing(tmp_path):
    require_root_tools("ip", "nginx", "taskset", "wrk")
    result = subprocess.run([sys.executable, "-m", "harness.suite.overhead_check", "--runtime", "host", "--tools", "wrk",
                             "--pairs", "1", "--duration", "2", "--results-root", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.glob("*-overhead")
    (measured,) = json.loads((folder / "overhead.json").read_text())["results"]
    (pair,) = measured["pairs"]
    assert pair["harness_rps"] > 0 and pair["by_hand_rps"] > 0 and pair["errors"] == []
    assert pair["ratio"] == pytest.approx(pair["harness_rps"] / pair["by_hand_rps"])
    assert f"host wrk: harness/by-hand {pair['ratio']:.3f} over 1 pair" in result.stdout
    # the same command on both sides, by hand pinned with taskset to the tool's CPUs
    assert measured["by_hand_command"][:2] == ["taskset", "-c"]
    assert measured["by_hand_command"][3:] == measured["harness_command"]
    (runs,) = folder.glob("*-host/runs.csv")
    assert len(runs.read_text().splitlines()) == 2          # the harness's row, as `harness run` writes it
    assert (folder / pair["by_hand_run"] / "stdout.txt").is_file()
    assert leftovers() == []
