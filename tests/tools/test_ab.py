"""ab adapter: the parser on real runs (tests/fixtures/ab/vu20-<runtime>/).

Each parsed figure is checked against what ab printed in its human-readable text, so a parser that
reads the wrong field fails.
"""
import re

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import FIXTURES, TLS_URL, assert_ordered, captured_run, cases, command_spec, with_stdout

AB = discover()["ab"]
CASES = cases("ab")


def load(case: str) -> ToolOutput:
    return captured_run(FIXTURES / "ab" / case)[0]


def test_command_holds_vus_keepalive_connections_for_the_duration(tmp_path):
    assert AB.command(command_spec(tmp_path)) == [
        "ab", "-k", "-q", "-r", "-c", "20", "-t", "5", "-n", "500000", "-e", f"{tmp_path}/ab-percentiles.csv",
        "http://198.18.0.2:80/style.css"]


def test_keepalive_off_drops_k_and_tls_needs_only_the_url(tmp_path):
    keepalive = AB.command(command_spec(tmp_path, url=TLS_URL))
    assert keepalive[1] == "-k" and keepalive[-1] == TLS_URL     # ab does not verify certificates
    assert AB.command(command_spec(tmp_path, url=TLS_URL, keepalive=False)) == [keepalive[0], *keepalive[2:]]


def test_without_keepalive_no_keepalive_note():
    """Without -k ab prints no 'Keep-Alive requests' line: no note that requests went without keep-alive."""
    output = load("vu20-host")
    text = re.sub(r"Keep-Alive requests:.*\n", "", output.stdout)
    assert "only 0 of" in " ".join(AB.parse(with_stdout(output, text)).notes)
    off = ToolOutput(RunSpec(output.spec.url, output.spec.vus, output.spec.duration_s, output.spec.out_dir, 2,
                             keepalive=False), text, "", 0)
    assert not any("keep-alive" in note for note in AB.parse(off).notes)


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
