"""The README's quick start as a new user types it, in a throw-away clone (conftest.bench_quick):
`make bench-quick DURATION=3` (Docker runtime, the relative default results folder) and the same with
RUNTIME=host. Every tool's every run must be ok, results/latest must be inside the clone, and the
report must be there. tests/test_tools_e2e.py checks each tool's rows of the same runs in detail.

The counts come from the registry and scenarios/quick.yaml, never from a number written here.
"""
import csv
import json
import shutil
from pathlib import Path

import pytest

from conftest import make_as_typed, rederived_differences, selected_tools
from harness import REPO_ROOT, registry, scenarios

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
