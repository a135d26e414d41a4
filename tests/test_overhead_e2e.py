"""The overhead benchmark (harness/suite/overhead_check.py, make bench-overhead) run briefly for real, so that it
cannot rot unnoticed again (issue 53): 1 pair of 2 s, wrk, in each runtime; and its --carry-over, 6 runs of 1 s. Their
arithmetic: tests/test_overhead.py."""
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, leftovers, require_root_tools
from harness.cpus import parse_cpus
from harness.runtimes import docker, host
from harness.runtimes.docker import docker_available
from harness.suite import carry_over, overhead_check as oc

pytestmark = pytest.mark.e2e


def lth_overhead(results_root: Path, *options: str, runtime: str = "host") -> subprocess.CompletedProcess:
    """`lth overhead --runtime RUNTIME --tools wrk OPTIONS` as typed, into ``results_root``."""
    return subprocess.run([str(Path(sys.executable).parent / "lth"), "overhead", "--runtime", runtime, "--tools", "wrk",
                           *options, "--results-root", str(results_root)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.tools("wrk")
def test_one_brief_pair_gives_a_ratio_of_two_measured_rates_and_leaves_nothing(tmp_path):
    """With --by-hand-top, which only a real check runs otherwise."""
    require_root_tools("ip", "nginx", "taskset", "wrk", "chrt")
    result, folder, measured, pair = one_pair(tmp_path, "host", "--by-hand-top")
    assert pair["ratio"] == pytest.approx(pair["harness_rps"] / pair["by_hand_rps"])
    (line,) = [l for l in result.stdout.splitlines() if l.startswith("host wrk: harness/by-hand ")]
    assert f"{pair['ratio']:.3f} over 1 pair" in line and line.endswith("; by hand with top beside the tool")
    # the same command on both sides but the address: by hand pinned with taskset to the harness's tool CPUs, against
    # an Nginx started by hand (its own namespace, the project's nginx.conf, the harness's target CPUs)
    hand, through = measured["by_hand_command"], measured["harness_command"]
    assert hand[:2] == ["taskset", "-c"] and through[-1] == f"http://{host.TARGET_IP}:80/style.css"
    assert [a.replace(oc.HAND_TARGET_IP, host.TARGET_IP) for a in hand[3:]] == through
    target_cpus, tool_cpus = _row(folder)["cpus_target"], _row(folder)["cpus_tool"]
    assert hand[2] == tool_cpus
    # the harness's own observation (top, its reader, the wait) was held to the tool's CPUs during the load, as the
    # kernel read it back, and its cost is a small share of one CPU (1-2% on this machine)
    assert pair["observer_cpus"] == tool_cpus and 0 < pair["observer_share"] < 0.5
    assert f"observer {100 * pair['observer_share']:.1f}% of a CPU on {tool_cpus}" in result.stdout
    script = (folder / pair["by_hand_run"] / "commands.sh").read_text()
    assert f"taskset -c {target_cpus} ip netns exec {oc.HAND_NETNS} nginx -p /tmp/{oc.HAND_FOLDER}" in script
    # the same master and one worker per target CPU on both sides (Nginx's `auto` would count the machine's CPUs)
    workers = len(parse_cpus(target_cpus))
    assert f"sed -i 's/^worker_processes auto;/worker_processes {workers};/'" in script
    assert pair["by_hand_nginx"] == pair["harness_nginx"] == 1 + workers
    assert f"({workers} worker{'s' * (workers != 1)}) on CPUs {target_cpus}" in _row(folder)["target_stack"]
    assert (folder / pair["by_hand_run"] / "stdout.txt").is_file()
    # --by-hand-top: the harness's top beside wrk by hand, on the tool's CPUs, its frames kept (a 2 s run: 2 or 3)
    assert f"nice -n -5 taskset -c {tool_cpus} env LC_ALL=C TERM=dumb top -b -d 1.0 " in script
    frames = (folder / pair["by_hand_run"] / "top.txt").read_text().count("\ntop - ") + 1
    assert 2 <= frames <= 4 and json.loads((folder / "overhead.json").read_text())["by_hand_top"] is True
    assert leftovers() == []


@pytest.mark.tools("wrk")
def test_one_docker_pair_runs_the_same_image_and_nginx_workers_by_hand_and_leaves_nothing(tmp_path):
    """The Docker by-hand side (its own network, the target image serving a mounted copy with the harness's worker
    count, the tool image by `docker run`), which only a real check runs otherwise."""
    if docker_available() is None:
        pytest.skip("no Docker daemon answers: run `make deps`")
    _, folder, measured, pair = one_pair(tmp_path, "docker")
    row = _row(folder, "docker")
    workers = len(parse_cpus(row["cpus_target"]))
    assert pair["by_hand_nginx"] == pair["harness_nginx"] == 1 + workers       # docker-init not counted
    script = (folder / pair["by_hand_run"] / "commands.sh").read_text()
    assert f"sed -i 's/^worker_processes auto;/worker_processes {workers};/'" in script
    assert f"--cpuset-cpus {row['cpus_target']}" in script and oc.HAND_SUBNET in script
    # the script a user types: Nginx's temp folder made in the copy before the target starts (else [emerg])
    mounted = folder / pair["by_hand_run"] / "target"
    assert script.index(f"mkdir {mounted}/tmp") < script.index("docker run --detach")
    assert measured["by_hand_command"][:3] == ["docker", "run", "--rm"]
    assert f"({workers} worker{'s' * (workers != 1)}) on CPUs {row['cpus_target']}" in row["target_stack"]
    assert leftovers() == []


@pytest.mark.tools("wrk")
def test_candidates_turned_off_change_the_by_hand_side_as_its_script_says(tmp_path, monkeypatch):
    """LTH_OVERHEAD_OFF=mount,wrk-script (issue 53.2), which only a check of a candidate runs otherwise: by hand,
    Nginx serves the image's own files with only its nginx.conf mounted, and wrk runs without report.lua."""
    if docker_available() is None:
        pytest.skip("no Docker daemon answers: run `make deps`")
    monkeypatch.setenv(oc.CANDIDATES_ENV, "wrk-script,mount")
    result, folder, measured, pair = one_pair(tmp_path, "docker")
    assert json.loads((folder / "overhead.json").read_text())["candidates_off"] == ["mount", "wrk-script"]
    assert "LTH_OVERHEAD_OFF=mount,wrk-script: measuring without these" in result.stdout
    script = (folder / pair["by_hand_run"] / "commands.sh").read_text()
    mounted = folder / pair["by_hand_run"] / "target"
    assert f"-v {mounted}/nginx.conf:/srv/target/nginx.conf:ro" in script and "cp -r" not in script
    # the script a user types: the config copied before the line that edits it
    assert script.index(f"cp {oc.TARGET_DIR}/nginx.conf {mounted}") < script.index("sed -i ")
    assert sorted(p.name for p in mounted.iterdir()) == ["nginx.conf"]
    hand, through = measured["by_hand_command"], measured["harness_command"]
    assert "-s" in through and "-s" not in hand and hand[-1].endswith("/style.css")
    assert (folder / pair["by_hand_run"] / "stdout.txt").read_text().count("Requests/sec:") == 1
    assert leftovers() == []


def test_the_docker_observer_reads_a_live_containers_processes_from_its_cgroup():
    """What the sampler lists at every frame (harness/runtimes/docker.py container_pids) against the scan of every
    process it replaced: the same pids, a `docker exec`'d one among them, none once the container is gone."""
    if docker_available() is None:
        pytest.skip("no Docker daemon answers: run `make deps`")
    image = docker.TARGET_IMAGE
    cid = subprocess.run(["docker", "run", "-d", "--rm", "--label", "lth", "--entrypoint", "sleep", image, "60"],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        execd = subprocess.Popen(["docker", "exec", cid, "sleep", "30"])
        deadline = time.monotonic() + 20
        while len(docker.scanned_pids(cid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        first = docker.container_pids(cid)                        # found by the scan: the cgroup folder with it
        assert len(first) == 2 and docker._cgroup_folders.get(cid) is not None, (first, docker._cgroup_folders)
        assert docker.container_pids(cid) == docker.scanned_pids(cid) == first
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
    execd.wait(timeout=10)
    assert docker.container_pids(cid) == set()
    assert leftovers() == []


def one_pair(tmp_path, runtime: str, *options: str):
    """`lth overhead --runtime RUNTIME --tools wrk --pairs 1 --duration 2 OPTIONS`: its output, folder, entry and pair,
    both sides measured."""
    result = lth_overhead(tmp_path, "--pairs", "1", "--duration", "2", *options, runtime=runtime)
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.glob("*-overhead")
    (measured,) = json.loads((folder / "overhead.json").read_text())["results"]
    (pair,) = measured["pairs"]
    assert pair["harness_rps"] > 0 and pair["by_hand_rps"] > 0 and pair["errors"] == []
    return result, folder, measured, pair


def _row(folder, runtime: str = "host"):
    (runs,) = folder.glob(f"harness/*-{runtime}/runs.csv")   # the harness's own folder, as `harness run` writes it
    (row,) = csv.DictReader(runs.open())
    return row


@pytest.mark.tools("wrk")
def test_carry_over_runs_both_sides_in_its_order_and_fits_them(tmp_path):
    """Its own 6 runs of 1 s (~10 s): no shared run makes --carry-over's order of single sides."""
    require_root_tools("ip", "nginx", "taskset", "wrk")
    result = lth_overhead(tmp_path, "--carry-over", "6", "--duration", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = tmp_path.glob("*-carry-over")
    written = json.loads((folder / "carry-over.json").read_text())
    runs = [carry_over.Run(**r) for r in written["runs"]]
    assert [(r.tool, r.side) for r in runs] == carry_over.order(6, ["wrk"], (oc.HARNESS, oc.BY_HAND))
    assert [r.after for r in runs] == [None, *(r.side for r in runs[:-1])] and all(r.rps > 0 for r in runs)
    (line,) = written["lines"]
    assert line == carry_over.line("host", "wrk", runs, oc.HARNESS) and line.endswith("over 6 runs")
    assert line.startswith("host wrk: through the harness ") and line in result.stdout
    through = sum(r.side == oc.HARNESS for r in runs)
    assert len(list(folder.glob("harness/*-host/runs.csv"))) == through
    assert len(list(folder.glob("by-hand/*"))) == 6 - through
    assert leftovers() == []
