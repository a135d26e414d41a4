"""Parsers on outputs captured from real runs (tests/fixtures/<tool>/<case>/, copied from a run folder).

Each parsed figure is checked against what the same tool printed in its human-readable text,
so a parser that reads the wrong field fails.
"""
import json
import re
from pathlib import Path

import pytest

from harness.adapter import ParseError, RunSpec, ToolOutput
from harness.registry import discover

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ADAPTERS = discover()


def load(tool: str, case: str) -> ToolOutput:
    folder = FIXTURES / tool / case
    meta = json.loads((folder / "meta.json").read_text())
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=meta["row"]["vus"],
                   duration_s=meta["row"]["duration_s"], out_dir=folder, cpus=2)
    return ToolOutput(spec, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text(), 0)


def cases(tool: str) -> list[str]:
    return sorted(p.name for p in (FIXTURES / tool).iterdir())


def assert_ordered(m) -> None:
    values = [m.lat_min_ms, m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p95_ms, m.lat_p99_ms, m.lat_max_ms]
    assert all(v is not None for v in values)
    assert values == sorted(values)


def test_wrk_without_summary_line_is_a_parse_error():
    output = load("wrk", cases("wrk")[0])
    truncated = ToolOutput(output.spec, output.stdout.split("LTH_JSON")[0], "", 0)
    with pytest.raises(ParseError):
        ADAPTERS["wrk"].parse(truncated)


@pytest.mark.parametrize("case", cases("ab"))
def test_ab_parser_agrees_with_abs_text_summary(case):
    output = load("ab", case)
    metrics = ADAPTERS["ab"].parse(output)
    text = output.stdout
    assert metrics.requests == int(re.search(r"Complete requests:\s+(\d+)", text).group(1))
    assert metrics.rps == float(re.search(r"Requests per second:\s+([\d.]+)", text).group(1))
    # ab's text table gives whole milliseconds; the CSV the parser reads has microseconds.
    for pct, value in re.findall(r"^\s+(50|75|90|95|99)%\s+(\d+)", text, re.MULTILINE):
        assert abs(getattr(metrics, f"lat_p{pct}_ms") - int(value)) <= 1
    longest = int(re.search(r"100%\s+(\d+) \(longest", text).group(1))
    assert abs(metrics.lat_max_ms - longest) <= 1
    assert metrics.errors == 0
    # ab's "Time per request" is concurrency x time / requests: noted, never published as a mean.
    computed = re.search(r"Time per request:\s+([\d.]+) \[ms\] \(mean\)", text).group(1)
    assert metrics.lat_mean_ms is None
    assert metrics.notes == [f"ab's 'Time per request' {computed} ms is computed (concurrency x time taken / "
                             "requests), not measured: the mean is left empty"]
    assert_ordered(metrics)


def test_ab_without_percentile_file_is_a_parse_error(tmp_path):
    output = load("ab", cases("ab")[0])
    moved = ToolOutput(RunSpec(output.spec.url, output.spec.vus, output.spec.duration_s, tmp_path, 2),
                       output.stdout, "", 0)
    with pytest.raises(ParseError, match="percentile"):
        ADAPTERS["ab"].parse(moved)


def test_abs_row_has_no_mean_and_the_resolution_columns():
    """The re-captured host run's row (meta.json, written by the runner)."""
    import json
    row = json.loads((FIXTURES / "ab" / "vu20-host" / "meta.json").read_text())["row"]
    metrics = ADAPTERS["ab"].parse(load("ab", "vu20-host"))
    assert row["lat_mean_ms"] is None and row["timing_resolution_ms"] == 0.001 and row["co_corrected"] is False
    assert row["lat_p50_ms"] == metrics.lat_p50_ms > 0 and row["notes"] == "; ".join(metrics.notes)
