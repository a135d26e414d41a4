"""Rate scenarios (issue 13): each open-model adapter turns RunSpec.rate_rps into its own options,
and k6's parser reports dropped iterations (fixture: a real 1 s stall run, tests/fixtures/openmodel/)."""
import json
from pathlib import Path

import pytest

from harness.tools.output import RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import URL

TOOLS = discover()
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openmodel"


def spec(tmp_path: Path, rate: int | None = 1000) -> RunSpec:
    return RunSpec(url=URL, vus=50, duration_s=20, out_dir=tmp_path, cpus=2, rate_rps=rate)


def test_k6_runs_the_constant_arrival_rate_script_without_vus_flags(tmp_path):
    argv = TOOLS["k6"].command(spec(tmp_path))
    assert argv[-1].endswith("tools/k6/rate.js") and "--vus" not in argv and "--duration" not in argv
    assert {"LTH_RATE=1000", "LTH_VUS=50", "LTH_DURATION=20"} <= set(argv)
    assert "constant-arrival-rate" in (TOOLS["k6"].folder / "rate.js").read_text()
    closed = TOOLS["k6"].command(spec(tmp_path, None))
    assert closed[-1].endswith("tools/k6/script.js") and "--vus" in closed


@pytest.mark.parametrize("tool, expected", [
    ("oha", ["-q", "1000", "--latency-correction"]),
    ("bombardier", ["-r", "1000"]),
    ("hey", ["-q", "20"]),            # per worker: 1000 / 50 workers
    ("autocannon", ["-R", "1000"]),
])
def test_rate_flags(tool, expected, tmp_path):
    argv = TOOLS[tool].command(spec(tmp_path))
    start = argv.index(expected[0])
    assert argv[start:start + len(expected)] == expected
    assert not set(expected) & set(TOOLS[tool].command(spec(tmp_path, None))), "a closed run must not be paced"


def test_locust_uses_the_paced_user_class_at_rate_per_user(tmp_path):
    for name in ("locust", "locust-http", "locust-multi"):
        argv = TOOLS[name].command(spec(tmp_path))
        assert argv[-3:-1] == ["--lth-user-rate", "20"] and argv[-1].endswith("PacedUser")
        assert argv[-1] in (TOOLS[name].folder / "locustfile.py").read_text()


def test_artillery_runs_one_arrival_rate_phase_capped_at_vus(tmp_path):
    argv = TOOLS["artillery"].command(spec(tmp_path))
    overrides = json.loads(argv[argv.index("--overrides") + 1])
    assert overrides["config"]["phases"] == [{"name": "rate", "duration": 20, "arrivalRate": 1000, "maxVusers": 50}]
    assert argv[-1].endswith("tools/artillery/rate.yml")


def test_jmeter_runs_the_precise_throughput_timer_plan(tmp_path):
    argv = TOOLS["jmeter"].command(spec(tmp_path))
    assert argv[argv.index("-t") + 1].endswith("plan-rate.jmx") and "-Jrate=1000" in argv
    assert "PreciseThroughputTimer" in (TOOLS["jmeter"].folder / "plan-rate.jmx").read_text()


def test_k6_reports_iterations_it_dropped_during_a_stall():
    folder = FIXTURES / "k6-stall-host"
    meta = json.loads((folder / "meta.json").read_text())
    run = RunSpec(url=URL, vus=50, duration_s=20, out_dir=folder, cpus=2, rate_rps=1000)
    metrics = TOOLS["k6"].parse(ToolOutput(run, (folder / "stdout.txt").read_text(),
                                           (folder / "stderr.txt").read_text(), 0))
    dropped = json.loads((folder / "k6-summary.json").read_text())["metrics"]["dropped_iterations"]["count"]
    assert dropped > 0 and f"k6 dropped {dropped} iterations" in metrics.notes[0]
    # The stall reaches k6's max (1 s) but not its p99: dropped iterations are never timed.
    assert metrics.lat_max_ms == pytest.approx(meta["row"]["stall_actual_ms"], rel=0.1)
    assert metrics.lat_p99_ms < 100
    assert metrics.requests + dropped == pytest.approx(20_000, abs=20)
