"""CPU isolation end to end (issue 11): real Nginx and ab, the host runtime; isolation on (the default) in both
runtimes and JMeter's threads are asserted on the as-typed runs (tests/test_as_typed.py).

The harness reads /proc/<pid>/task/*/status Cpus_allowed_list of every process it samples (tool,
Nginx master and workers) while the run goes on and keeps it in meta.json as ``cpus_allowed``.
"""
import csv
import json
import os
from pathlib import Path

import pytest

from conftest import harness, require_root_tools
from harness.cpus import format_cpus

pytestmark = pytest.mark.e2e
ALL = format_cpus(tuple(sorted(os.sched_getaffinity(0))))


def run(tmp_path: Path, tools: str, *extra: str, runtime: str = "host") -> tuple[list[dict], dict, Path]:
    result = harness("run", "--runtime", runtime, "--tools", tools, "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1",
                     "--duration", "3", "--results-root", str(tmp_path), *extra)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    latest = tmp_path / "latest"
    rows = list(csv.DictReader((latest / "runs.csv").open()))
    return rows, json.loads((latest / "environment.json").read_text()), latest


def allowed(latest: Path, row: dict) -> dict[str, dict[str, str]]:
    """group -> pid -> the CPUs its threads were allowed, as the harness read them during the run."""
    groups = json.loads((latest / row["run_dir"] / "meta.json").read_text())["cpus_allowed"]
    return {group: {pid: seen["cpus"] for pid, seen in pids.items()} for group, pids in groups.items()}


@pytest.mark.tools("ab")
def test_isolation_off_is_recorded_in_every_row(tmp_path):
    """Its own run: --no-isolation is an option no shared run has (isolation on, the default, is asserted on
    the as-typed runs: tests/test_as_typed.py)."""
    require_root_tools("ip", "nginx", "ab", "top", "taskset")
    rows, env, latest = run(tmp_path / "off", "ab", "--no-isolation")
    row = rows[0]
    assert env["cpu_isolation"] is False and row["cpus_target"] == row["cpus_tool"] == ""
    cpus = allowed(latest, row)
    assert set(cpus["tool"].values()) == set(cpus["nginx"].values()) == {ALL}
    assert float(row["target_cpu_pct"]) > 1
