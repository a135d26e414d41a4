"""drill adapter: the command and its wrapper, and the parser on a real run
(tests/fixtures/drill/vu20-host/, copied from a 1-second harness run folder; drill-requests.log is
stored gzip-compressed to keep the fixture small and unpacked into a temporary run folder here).

Parsed figures are checked against an independent reading of the per-request lines (a plain
split and nearest-rank by hand) and against Nginx's request count (meta.json server_requests).
"""
import gzip
import json
import math
import shutil
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.adapter import ParseError, RunSpec, ToolOutput
from harness.registry import discover

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "drill"
ADAPTERS = discover()
DRILL = ADAPTERS["drill"]


@pytest.fixture
def run_dir(tmp_path) -> Path:
    folder = tmp_path / "vu20-host"
    shutil.copytree(FIXTURES / "vu20-host", folder)
    packed = folder / "drill-requests.log.gz"
    (folder / "drill-requests.log").write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    return folder


def load(folder: Path) -> tuple[ToolOutput, dict]:
    meta = json.loads((folder / "meta.json").read_text())
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=meta["row"]["vus"],
                   duration_s=meta["row"]["duration_s"], out_dir=folder, cpus=2)
    return ToolOutput(spec, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text(), 0), meta


def test_command_runs_the_wrapper_with_base_and_path(tmp_path):
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=20, duration_s=5, out_dir=tmp_path, cpus=2)
    assert DRILL.command(spec) == [str(TOOLS_DIR / "drill" / "run.sh"), str(tmp_path), "http://198.18.0.2:80",
                                   "/style.css", "20", "5"]
    run = (TOOLS_DIR / "drill" / "run.sh").read_text()
    assert 'timeout --signal=TERM "$DURATION"' in run and "--nanosec" in run and "--quiet" not in run
    assert '[ "$rc" -eq 124 ] && rc=0' in run


def test_version_is_read_from_drill_version_output():
    assert DRILL.parse_version("drill 0.9.1\n") == "0.9.1"


def test_parser_agrees_with_the_raw_lines_and_nginx(run_dir):
    output, meta = load(run_dir)
    row = meta["row"]
    metrics = DRILL.parse(output)
    lines = [l.split() for l in (run_dir / "drill-requests.log").read_text().splitlines() if l.startswith("lth ")]
    assert all(parts[2] == "200" and parts[-1].endswith("ns") for parts in lines)
    values = sorted(int(parts[-1][:-2]) / 1e6 for parts in lines)
    assert metrics.requests == len(values) and metrics.errors == 0
    for p in (50, 75, 90, 95, 99):
        assert getattr(metrics, f"lat_p{p}_ms") == pytest.approx(values[math.ceil(p / 100 * len(values)) - 1]), p
    assert metrics.lat_min_ms == values[0] and metrics.lat_max_ms == values[-1]
    assert metrics.lat_mean_ms == pytest.approx(sum(values) / len(values))
    # Nginx also counted the requests in flight when `timeout` ended drill (at most one per VU).
    assert 0 <= row["server_requests"] - metrics.requests <= row["vus"]
    assert abs(row["server_requests"] - metrics.requests) <= 0.02 * metrics.requests
    assert row["duration_s"] <= metrics.measured_s <= row["duration_s"] + 0.2
    assert metrics.rps == pytest.approx(metrics.requests / metrics.measured_s) and metrics.rps > 0
    assert "Concurrency 20" in (run_dir / "drill-requests.log").read_text()[:200]
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_errors_statuses_and_colours(tmp_path):
    (tmp_path / "drill-requests.log").write_text(
        "Concurrency 2\n\n"
        "lth                       http://h:80/x 200 OK 1000000ns\n"
        "\x1b[32mlth                      \x1b[0m \x1b[1;34mhttp://h:80/x\x1b[0m \x1b[33m200 OK\x1b[0m \x1b[36m3000000ns\x1b[0m\n"
        "lth                       http://h:80/x 404 Not Found 2000000ns\n"
        "Error connecting 'http://h:80/x': reqwest::Error { kind: Request }\n"
        "lth                       http://h:80/x 200 OK 12")          # cut off by the kill
    (tmp_path / "drill-window.txt").write_text("start 100.0\nend 102.0\n")
    spec = RunSpec(url="http://h:80/x", vus=2, duration_s=2, out_dir=tmp_path, cpus=2)
    metrics = DRILL.parse(ToolOutput(spec, "", "", 0))
    assert metrics.requests == 4 and metrics.errors == 2
    assert (metrics.lat_min_ms, metrics.lat_max_ms) == (1.0, 3.0)
    assert metrics.rps == 2.0 and metrics.measured_s == 2.0


def test_missing_or_empty_log_is_a_parse_error(tmp_path):
    spec = RunSpec(url="http://h:80/x", vus=2, duration_s=2, out_dir=tmp_path, cpus=2)
    with pytest.raises(ParseError, match="drill-requests.log"):
        DRILL.parse(ToolOutput(spec, "", "", 0))
    (tmp_path / "drill-requests.log").write_text("Concurrency 2\nIterations 1000000000\n")
    with pytest.raises(ParseError, match="no request"):
        DRILL.parse(ToolOutput(spec, "", "", 0))
