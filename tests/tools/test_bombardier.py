"""bombardier adapter: the command, and the parser on real runs (tests/fixtures/bombardier/vu20-<runtime>/).

bombardier prints one JSON document (-o json -p r -l). Parsed figures are checked against the
parts of it the parser does not read for them: the echoed spec (what the command asked for), its
separately sampled requests-per-second statistics, and Nginx's request count.
"""
import json
from pathlib import Path

import pytest

from harness.tools.output import ParseError, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bombardier"
ADAPTER = discover()["bombardier"]
CASES = cases("bombardier")


def load(case: str) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case)


def test_command_holds_vus_connections_for_the_duration(tmp_path):
    spec = command_spec(tmp_path)
    assert ADAPTER.command(spec) == ["/opt/lth/bin/bombardier", "-c", "20", "-d", "5s", "-t", "10s",
                                     "-o", "json", "-p", "r", "-l", "http://198.18.0.2:80/style.css"]


def test_keepalive_off_sends_connection_close_and_tls_skips_verification(tmp_path):
    # --disableKeepAlives is ignored by the fasthttp client: bombardier's help says to send the header.
    assert ADAPTER.command(command_spec(tmp_path, url=TLS_URL, keepalive=False)) == [
        "/opt/lth/bin/bombardier", "-c", "20", "-d", "5s", "-t", "10s", "-H", "Connection: close", "--insecure",
        "-o", "json", "-p", "r", "-l", TLS_URL]
    assert "--insecure" not in ADAPTER.command(command_spec(tmp_path, keepalive=False))


def test_version_is_read_from_bombardier_version_output():
    assert ADAPTER.parse_version("bombardier version v1.2.6 linux/amd64\n") == "1.2.6"


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_bombardiers_json_and_nginx(case):
    output, meta = load(case)
    row = meta["row"]
    document = json.loads(output.stdout)
    spec, result = document["spec"], document["result"]
    # bombardier echoes what it ran: the command's VUs, duration, timeout, keep-alive client.
    assert spec["numberOfConnections"] == row["vus"] and spec["testDurationSeconds"] == row["duration_s"]
    assert spec["testType"] == "timed" and spec["timeoutSeconds"] == 10 and spec["client"] == "fasthttp"
    m = ADAPTER.parse(output)
    assert m.requests == result["req2xx"] and m.errors == 0
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests
    assert m.measured_s == result["timeTakenSeconds"]
    assert row["duration_s"] <= m.measured_s < row["duration_s"] + 0.5
    # bombardier's own rps statistics come from counters sampled every ~20 ms, not from the total.
    assert m.rps == pytest.approx(result["rps"]["mean"], rel=0.05) and m.rps > 0
    for p in (50, 75, 90, 95, 99):
        assert getattr(m, f"lat_p{p}_ms") == result["latency"]["percentiles"][str(p)] / 1000
    assert m.lat_mean_ms == pytest.approx(result["latency"]["mean"] / 1000)
    assert m.lat_min_ms is None                     # bombardier does not report a minimum
    values = [m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p95_ms, m.lat_p99_ms, m.lat_max_ms]
    assert values == sorted(values)
    assert m.lat_mean_ms <= m.lat_max_ms
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(m, name) == pytest.approx(row[name]), name


def test_failed_requests_are_errors_and_still_requests():
    output, _ = load("vu20-host")
    document = json.loads(output.stdout)
    document["result"].update(req4xx=5, req5xx=2, others=3,
                              errors=[{"description": "the server closed connection before returning the first response byte", "count": 3}])
    m = ADAPTER.parse(ToolOutput(output.spec, json.dumps(document), "", 0))
    assert m.errors == 5 + 2 + 3
    assert m.requests == document["result"]["req2xx"] + 10


@pytest.mark.parametrize("stdout", [
    "",
    "Bombarding http://198.18.0.2:80/style.css for 5s using 20 connection(s)\n",
    '{"spec":{},"result":{"req2xx":1}}',            # no latency block: run without -l
])
def test_output_without_the_json_result_is_a_parse_error(stdout):
    output, _ = load("vu20-host")
    with pytest.raises(ParseError):
        ADAPTER.parse(ToolOutput(output.spec, stdout, "", 0))
