"""ab adapter: the parser on real runs (tests/fixtures/ab/vu20-<runtime>/).

Each parsed figure is checked against what ab printed in its human-readable text, so a parser that
reads the wrong field fails.
"""
import re

import pytest

from harness.adapter import ParseError, RunSpec, ToolOutput
from harness.registry import discover
from conftest import FIXTURES, assert_ordered, captured_run, cases

AB = discover()["ab"]
CASES = cases("ab")


def load(case: str) -> ToolOutput:
    return captured_run(FIXTURES / "ab" / case)[0]


@pytest.mark.parametrize("case", CASES)
def test_ab_parser_agrees_with_abs_text_summary(case):
    output = load(case)
    metrics = AB.parse(output)
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
    output = load(CASES[0])
    moved = ToolOutput(RunSpec(output.spec.url, output.spec.vus, output.spec.duration_s, tmp_path, 2),
                       output.stdout, "", 0)
    with pytest.raises(ParseError, match="percentile"):
        AB.parse(moved)


def test_abs_row_has_no_mean_and_the_resolution_columns():
    """The re-captured host run's row (meta.json, written by the runner)."""
    output, meta = captured_run(FIXTURES / "ab" / "vu20-host")
    row, metrics = meta["row"], AB.parse(output)
    assert row["lat_mean_ms"] is None and row["timing_resolution_ms"] == 0.001 and row["co_corrected"] is False
    assert row["lat_p50_ms"] == metrics.lat_p50_ms > 0 and row["notes"] == "; ".join(metrics.notes)
