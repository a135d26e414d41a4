"""CPU isolation end to end (issue 11): real Nginx, real ab and JMeter, the host runtime.

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
from harness.runtimes.docker import docker_available

pytestmark = pytest.mark.e2e
ALL = format_cpus(tuple(sorted(os.sched_getaffinity(0))))


def run(tmp_path: Path, tools: str, *extra: str, runtime: str = "host") -> tuple[list[dict], dict, Path]:
    result = harness("run", "--runtime", runtime, "--tools", tools, "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1",
                     "--duration", "4", "--results-root", str(tmp_path), *extra)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    latest = tmp_path / "latest"
    rows = list(csv.DictReader((latest / "runs.csv").open()))
    return rows, json.loads((latest / "environment.json").read_text()), latest


def allowed(latest: Path, row: dict) -> dict[str, dict[str, str]]:
    """group -> pid -> the CPUs its threads were allowed, as the harness read them during the run."""
    groups = json.loads((latest / row["run_dir"] / "meta.json").read_text())["cpus_allowed"]
    return {group: {pid: seen["cpus"] for pid, seen in pids.items()} for group, pids in groups.items()}


def processes(latest: Path, row: dict) -> list[dict]:
    return list(json.loads((latest / row["run_dir"] / "meta.json").read_text())["cpus_allowed"]["tool"].values())


@pytest.mark.tools("ab")
def test_isolation_on_and_off_is_recorded_in_every_row(tmp_path):
    require_root_tools("ip", "nginx", "ab", "top", "taskset")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("isolation needs at least 2 CPUs")
    rows, env, latest = run(tmp_path / "on", "ab")
    row = rows[0]
    assert env["cpu_isolation"] is True and (row["cpus_target"], row["cpus_tool"]) == (env["cpus_target"], env["cpus_tool"])
    assert row["cpus_target"] and row["cpus_tool"] and row["cpus_target"] != row["cpus_tool"]
    cpus = allowed(latest, row)
    assert set(cpus["tool"].values()) == {row["cpus_tool"]} and set(cpus["nginx"].values()) == {row["cpus_target"]}
    assert len(cpus["nginx"]) >= 2                                 # master and at least one worker
    assert float(row["target_cpu_pct"]) > 1 and float(row["req_per_cpu_s"]) > 0
    assert row["tool_saturated"] in ("True", "False") and row["target_saturated"] in ("True", "False")
    assert "isolation breached" not in row["notes"]

    rows, env, latest = run(tmp_path / "off", "ab", "--no-isolation")
    row = rows[0]
    assert env["cpu_isolation"] is False and row["cpus_target"] == row["cpus_tool"] == ""
    cpus = allowed(latest, row)
    assert set(cpus["tool"].values()) == set(cpus["nginx"].values()) == {ALL}
    assert float(row["target_cpu_pct"]) > 1


@pytest.mark.tools("jmeter")
def test_every_jmeter_process_and_thread_stays_on_the_tools_cpus(tmp_path):
    require_root_tools("ip", "nginx", "top", "/opt/lth/jmeter/bin/jmeter")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("isolation needs at least 2 CPUs")
    rows, env, latest = run(tmp_path, "jmeter", "--cpus-tool", "1", "--cpus-target", "0")
    row = rows[0]
    assert row["status"] == "ok", row["error"]
    tool = allowed(latest, row)["tool"]
    # The start script (a shell) and the JVM it launches; every thread of each was read.
    assert set(tool.values()) == {"1"}, tool
    jvm = [p for p in processes(latest, row) if p["name"] == "java"]
    assert jvm and max(p["threads"] for p in jvm) > 10, processes(latest, row)
    assert set(allowed(latest, row)["nginx"].values()) == {"0"}
    assert "isolation breached" not in row["notes"]


@pytest.mark.tools("ab")
def test_docker_compose_cpusets_hold_the_tool_and_nginx(tmp_path):
    require_root_tools("top")
    if docker_available() is None:
        pytest.fail("no Docker daemon answers: `make test` starts one (scripts/deps.sh)")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("isolation needs at least 2 CPUs")
    rows, env, latest = run(tmp_path, "ab", runtime="docker")
    row = rows[0]
    assert row["status"] == "ok", row["error"]
    cpus = allowed(latest, row)
    assert set(cpus["tool"].values()) == {row["cpus_tool"]} and set(cpus["nginx"].values()) == {row["cpus_target"]}
    assert float(row["target_cpu_pct"]) > 1 and env["cpu_isolation"] is True
