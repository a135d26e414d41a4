"""The README's quick start as a new user types it, in a throw-away clone (conftest.bench_quick):
`make bench-quick DURATION=3` (Docker runtime, the relative default results folder) and the same with
RUNTIME=host. Every tool's every run must be ok, results/latest must be inside the clone, and the
report must be there. tests/test_tools_e2e.py checks each tool's rows of the same runs in detail.

The counts come from the registry and scenarios/quick.yaml, never from a number written here.
"""
import csv
import re
import json
import os
import shutil
from pathlib import Path

import pytest

from analysis.claims import load_claims
from analysis.memory import NOT_MEASURED
from browser import first_screen
from conftest import make_as_typed, rederived_differences, selected_tools
from harness import REPO_ROOT, scenarios
from harness.network.shaping import netem_available
from harness.row import rtt_ok
from harness.row.bottleneck import MEMORY_CHECK_TOLERANCE
from harness.row.usage import MIN_GROWTH_FRAMES, STEADY, check_span, moved
from harness.stats import PERCENTILES, histogram_metrics, percentile_field
from harness.store import hdr
from harness.tools import registry

pytestmark = pytest.mark.e2e
QUICK = REPO_ROOT / "scenarios" / "quick.yaml"


def expected_runs() -> set[tuple[str, str]]:
    tools = registry.select("all" if selected_tools() is None else ",".join(sorted(selected_tools())))
    return {(s.id, t.name) for s in scenarios.select(str(QUICK)) for t in tools}


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_bench_quick_as_typed_runs_every_tool_ok(bench_quick, runtime):
    typed = bench_quick(runtime)
    failed = [f"{r['scenario']} {r['tool']}: {r['status']}: {r['error']}" for r in typed.rows if r["status"] != "ok"]
    assert failed == [], typed.output
    assert {(r["scenario"], r["tool"]) for r in typed.rows} == expected_runs(), typed.output
    assert typed.result.returncode == 0, typed.output
    assert {r["runtime"] for r in typed.rows} == {runtime}


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_every_tools_memory_is_cross_checked_like_with_like_and_per_vu_is_a_slope(bench_quick, runtime):
    """Issue 35: top's RSS against VmRSS of the same processes in both runtimes (Docker's cgroup memory fired on
    32 of 38 rows: a check that always fires checks nothing); memory per VU is the scorecard's slope over the
    quick start's two VU levels, no row's figure."""
    typed = bench_quick(runtime)
    noted = [f"{r['scenario']} {r['tool']}: {r['notes']}" for r in typed.rows if "memory check:" in r["notes"]]
    assert noted == [], noted
    judged_to_2pct = 0
    for row in typed.rows:
        meta = run_meta(typed, row)
        check = meta["memory_check"]
        # within 2% of what top read before and after it where top's RSS held steady over that second; where it
        # moved (a 3 s run of k6 is all ramp: 61.1, VmRSS 57.7, 63.5 MiB), within the product's own tolerance
        steady = moved(check["top_mb"], check["next_top_mb"]) <= STEADY
        tolerance = 0.02 if steady else MEMORY_CHECK_TOLERANCE
        judged_to_2pct += steady
        assert abs(check_span(check["top_mb"], check["next_top_mb"], check["check_mb"])) <= tolerance, (row["tool"], check)
        assert "mem_per_vu_kb" not in row and "mem_baseline_mb" not in row     # retired (harness/store/upgrade.py)
        # a 3 s run's window can hold two frames (drill, JMeter, k6): no slope over two (MIN_GROWTH_FRAMES)
        assert row["mem_growth_mb_per_s"] != "" or meta["samples"] <= MIN_GROWTH_FRAMES, (row["tool"], meta["samples"])
    assert judged_to_2pct >= len(typed.rows) / 3, judged_to_2pct   # CI 2026-11-29: 26 of 38 (Docker), 23 of 37
    # the quick start's two levels are at two RTTs: no slope (issue 48: across RTTs throughput read as "per VU")
    card = {r["tool"]: r for r in csv.DictReader((typed.folder / "report" / "scorecard.csv").open())}
    assert all(card[t]["mem_per_vu_kb"].startswith(NOT_MEASURED) for t in {r["tool"] for r in typed.rows}), \
        {t: c["mem_per_vu_kb"] for t, c in card.items()}


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_bench_quick_leaves_its_results_and_report_inside_the_clone(bench_quick, runtime):
    typed = bench_quick(runtime)
    clone = typed.latest.parent.parent
    assert typed.folder is not None and typed.folder.parent == clone / "results", typed.output
    assert typed.folder.name.endswith(f"-{runtime}")
    report = typed.folder / "report" / "index.html"
    assert report.is_file(), typed.output
    charts = {p.name for p in report.parent.glob("*.png")}
    assert {"rps.png", "latency.png", "memory.png"} <= charts, charts
    html = report.read_text()
    assert all(r["tool"] in html for r in typed.rows)
    # Every command line the tools got named the clone's results folder by its absolute path.
    for meta_file in typed.folder.glob("*/*/meta.json"):
        command = json.loads(meta_file.read_text()).get("command") or []
        paths = [a for a in command if "results/" in a]
        assert all(Path(a.split("=")[-1]).is_absolute() for a in paths), (meta_file, paths)


def test_the_quick_starts_report_opens_on_a_picture_and_a_verdict_in_a_real_browser(bench_quick):
    """Issue 48, as a reader meets it: the Docker quick start's own report at 1400x900. The headline picture and the
    banner on the first screen, a verdict per claim of the study, no console error; the screenshot stays in the
    run's report folder (first-screen.png)."""
    typed = bench_quick("docker")
    index = typed.folder / "report" / "index.html"
    seen = first_screen(index, index.parent / "first-screen.png")
    assert seen.inside("banner") and seen.inside("headline") and seen.inside("verdict"), seen.boxes
    assert seen.console_errors == [] and seen.images_ok, seen.console_errors
    assert len(seen.claim_verdicts) == len(load_claims()["claims"])
    assert set(seen.claim_verdicts) <= {"holds", "differs", "not measured"}
    html = index.read_text()
    ok = sum(r["status"] == "ok" for r in typed.rows)
    assert f"{len(typed.rows)} runs: {ok} ok" in html and "cores" in html
    # the quick run has no 10 ms scenario: that claim is not measured, with the command that measures it
    assert re.search(r'id="claim-ceiling-at-10ms" class="verdict-not-measured">.*?run make bench-all', html, re.S)


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_make_rederive_as_typed_gives_the_same_rows(bench_quick, runtime, tmp_path):
    """`make rederive RESULTS=results/<folder>` in the clone: every tool's stored raw files (harness/row)
    derive the rows runs.csv holds, in both runtimes."""
    typed = bench_quick(runtime)
    assert typed.folder is not None, typed.output
    stored = tmp_path / "runs.csv"
    shutil.copy(typed.folder / "runs.csv", stored)
    clone = typed.latest.parent.parent
    result = make_as_typed(clone, "rederive", f"RESULTS=results/{typed.folder.name}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"re-derived {len(typed.rows)} runs" in result.stdout
    assert rederived_differences(stored, typed.folder) == []


def test_make_bench_capacity_as_typed_searches_and_reports(bench_quick):
    """`make bench-capacity TOOLS=oha,wrk ...` in the same clone (host runtime, its default): oha's search
    writes a row per step with the wire's schedule figures (CAPTURE=1), wrk its closed-loop reference, both
    in capacity.json and the report's capacity section."""
    if selected_tools() is not None and not {"oha", "wrk"} <= selected_tools():
        pytest.skip("oha and wrk are not among the selected tools")
    clone = bench_quick("host").latest.parent.parent
    result = make_as_typed(clone, "bench-capacity", "TOOLS=oha,wrk", "STEP_DURATION=2", "MAX_STEPS=3", "CAPTURE=1")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    latest = clone / "results" / "latest"
    entries = {e["tool"]: e for e in json.loads((latest / "capacity.json").read_text())}
    oha, wrk = entries["oha"], entries["wrk"]
    # 2 s steps on a shared CI machine may fail one (a missed rate or SLO): the search then bisects and may
    # also end on its resolution inside the budget; either way it never runs past MAX_STEPS.
    assert oha["kind"] == "search" and 2 <= oha["steps"] <= 3, oha
    assert oha["stopped_because"] in {"step budget", "resolution"}, oha
    passed = [s["rate_target_rps"] for s in oha["step_results"] if s["passed"]]
    assert passed and oha["max_sustained_rps"] == max(passed), oha
    assert f"oha: max sustained {oha['max_sustained_rps']:,} rps" in output
    assert wrk["kind"] == "closed-loop reference" and wrk["closed_loop_rps"] > 0 and wrk["status"] == "ok"
    rows = list(csv.DictReader((latest / "runs.csv").open()))
    steps = [r for r in rows if r["tool"] == "oha" and r["scenario"].startswith("capacity-rate")]
    assert sorted(int(r["rate_target_rps"]) for r in steps) == sorted(oha["rates"])
    for row in steps:
        assert row["status"] == "ok" and float(row["wire_gap_cv"]) >= 0 and row["wire_schedule"], row
        if int(row["rate_target_rps"]) in passed:
            assert abs(float(row["wire_rate_rps"]) / int(row["rate_target_rps"]) - 1) < 0.1, row
    html = (latest / "report" / "index.html").read_text()
    assert 'id="capacity-table"' in html and (latest / "report" / "latency_vs_rate.png").is_file()


# --- what single-purpose runs of wrk, ab and JMeter proved, asserted on the as-typed runs ----------------------
# (tests/README.md, "Merged tests": each was a harness run of its own before)
def one_row(typed, scenario: str, tool: str) -> dict:
    found = [r for r in typed.rows if (r["scenario"], r["tool"]) == (scenario, tool)]
    assert len(found) == 1, typed.output
    return found[0]


def run_meta(typed, row: dict) -> dict:
    return json.loads((typed.folder / row["run_dir"] / "meta.json").read_text())


def tools_ran(*tools: str) -> bool:
    return selected_tools() is None or set(tools) <= selected_tools()


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_wrk_and_ab_keep_their_raw_files_counted_by_nginx_with_the_environment(bench_quick, runtime):
    """Was test_e2e.py::test_wrk_and_ab_run_for_real (a run of its own per runtime)."""
    if not tools_ran("wrk", "ab"):
        pytest.skip("wrk and ab are not among the selected tools")
    typed = bench_quick(runtime)
    for tool in ("wrk", "ab"):
        row = one_row(typed, "vu20-rtt0.1", tool)
        assert row["status"] == "ok" and row["runtime"] == runtime, row["error"]
        requests, served = int(row["requests"]), int(row["server_requests"])
        assert abs(served - requests) <= 0.02 * requests, (tool, served, requests)
        for name in ("stdout.txt", "stderr.txt", "samples.csv", "meta.json"):
            assert (typed.folder / row["run_dir"] / name).is_file(), (tool, name)
    # wrk gives its histogram on every run: an HdrHistogram log beside it, the row's figures within its 3 digits
    for row in (r for r in typed.rows if r["tool"] == "wrk"):
        log = hdr.read_log(typed.folder / row["run_dir"] / "latency.hlog")
        figures = histogram_metrics(hdr.to_counts(log))
        assert log.get_total_count() == int(row["requests"]) or "cut its histogram" in row["notes"], row["scenario"]
        for q in (q for q in PERCENTILES if row[percentile_field(q)]):      # a cut dump leaves the top ones empty
            assert getattr(figures, percentile_field(q)) == pytest.approx(float(row[percentile_field(q)]), rel=1e-3, abs=1e-5)
    environment = json.loads((typed.folder / "environment.json").read_text())
    for key in ("kernel", "cpu_model", "cores", "memory_gib", "harness_commit",
                "docker_version" if runtime == "docker" else "nginx_version"):
        assert key in environment, key


def test_an_unshaped_run_records_its_measured_rtt_and_flags_a_miss_loudly(bench_quick):
    """Was test_e2e.py::test_native_runs_record_the_measured_rtt (a host run of its own)."""
    typed = bench_quick("host")
    unshaped = [r for r in typed.rows if r["scenario"] == "vu20-rtt0.1" and r["status"] == "ok"]
    assert unshaped, typed.output
    for row in unshaped:
        measured = float(row["rtt_measured_ms"])
        assert row["shaper"] == "none" and 0 < measured < 5, row
        # On a busy machine the native RTT can miss its 0.5 ms tolerance: then it is flagged, loudly.
        assert row["rtt_ok"] == str(rtt_ok(measured, 0.1)), row
    missed = [r for r in typed.rows if r["rtt_ok"] == "False"]
    assert ("misses the target" in typed.output_all) == bool(missed)


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_wrk_through_the_shaper_sees_the_rtt_and_its_ceiling(bench_quick, runtime):
    """Was test_e2e.py::test_wrk_at_10ms_rtt_sees_the_rtt_and_its_ceiling (a 10 ms run of its own per runtime);
    here the quick start's 50 ms scenario, 100 VUs: the same 2,000 rps asked of the shaper."""
    if not tools_ran("wrk"):
        pytest.skip("wrk is not among the selected tools")
    typed = bench_quick(runtime)
    row = one_row(typed, "vu100-rtt50", "wrk")
    assert row["status"] == "ok", row["error"]
    assert row["shaper"] == ("netem" if netem_available()[0] else "toxiproxy")
    measured = float(row["rtt_measured_ms"])
    assert 49 <= measured <= 55 and row["rtt_ok"] == str(rtt_ok(measured, 50))
    meta = run_meta(typed, row)
    if row["shaper"] == "toxiproxy":
        # the proxy's own delay (~1 ms) is taken off its toxic, so the 50 ms profile is met
        shaping, probes = meta["shaping"], meta["shaping"]["probes"]
        assert shaping["knob"] == "toxic latency"
        assert probes[0]["delay_ms"] == 50 or shaping["started_from"] != "the profile", shaping
        closest = min(probes, key=lambda p: abs(p["probe_ms"] - 50))
        assert shaping["delay_ms"] == closest["delay_ms"] and row["rtt_ok"] == "True", shaping
        # Toxiproxy answers the handshake itself: a fresh connect costs the native hop, not the RTT
        assert all(p["connect_ms"] < 5 for p in probes), probes
        # probed through it and straight to Nginx while wrk ran (harness/row/bottleneck.py: "shaper")
        under_load = meta["shaper_under_load"]
        assert "not_used" not in under_load and under_load["direct_ms"] < 5, under_load
        assert float(row["rtt_loaded_ms"]) == pytest.approx(under_load["via_ms"], abs=1e-3) and under_load["via_ms"] >= 49
        assert float(row["shaper_added_ms"]) == pytest.approx(under_load["via_ms"] - measured, abs=1e-3)
        assert float(row["shaper_cpu_pct"]) > 0 and "ms under the load: limited by" in typed.output_all
    # wrk sees the RTT: its p50 sits on the RTT a probe saw through the same path during the load (which holds
    # the queueing of a one-core target and proxy at 100 connections: 52.8-54.9 ms here), netem's idle one. The
    # probe samples that queue a few times, wrk's p50 is the whole run's: CI, 2026-11-28, probe 50.5 ms and wrk's
    # p50 53.8 ms. 5 ms above still fails a path that lost or doubled the 50 ms.
    loaded = float(row["rtt_loaded_ms"]) if row["rtt_loaded_ms"] else measured
    assert measured - 0.5 <= float(row["lat_p50_ms"]) <= loaded + 5, (row["lat_p50_ms"], measured, loaded)
    assert float(row["rps"]) <= 100 / 0.050
    assert row["lat_added_ms"] == "" and row["wire_p50_ms"] == ""   # both need --capture (tests/test_capture.py)
    assert f"RTT shaping: {row['shaper']}" in typed.output_all


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_the_first_shaped_run_calibrates_from_the_profile_the_next_from_where_it_ended(bench_quick, runtime):
    """harness.network.shaping._calibrate_path: a suite calibrates each shaped path once, from the profile; the next
    runs on it start where the previous one ended (one probe where the profile's own value takes four)."""
    if selected_tools() is not None and len(selected_tools()) < 2:
        pytest.skip("one tool selected: one shaped run, nothing calibrated before it")
    typed = bench_quick(runtime)
    shaped = sorted((r for r in typed.rows if r["scenario"] == "vu100-rtt50" and r["status"] == "ok"),
                    key=lambda r: r["started_at"])
    assert len(shaped) >= 2, typed.output
    starts = [run_meta(typed, r)["shaping"]["started_from"] for r in shaped]
    assert starts == ["the profile"] + ["the delay the previous run on this path ended on"] * (len(shaped) - 1)
    for row in shaped:
        assert row["rtt_ok"] == "True", (row["tool"], run_meta(typed, row)["shaping"])


def allowed(typed, row: dict) -> dict[str, dict[str, str]]:
    """group -> pid -> the CPUs its threads were allowed, as the harness read them during the run."""
    groups = run_meta(typed, row)["cpus_allowed"]
    return {group: {pid: seen["cpus"] for pid, seen in pids.items()} for group, pids in groups.items()}


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_isolation_holds_the_tool_and_nginx_on_their_cpus(bench_quick, runtime):
    """Was test_isolation_e2e.py::test_isolation_on_and_off_is_recorded_in_every_row (its "on" half) and
    ::test_docker_compose_cpusets_hold_the_tool_and_nginx, each a run of its own: isolation is the default."""
    if not tools_ran("ab"):
        pytest.skip("ab is not among the selected tools")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("isolation needs at least 2 CPUs")
    typed = bench_quick(runtime)
    row = one_row(typed, "vu20-rtt0.1", "ab")
    environment = json.loads((typed.folder / "environment.json").read_text())
    assert environment["cpu_isolation"] is True
    assert (row["cpus_target"], row["cpus_tool"]) == (environment["cpus_target"], environment["cpus_tool"])
    assert row["cpus_target"] and row["cpus_tool"] and row["cpus_target"] != row["cpus_tool"]
    cpus = allowed(typed, row)
    assert set(cpus["tool"].values()) == {row["cpus_tool"]} and set(cpus["nginx"].values()) == {row["cpus_target"]}
    assert float(row["target_cpu_pct"]) > 1
    if runtime == "host":
        assert len(cpus["nginx"]) >= 2                                 # master and at least one worker
        assert float(row["req_per_cpu_s"]) > 0
        assert row["tool_saturated"] in ("True", "False") and row["target_saturated"] in ("True", "False")
        assert "isolation breached" not in row["notes"]


def test_every_jmeter_process_and_thread_stays_on_the_tools_cpus(bench_quick):
    """Was test_isolation_e2e.py::test_every_jmeter_process_and_thread_stays_on_the_tools_cpus (a run of its
    own with --cpus-tool 1 --cpus-target 0: on 2 CPUs the default split is the same)."""
    if not tools_ran("jmeter"):
        pytest.skip("jmeter is not among the selected tools")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("isolation needs at least 2 CPUs")
    typed = bench_quick("host")
    row = one_row(typed, "vu20-rtt0.1", "jmeter")
    assert row["status"] == "ok", row["error"]
    tool = allowed(typed, row)["tool"]
    # The start script (a shell) and the JVM it launches; every thread of each was read.
    assert set(tool.values()) == {row["cpus_tool"]}, tool
    processes = list(run_meta(typed, row)["cpus_allowed"]["tool"].values())
    jvm = [p for p in processes if p["name"] == "java"]
    assert jvm and max(p["threads"] for p in jvm) > 10, processes
    assert set(allowed(typed, row)["nginx"].values()) == {row["cpus_target"]}
    assert "isolation breached" not in row["notes"]


@pytest.mark.parametrize("runtime", ["docker", "host"])
def test_each_runtime_installs_what_it_runs_and_times_its_own_work_by_phase(bench_quick, runtime):
    """Issue 33: RUNTIME=docker leaves the tools to their images (no host install); every run's meta.json
    says the harness's time around the tool by phase, and the suite prints it at the end. In Docker the
    target stack starts once for the suite and each run gets a fresh generator container."""
    typed = bench_quick(runtime)
    skipped = "deps: the tools are not installed on this machine" in typed.output_all
    assert skipped == (runtime == "docker"), typed.output
    assert "harness time per run (median over" in typed.output_all, typed.output
    ran = [r for r in typed.rows if r["status"] == "ok"]
    assert ran, typed.output
    for row in ran:
        run_dir = typed.folder / row["run_dir"]
        phases = json.loads((run_dir / "record.json").read_text())["phases_s"]
        overhead = run_meta(typed, row)["overhead_s"]
        assert {"start", "shape", "probe", "load", "logs", "stop"} <= set(phases), (row["tool"], phases)
        assert all(seconds >= 0 for seconds in phases.values()), phases
        # the load phase holds the tool's whole execution; the rest of the run is the harness's own time
        wall = run_meta(typed, row)["wall_s"]
        assert phases["load"] >= wall - 1e-3 and overhead["load_setup"] == pytest.approx(phases["load"] - wall, abs=2e-3)
        counted = [s for name, s in overhead.items() if name not in ("total", "tool_beyond_duration")]
        assert overhead["total"] == pytest.approx(sum(counted), abs=0.01) and "load" not in overhead
    if runtime == "docker":
        containers = [json.loads((typed.folder / r["run_dir"] / "record.json").read_text())["parts"][0]["containers"]
                      for r in sorted(ran, key=lambda r: r["started_at"])]
        generators = [c["generator"] for c in containers]
        assert len(set(generators)) == len(generators), generators          # a fresh generator every run
        assert len({c["target"] for c in containers}) == 1, containers     # the plain Nginx stack, started once
