"""drill adapter: the command and its wrapper, and the parser on a real run
(tests/fixtures/drill/vu20-host/, copied from a 5-second harness run folder: run.sh's calibration
notes, the --stats summary, the window marks and meta.json with Nginx's count).

Parsed figures are checked against drill's own per-step summary lines (the parser reads the global
ones), the iteration count run.sh gave it, and Nginx's count (real run + calibration runs).
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.tools.output import ParseError, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, command_spec

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "drill" / "vu20-host"
DRILL = discover()["drill"]


def load(folder: Path) -> tuple[ToolOutput, dict]:
    return captured_run(folder, launched_at=json.loads((folder / "meta.json").read_text())["launched_at"])


def test_command_runs_the_quiet_wrapper_with_base_and_path(tmp_path):
    spec = command_spec(tmp_path)
    assert DRILL.command(spec) == [str(TOOLS_DIR / "drill" / "run.sh"), str(tmp_path), "http://198.18.0.2:80",
                                   "/style.css", "20", "5"]
    run = (TOOLS_DIR / "drill" / "run.sh").read_text()
    assert "--quiet --stats --nanosec" in run and DRILL.sampled_process == "drill"


def test_keepalive_off_and_tls_are_run_sh_options(tmp_path):
    argv = DRILL.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert argv == [str(TOOLS_DIR / "drill" / "run.sh"), str(tmp_path), "https://198.18.0.2:443", "/style.css", "20", "5",
                    "--close", "--no-check-certificate"]
    run = (TOOLS_DIR / "drill" / "run.sh").read_text()
    # --close adds the header to the plan's request; the drill option reaches the calibration and the real run.
    assert "--close) HEADERS=$'\\n      headers:\\n        Connection: close'" in run
    assert "url: '$URLPATH'$HEADERS" in run and run.count('"${DRILL_OPTIONS[@]}"') == 2


def test_version_is_read_from_drill_version_output():
    assert DRILL.parse_version("drill 0.9.1\n") == "0.9.1"


def step_line(text: str, label: str) -> float:
    return float(re.search(rf"^lth\s+{re.escape(label)}\s+([\d.]+)", text, re.MULTILINE).group(1))


def test_parser_agrees_with_drills_step_summary_and_nginx():
    output, meta = load(FIXTURE)
    row, metrics = meta["row"], DRILL.parse(output)
    stats = (FIXTURE / "drill-stats.txt").read_text()
    iterations = int(re.search(r"iterations: (\d+)", (FIXTURE / "benchmark.yml").read_text()).group(1))
    assert metrics.requests == step_line(stats, "Total requests") == iterations
    assert metrics.errors == step_line(stats, "Failed requests") == 0
    assert metrics.lat_p50_ms == step_line(stats, "Median time per request") / 1e6
    assert metrics.lat_mean_ms == step_line(stats, "Average time per request") / 1e6
    assert metrics.lat_p99_ms == step_line(stats, "99.0'th percentile") / 1e6
    assert metrics.lat_max_ms == step_line(stats, "Max time per request") / 1e6
    assert metrics.lat_min_ms is None and metrics.lat_p95_ms is None
    # drill's own "Time taken" (1 decimal) lies within run.sh's marks around the process.
    taken = float(re.search(r"^Time taken for tests\s+([\d.]+)", stats, re.MULTILINE).group(1))
    assert taken - 0.05 <= metrics.measured_s <= taken + 0.2
    assert metrics.rps == pytest.approx(metrics.requests / metrics.measured_s)
    # Nginx counted the real run and the calibration runs, nothing else.
    calibration = sum(int(l.split()[1]) for l in (FIXTURE / "drill-calibration.txt").read_text().splitlines())
    assert row["server_requests"] == metrics.requests + calibration
    assert metrics.notes == [f"Nginx's count includes the {calibration} requests of the calibration runs "
                             "before the load window"]
    # The load window starts after the calibration runs.
    assert 0 < metrics.load_start_s < row["duration_s"]
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_unfinished_run_or_missing_marks_are_parse_errors(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    output, _ = load(folder)
    (folder / "drill-window.txt").write_text("start 100.0\n")
    with pytest.raises(ParseError, match="start/end"):
        DRILL.parse(output)
    (folder / "drill-stats.txt").write_text("Concurrency 20\nIterations 40578\n")
    with pytest.raises(ParseError, match="no --stats summary"):
        DRILL.parse(output)
    (folder / "drill-stats.txt").unlink()
    with pytest.raises(ParseError, match="missing"):
        DRILL.parse(output)
