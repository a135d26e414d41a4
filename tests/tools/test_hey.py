"""hey adapter: the command, and the parser on real runs (tests/fixtures/hey/vu20-<runtime>/).

hey prints either its text summary or (-o csv) a per-request CSV, never both; the adapter reads the
summary (README.md says why). Parsed figures are checked against parts of the same text the parser
does not use for them (the response-time histogram, Requests/sec x Total) and against Nginx's count.
"""
import re
from pathlib import Path

import pytest

from harness.tools.output import ParseError, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, assert_ordered, captured_run, cases, command_spec, with_stdout

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hey"
ADAPTER = discover()["hey"]
CASES = cases("hey")


def load(case: str) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case)


def test_command_holds_vus_connections_for_the_duration(tmp_path):
    spec = command_spec(tmp_path)
    assert ADAPTER.command(spec) == ["/opt/lth/bin/hey", "-z", "5s", "-c", "20", "-t", "10",
                                     "http://198.18.0.2:80/style.css"]


def test_keepalive_off_and_tls(tmp_path):
    assert "-disable-keepalive" not in ADAPTER.command(command_spec(tmp_path))
    assert ADAPTER.command(command_spec(tmp_path, keepalive=False)) == [
        "/opt/lth/bin/hey", "-z", "5s", "-c", "20", "-disable-keepalive", "-t", "10", "http://198.18.0.2:80/style.css"]
    # hey never verifies certificates (InsecureSkipVerify in its transport): the https URL is all it needs.
    assert ADAPTER.command(command_spec(tmp_path, url=TLS_URL)) == [
        "/opt/lth/bin/hey", "-z", "5s", "-c", "20", "-t", "10", TLS_URL]
    assert ADAPTER.keepalive_off is True and ADAPTER.tls is True


def test_version_comes_from_the_script_install_sh_writes():
    assert ADAPTER.version_command == ["/opt/lth/bin/hey-version"]
    assert ADAPTER.parse_version("hey v0.1.5 (github.com/rakyll/hey)\n") == "0.1.5"
    assert '> "$BIN-version"' in (ADAPTER.folder / "install.sh").read_text()   # BIN=/opt/lth/bin/hey


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_heys_histogram_its_rate_and_nginx(case):
    output, meta = load(case)
    row = meta["row"]
    m = ADAPTER.parse(output)
    text = output.stdout
    histogram = [(float(mark), int(n)) for mark, n in re.findall(r"^\s+([\d.]+) \[(\d+)\]\t\|", text, re.MULTILINE)]
    assert len(histogram) == 11
    # The histogram counts every kept latency; the parser counted the status codes.
    assert m.requests == sum(n for _, n in histogram)
    total_s = float(re.search(r"Total:\s+([\d.]+) secs", text).group(1))
    assert abs(m.requests - m.rps * total_s) <= 2
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests
    assert m.errors == 0 and m.measured_s == total_s and m.load_start_s == 0.0
    assert m.rps > 0
    # The histogram's first and last marks are hey's fastest and slowest latencies (3 decimals, s).
    assert histogram[0][0] == pytest.approx(round(m.lat_min_ms / 1000, 3), abs=1e-3)
    assert histogram[-1][0] == pytest.approx(round(m.lat_max_ms / 1000, 3), abs=1e-3)
    assert_ordered(m)
    p10, p25 = (float(re.search(rf"{p}%+ in ([\d.]+) secs", text).group(1)) * 1000 for p in (10, 25))
    assert p10 <= p25 <= m.lat_p50_ms
    assert m.lat_min_ms <= m.lat_mean_ms <= m.lat_max_ms
    # What the harness recorded for this run is what the parser gives now.
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(m, name) == pytest.approx(row[name]), name
    assert m.notes == ["Fastest printed as 0.0000 s: below hey's 0.1 ms resolution"]


def test_errors_count_transport_errors_and_bad_statuses():
    output, _ = load("vu20-host")
    ok = ADAPTER.parse(output)
    text = output.stdout.replace(
        "Status code distribution:\n", "Status code distribution:\n  [404]\t7 responses\n"
    ).rstrip("\n") + ("\n\nError distribution:\n  [3]\tGet \"http://198.18.0.2:80/style.css\": context deadline exceeded"
                      "\n  [2]\tGet \"http://198.18.0.2:80/style.css\": EOF\n")
    m = ADAPTER.parse(with_stdout(output, text))
    assert m.errors == 7 + 3 + 2
    assert m.requests == ok.requests + 7 + 3 + 2


def test_past_a_million_results_counts_come_from_the_rate_and_the_mean_is_corrected():
    """hey keeps latencies and status codes of its first 1,000,000 results only, but its Average
    sums every response and divides by the kept ones."""
    output, _ = load("vu20-host")
    text = re.sub(r"\[200\]\t\d+ responses", "[200]\t1000000 responses", output.stdout)
    text = re.sub(r"Total:\t[\d.]+ secs", "Total:\t100.0000 secs", text)
    text = re.sub(r"Requests/sec:\t[\d.]+", "Requests/sec:\t40000.0000", text)
    text = re.sub(r"Average:\t[\d.]+ secs", "Average:\t0.0020 secs", text)
    m = ADAPTER.parse(with_stdout(output, text))
    assert m.requests == 4_000_000 and m.rps == 40000.0
    assert m.lat_mean_ms == pytest.approx(2.0 * 1_000_000 / 4_000_000)
    assert any("first 1,000,000 responses of 4,000,000" in n for n in m.notes)


@pytest.mark.parametrize("stdout", [
    "",
    "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n"
    "0.0015,0.0007,0.0000,0.0000,0.0007,0.0000,200,0.0042\n",
    "Error: could not connect\n",
])
def test_output_without_heys_summary_is_a_parse_error(stdout):
    output, _ = load("vu20-host")
    with pytest.raises(ParseError):
        ADAPTER.parse(with_stdout(output, stdout))
