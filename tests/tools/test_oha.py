"""oha adapter: the command, and the parser on a real run (tests/fixtures/oha/vu20-host/, copied
from a harness run folder).

Parsed figures are checked against what is independent of the fields the parser reads in the same
raw output: oha's rounded `metrics.latency_ms` block, its response-time histogram, its own
requestsPerSec, and Nginx's request count (meta.json server_requests).
"""
import json
import shutil
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.tools.output import ParseError, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, assert_ordered, captured_run, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "oha"
ADAPTERS = discover()
CASE = "vu20-host"


def load(folder: Path) -> tuple[ToolOutput, dict]:
    return captured_run(folder)


def test_command_holds_vus_connections_for_the_duration(tmp_path):
    spec = command_spec(tmp_path)
    argv = ADAPTERS["oha"].command(spec)
    assert argv[0] == "/opt/lth/cargo/bin/oha"
    joined = " ".join(argv)
    assert "--no-tui" in argv and "-c 20 -z 5s" in joined
    assert f"--output-format json -o {tmp_path}/oha.json" in joined
    assert "--disable-keepalive" not in argv and argv[-1] == spec.url
    assert ADAPTERS["oha"].folder == TOOLS_DIR / "oha"


def test_keepalive_off_and_tls(tmp_path):
    adapter = ADAPTERS["oha"]
    plain = adapter.command(command_spec(tmp_path))
    assert "--insecure" not in plain
    off = adapter.command(command_spec(tmp_path, keepalive=False))
    assert off == [*plain[:6], "--disable-keepalive", *plain[6:]]
    tls = adapter.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert tls == [*plain[:6], "--disable-keepalive", "--insecure", *plain[6:-1], TLS_URL]


def test_version_is_read_from_oha_version_output():
    assert ADAPTERS["oha"].parse_version("oha 1.16.0\n") == "1.16.0"


def test_parser_agrees_with_ohas_other_fields_and_nginx():
    output, meta = load(FIXTURES / CASE)
    row = meta["row"]
    metrics = ADAPTERS["oha"].parse(output)
    data = json.loads((FIXTURES / CASE / "oha.json").read_text())
    responses = sum(data["statusCodeDistribution"].values())
    aborted = data["errorDistribution"].get("aborted due to deadline", 0)
    assert metrics.requests == responses == sum(data["responseTimeHistogram"].values())
    assert metrics.errors == 0
    # oha's own rate counts the deadline-aborted requests too; ours does not.
    assert data["summary"]["requestsPerSec"] * data["summary"]["total"] == pytest.approx(responses + aborted, abs=1)
    assert metrics.rps == pytest.approx(responses / data["summary"]["total"]) and metrics.rps > 0
    assert metrics.measured_s == pytest.approx(row["duration_s"], abs=0.1)
    # oha's second, rounded (ms, 3 decimals) latency block
    rounded = data["metrics"]["latency_ms"]
    for ours, theirs in (("lat_min_ms", "min"), ("lat_mean_ms", "mean"), ("lat_p50_ms", "p50"),
                         ("lat_p95_ms", "p95"), ("lat_p99_ms", "p99"), ("lat_max_ms", "max")):
        assert getattr(metrics, ours) == pytest.approx(rounded[theirs], abs=0.0006), ours
    assert_ordered(metrics)
    # Nginx counted the same requests, plus the ones oha aborted at the deadline.
    assert abs(row["server_requests"] - metrics.requests) <= 0.02 * metrics.requests
    assert row["server_requests"] - metrics.requests <= aborted
    assert any("aborted" in n for n in metrics.notes)
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_error_kinds_and_bad_statuses_count_as_errors(tmp_path):
    shutil.copy(FIXTURES / CASE / "meta.json", tmp_path)
    (tmp_path / "stdout.txt").write_text("")
    (tmp_path / "stderr.txt").write_text("")
    data = json.loads((FIXTURES / CASE / "oha.json").read_text())
    data["statusCodeDistribution"]["503"] = 7
    data["errorDistribution"]["connection reset"] = 3
    (tmp_path / "oha.json").write_text(json.dumps(data))
    output, _ = load(tmp_path)
    metrics = ADAPTERS["oha"].parse(output)
    assert metrics.errors == 10
    assert metrics.requests == sum(data["statusCodeDistribution"].values()) + 3


@pytest.mark.parametrize("content", [None, "{not json", "{}", json.dumps({"summary": {"total": 5.0},
                                                                          "latencyPercentiles": {},
                                                                          "statusCodeDistribution": {}})])
def test_missing_or_broken_report_is_a_parse_error(tmp_path, content):
    if content is not None:
        (tmp_path / "oha.json").write_text(content)
    spec = command_spec(tmp_path)
    with pytest.raises(ParseError):
        ADAPTERS["oha"].parse(ToolOutput(spec, "", "", 0))


def test_http3_is_told_and_its_window_is_the_duration_not_ohas_wait_for_quic_to_close(tmp_path):
    """A real h3 run through Caddy (acceptance, 2026-11-28, 5 s): oha's summary.total is 35 s, its wait for the
    server to close the QUIC connections (oha #835); the row's window is the -z duration from launch."""
    from dataclasses import replace
    output, meta = captured_run(FIXTURES / "h3-caddy")
    output = ToolOutput(replace(output.spec, url=TLS_URL, protocol="h3"), output.stdout, output.stderr, 0)
    metrics = ADAPTERS["oha"].parse(output)
    responses = sum(json.loads((FIXTURES / "h3-caddy" / "oha.json").read_text())["statusCodeDistribution"].values())
    assert metrics.measured_s == 5.0 and metrics.load_start_s == 0.0 and metrics.requests == responses
    assert metrics.rps == pytest.approx(responses / 5.0) and "oha #835" in " ".join(metrics.notes)
    assert metrics.requests <= meta["row"]["server_requests"] <= metrics.requests + 20     # the 20 cut at -z
    argv = ADAPTERS["oha"].command(replace(command_spec(tmp_path, url=TLS_URL), protocol="h3"))
    assert argv[argv.index("--http-version") + 1] == "3" and "--insecure" in argv and "--http2" not in argv
    assert ADAPTERS["oha"].wind_down_s("h3") >= 35 and ADAPTERS["oha"].wind_down_s("h2") == 0
    plain = ADAPTERS["oha"].parse(ToolOutput(replace(output.spec, protocol="h2"), output.stdout, output.stderr, 0))
    assert plain.measured_s == pytest.approx(35.03, abs=0.01) and plain.load_start_s is None   # only h3 is cut
