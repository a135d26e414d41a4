"""httperf adapter (the example of adding a tool): the command, and the parser on a real run
(tests/fixtures/httperf/vu20-host/), checked against what the parser does not use: httperf's own
request rate line and Nginx's count of the same run."""
import re

import pytest

from conftest import FIXTURES, TLS_URL, captured_run, cases, command_spec, with_stdout
from harness.tools.output import ParseError
from harness.tools.registry import discover

ADAPTER = discover()["httperf"]


def test_command_is_wrapped_in_timeout_that_keeps_httperfs_exit_status(tmp_path):
    argv = ADAPTER.command(command_spec(tmp_path, vus=20, duration_s=5))
    assert argv[:5] == ["timeout", "--preserve-status", "-s", "INT", "5"]
    assert argv[argv.index("--num-conns") + 1] == "20" and argv[argv.index("--server") + 1] == "198.18.0.2"


def test_tls_adds_ssl_and_keepalive_off_says_why_not(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    argv = ADAPTER.command(command_spec(tmp_path, url=TLS_URL))
    assert "--ssl" not in plain and argv[argv.index("--port") + 1] == "443"
    assert argv[argv.index("--uri") + 2] == "--ssl"
    assert ADAPTER.tls is True and "--num-calls 1" in ADAPTER.keepalive_off


@pytest.mark.parametrize("case", cases("httperf"))
def test_parser_agrees_with_httperfs_request_rate_and_nginx(case):
    output, meta = captured_run(FIXTURES / "httperf" / case)
    metrics = ADAPTER.parse(output)
    own_rate = float(re.search(r"^Request rate: ([\d.]+) req/s", output.stdout, re.M).group(1))
    assert metrics.rps == pytest.approx(own_rate, rel=0.01)
    assert metrics.requests == meta["row"]["server_requests"] and metrics.errors == 0
    assert 0 < metrics.lat_mean_ms < 100 and metrics.lat_p50_ms is None


def test_output_without_a_summary_is_a_parse_error():
    output, _ = captured_run(FIXTURES / "httperf" / cases("httperf")[0])
    with pytest.raises(ParseError, match="no summary"):
        ADAPTER.parse(with_stdout(output, output.stdout.split("Total:")[0]))
