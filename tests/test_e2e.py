"""End to end through the CLI users call: real nginx, real wrk and ab, both runtimes."""
import csv
import json
from pathlib import Path

import pytest

from conftest import harness, require_root_tools
from harness.runtimes.docker import docker_available
from harness.row import rtt_ok
from harness.shaping import netem_available

pytestmark = pytest.mark.e2e
DURATION_S = "3"


def run_suite(tmp_path: Path, runtime: str, scenarios: str = "scenarios/quick.yaml:vu20-rtt0.1",
              tools: str = "wrk,ab", extra: tuple[str, ...] = ()) -> tuple[object, list[dict]]:
    result = harness("run", "--runtime", runtime, "--tools", tools, "--scenarios", scenarios,
                     "--duration", DURATION_S, "--results-root", str(tmp_path), *extra)
    runs_csv = tmp_path / "latest" / "runs.csv"
    rows = list(csv.DictReader(runs_csv.open())) if runs_csv.exists() else []
    return result, rows


def assert_real_run(row: dict, results: Path) -> None:
    assert row["status"] == "ok", row["error"]
    assert float(row["rps"]) > 0
    percentiles = [float(row[c]) for c in ("lat_min_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms",
                                          "lat_p95_ms", "lat_p99_ms", "lat_max_ms")]
    assert percentiles == sorted(percentiles) and percentiles[-1] > 0
    assert float(row["mem_avg_mb"]) > 0
    requests, served = int(row["requests"]), int(row["server_requests"])
    assert abs(served - requests) <= 0.02 * requests, (served, requests)
    assert row["tool_version"]
    run_dir = results / "latest" / row["run_dir"]
    for name in ("stdout.txt", "stderr.txt", "samples.csv", "meta.json"):
        assert (run_dir / name).is_file(), name


@pytest.mark.tools("wrk", "ab")
@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_wrk_and_ab_run_for_real(tmp_path, runtime):
    require_root_tools("ip", "nginx", "wrk", "ab", "top")
    if runtime == "docker" and docker_available() is None:
        pytest.fail("no Docker daemon answers: `make test` starts one (scripts/deps.sh)")
    result, rows = run_suite(tmp_path, runtime)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [(r["tool"], r["runtime"]) for r in rows] == [("wrk", runtime), ("ab", runtime)]
    for row in rows:
        assert_real_run(row, tmp_path)
    environment = (tmp_path / "latest" / "environment.json").read_text()
    for key in ("kernel", "cpu_model", "cores", "memory_gib", "harness_commit", "docker_version" if runtime == "docker" else "nginx_version"):
        assert f'"{key}"' in environment


@pytest.mark.tools("wrk")
@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_wrk_at_10ms_rtt_sees_the_rtt_and_its_ceiling(tmp_path, runtime):
    require_root_tools("ip", "nginx", "wrk", "tc")
    if runtime == "docker" and docker_available() is None:
        pytest.fail("no Docker daemon answers: `make test` starts one (scripts/deps.sh)")
    result, rows = run_suite(tmp_path, runtime, "scenarios/shootout.yaml:vu20-rtt10", "wrk")
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = rows
    assert row["status"] == "ok", row["error"]
    assert row["shaper"] == ("netem" if netem_available()[0] else "toxiproxy")
    assert 9 <= float(row["rtt_measured_ms"]) <= 13
    assert row["rtt_ok"] == str(rtt_ok(float(row["rtt_measured_ms"]), 10))   # flagged iff it misses by > 1 ms
    if row["shaper"] == "toxiproxy":
        # the proxy's own delay (~1 ms) is taken off its toxic, so the 10 ms profile is met
        shaping = json.loads((tmp_path / "latest" / row["run_dir"] / "meta.json").read_text())["shaping"]
        probes = shaping["probes"]
        assert probes[0]["delay_ms"] == 10 and shaping["knob"] == "toxic latency"
        closest = min(probes, key=lambda p: abs(p["probe_ms"] - 10))
        assert shaping["delay_ms"] == closest["delay_ms"] and row["rtt_ok"] == "True", shaping
        # Toxiproxy answers the handshake itself: a fresh connect costs the native hop, not the RTT
        assert all(p["connect_ms"] < 5 for p in probes), probes
        # probed through it and straight to Nginx while wrk ran (harness/row/bottleneck.py: "shaper")
        under_load = json.loads((tmp_path / "latest" / row["run_dir"] / "meta.json").read_text())["shaper_under_load"]
        assert "not_used" not in under_load and under_load["direct_ms"] < 5, under_load
        assert float(row["rtt_loaded_ms"]) == pytest.approx(under_load["via_ms"], abs=1e-3) and under_load["via_ms"] >= 9
        assert float(row["shaper_added_ms"]) == pytest.approx(
            under_load["via_ms"] - float(row["rtt_measured_ms"]), abs=1e-3)
        assert float(row["shaper_cpu_pct"]) > 0 and "ms under the load: limited by" in result.stdout
    # wrk sees the RTT: its p50 sits on the measured RTT plus the queueing of a one-core target and proxy
    assert float(row["rtt_measured_ms"]) - 0.5 <= float(row["lat_p50_ms"]) <= float(row["rtt_measured_ms"]) + 3
    assert float(row["rps"]) <= 20 / 0.010
    assert row["lat_added_ms"] == "" and row["wire_p50_ms"] == ""   # both need --capture (tests/test_capture.py)
    assert f"RTT shaping: {row['shaper']}" in result.stdout


@pytest.mark.tools("wrk")
def test_native_runs_record_the_measured_rtt(tmp_path):
    require_root_tools("ip", "nginx", "wrk")
    result, (row,) = run_suite(tmp_path, "host", tools="wrk")
    measured = float(row["rtt_measured_ms"])
    assert row["shaper"] == "none" and 0 < measured < 5
    # On a busy machine the native RTT can miss its 0.5 ms tolerance: then it must be flagged, loudly.
    assert row["rtt_ok"] == str(rtt_ok(measured, 0.1))
    assert ("misses the target" in result.stdout) == (row["rtt_ok"] == "False")


@pytest.mark.tools("wrk")
def test_forcing_netem_where_the_kernel_lacks_it_is_one_clear_line(tmp_path):
    require_root_tools("ip", "tc", "nginx")
    if netem_available()[0]:
        pytest.skip("this kernel has sch_netem: nothing to refuse")
    result = harness("run", "--runtime", "host", "--tools", "wrk", "--scenarios", "scenarios/shootout.yaml:vu20-rtt10",
                     "--shaper", "netem", "--duration", "1", "--results-root", str(tmp_path))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "lacks sch_netem" in line and "--shaper toxiproxy" in line
    assert not any(tmp_path.iterdir())


@pytest.mark.tools("wrk", "ab")
def test_repeats_are_interleaved_across_tools(tmp_path):
    require_root_tools("ip", "nginx", "wrk", "ab")
    result = harness("run", "--runtime", "host", "--tools", "wrk,ab", "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1",
                     "--duration", "1", "--repeat", "2", "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = list(csv.DictReader((tmp_path / "latest" / "runs.csv").open()))
    assert [(r["tool"], r["repeat"]) for r in rows] == [("wrk", "1"), ("ab", "1"), ("wrk", "2"), ("ab", "2")]
    assert len({r["run_dir"] for r in rows}) == 4
