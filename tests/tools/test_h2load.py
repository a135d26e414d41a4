"""h2load adapter: the command, and the parser on real runs (tests/fixtures/h2load/vu20-<runtime>/,
1 s runs so the per-request log stays small).

The parser reads h2load's per-request log; its figures are checked against h2load's own text
summary of the same run (requests done, req/s, the "time for request" min/mean/max) and against
Nginx's request count.
"""
import re
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, assert_ordered, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "h2load"
ADAPTER = discover()["h2load"]
CASES = cases("h2load")
UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def load(case: str, out_dir: Path | None = None) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case, out_dir)


def text_time_for_request(stdout: str) -> tuple[float, float, float]:
    """min, max, mean (ms) of h2load's 'time for request' line."""
    cells = re.search(r"^time for request:\s+(\S+)\s+(\S+)\s+(\S+)", stdout, re.MULTILINE).groups()
    values = []
    for cell in cells:
        number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", cell).groups()
        values.append(float(number) * UNIT_MS[unit])
    return tuple(values)


def test_command_holds_vus_http1_connections_for_the_duration(tmp_path):
    spec = command_spec(tmp_path)
    assert ADAPTER.command(spec) == ["h2load", "--h1", "-c", "20", "-t", "2", "-m", "1", "-D", "5",
                                     "--log-file", str(tmp_path / "h2load-requests.tsv"),
                                     "http://198.18.0.2:80/style.css"]
    one = RunSpec(url="http://198.18.0.2:80/style.css", vus=1, duration_s=5, out_dir=tmp_path, cpus=2)
    assert ADAPTER.command(one)[5] == "1"          # threads never exceed clients


def test_tls_stays_http1_and_keepalive_off_is_unsupported(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    # --h1 is --npn-list=http/1.1 as well: over TLS, ALPN offers HTTP/1.1 only; no certificate check.
    assert ADAPTER.command(command_spec(tmp_path, url=TLS_URL)) == [*plain[:-1], TLS_URL] and plain[1] == "--h1"
    assert ADAPTER.tls is True
    assert "-D" in ADAPTER.keepalive_off and "never exits" in ADAPTER.keepalive_off


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_h2loads_text_summary_and_nginx(case):
    output, meta = load(case)
    m = ADAPTER.parse(output)
    text = output.stdout
    done, succeeded = map(int, re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded",
                                         text).groups())
    text_rps = float(re.search(r"finished in \S+, ([\d.]+) req/s", text).group(1))
    assert m.requests == done == succeeded > 0 and m.errors == 0 and m.notes == []
    assert m.rps == pytest.approx(text_rps, rel=1e-4)
    assert m.measured_s == output.spec.duration_s
    text_min, text_max, text_mean = text_time_for_request(text)
    assert m.lat_min_ms == pytest.approx(text_min, abs=1e-3)
    assert m.lat_max_ms == pytest.approx(text_max, rel=1e-3)          # "27.15ms": 4 significant digits
    assert m.lat_mean_ms == pytest.approx(text_mean, rel=2e-3, abs=1e-3)
    assert_ordered(m)
    assert abs(meta["row"]["server_requests"] - m.requests) <= 0.02 * m.requests


def test_failed_streams_count_as_errors(tmp_path):
    output, _ = load("vu20-host", tmp_path)
    (tmp_path / "h2load-requests.tsv").write_text("1795395441087928\t200\t732\n1795395441087933\t-1\t746\n"
                                                  "1795395441087937\t404\t745\n")
    m = ADAPTER.parse(output)
    assert m.requests == 3 and m.errors == 2
    assert any("log holds 3" in n for n in m.notes)    # the summary text is the fixture's, not this log's


def test_missing_log_is_a_parse_error(tmp_path):
    output, _ = load("vu20-host", tmp_path)
    with pytest.raises(ParseError, match="per-request log"):
        ADAPTER.parse(output)


def test_missing_summary_is_a_parse_error():
    output, _ = load("vu20-host")
    with pytest.raises(ParseError, match="finished in"):
        ADAPTER.parse(ToolOutput(output.spec, output.stdout.split("finished in")[0], "", 1))


def test_garbled_log_is_a_parse_error(tmp_path):
    output, _ = load("vu20-host", tmp_path)
    (tmp_path / "h2load-requests.tsv").write_text("not\ta\tlog\n")
    with pytest.raises(ParseError):
        ADAPTER.parse(output)
