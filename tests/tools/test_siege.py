"""siege adapter: the command, and the parser on real runs (tests/fixtures/siege/vu20-<runtime>/).

siege's -j JSON summary is all it prints; the parsed figures are checked against the fields the
parser does not use for them (transaction_rate, response_time, successful_transactions) and
against Nginx's own request count from the same run.
"""
import json
from pathlib import Path

import pytest

from harness.tools.output import ParseError, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "siege"
ADAPTER = discover()["siege"]
CASES = cases("siege")


def load(case: str) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case)


def summary(output: ToolOutput) -> dict:
    return json.loads(output.stdout)


def test_command_runs_vus_keep_alive_users_in_benchmark_mode(tmp_path):
    spec = command_spec(tmp_path)
    assert ADAPTER.command(spec) == ["siege", "-R", str(ADAPTER.folder / "siegerc"), "-b", "-j", "-c", "20",
                                     "-t", "5S", "http://198.18.0.2:80/style.css"]


def settings(rc: str) -> dict[str, str]:
    return dict(line.split(" = ", 1) for line in (ADAPTER.folder / rc).read_text().splitlines()
                if line and not line.startswith("#"))


def test_keepalive_off_runs_siegerc_close_and_tls_needs_only_the_url(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    off = ADAPTER.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert off == [plain[0], "-R", str(ADAPTER.folder / "siegerc-close"), *plain[3:-1], TLS_URL]
    # The same settings as siegerc but connection = close.
    assert settings("siegerc-close") == settings("siegerc") | {"connection": "close"}


def test_siegerc_keeps_connections_open_and_lifts_the_user_limit():
    values = settings("siegerc")
    assert values["connection"] == "keep-alive"
    assert values["protocol"] == "HTTP/1.1"
    assert values["benchmark"] == "true" and values["verbose"] == "false" and values["parser"] == "false"
    assert int(values["limit"]) >= 1000          # the shootout goes up to 1000 VUs; siege's default is 255


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_sieges_own_rate_mean_and_nginx(case):
    output, meta = load(case)
    data, row = summary(output), meta["row"]
    m = ADAPTER.parse(output)
    assert m.requests == data["successful_transactions"] + data["failed_transactions"] > 0
    assert m.errors == 0 and data["availability"] == 100.0
    assert m.rps > 0
    assert m.rps == pytest.approx(data["transaction_rate"], rel=2e-3)   # elapsed has 2 decimals
    assert m.measured_s == data["elapsed_time"]
    # response_time is the same mean, printed in seconds with 2 decimals (0.00 below 5 ms).
    assert abs(m.lat_mean_ms - data["response_time"] * 1000) <= 5.0
    # Little's law: VUs users busy all the time give mean <= VUs / rps (less the client's own time).
    assert 0.5 * m.rps ** -1 * row["vus"] * 1000 < m.lat_mean_ms <= row["vus"] / m.rps * 1000 * 1.002
    assert m.lat_max_ms == data["longest_transaction"] * 1000
    assert m.lat_p50_ms is m.lat_p75_ms is m.lat_p90_ms is m.lat_p95_ms is m.lat_p99_ms is None
    # shortest_transaction is 0.00 s in these runs: below siege's 10 ms clock ticks, so left empty.
    assert data["shortest_transaction"] == 0 and m.lat_min_ms is None
    assert any("10 ms resolution" in n for n in m.notes)
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests


@pytest.mark.parametrize("case", CASES)
def test_an_early_stop_is_noted(case):
    output, _ = load(case)
    m = ADAPTER.parse(output)
    early = m.measured_s < 0.98 * output.spec.duration_s
    assert early == any("of the requested" in n for n in m.notes)


def test_the_parser_reads_the_last_json_block_after_notices():
    output, _ = load("vu20-host")
    noisy = ToolOutput(output.spec, "** SIEGE 4.0.7\n** Preparing 20 concurrent users\n" + output.stdout, "", 0)
    assert ADAPTER.parse(noisy).requests == summary(output)["transactions"]


@pytest.mark.parametrize("stdout", ["", "Lifting the server siege...\n", '{\t"transactions": 12,\n'])
def test_missing_or_truncated_summary_is_a_parse_error(stdout):
    output, _ = load("vu20-host")
    with pytest.raises(ParseError):
        ADAPTER.parse(ToolOutput(output.spec, stdout, "", 0))
