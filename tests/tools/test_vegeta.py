"""vegeta adapter: the command, and the parser on real runs (tests/fixtures/vegeta/vu20-<runtime>/).

The parser reads the per-request log (vegeta encode -to csv, gzipped); every figure is checked
against vegeta's own JSON summary of the same results (vegeta report -type=json): counts, min,
max and mean exactly, percentiles within t-digest accuracy, the load window to the nanosecond.
"""
import gzip
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, assert_ordered, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "vegeta"
ADAPTER = discover()["vegeta"]
CASES = cases("vegeta")


def load(case: str, folder: Path | None = None, launched_at: float = 0.0) -> tuple[ToolOutput, dict]:
    return captured_run(folder or FIXTURES / case, launched_at=launched_at)


def report(case: str) -> dict:
    return json.loads((FIXTURES / case / "vegeta-report.json").read_text())


def epoch_ns(rfc3339: str) -> int:
    """vegeta's timestamps carry nanoseconds, which datetime cannot hold."""
    whole, fraction = rfc3339.rstrip("Z").split(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=timezone.utc).timestamp()
    return int(seconds) * 10**9 + int(fraction.ljust(9, "0"))


def test_command_is_a_closed_model_with_vus_workers_and_connections(tmp_path):
    spec = command_spec(tmp_path)
    argv = ADAPTER.command(spec)
    assert argv[:2] == ["sh", "-c"]
    assert argv[3:] == ["vegeta", "http://198.18.0.2:80/style.css", "20", "5", str(tmp_path), "0"]
    script = argv[2]
    for flag in ('-rate="$5"', '-workers="$2"', '-max-workers="$2"', '-max-connections="$2"', '-duration="$3s"',
                 "-max-body=0", "report -type=json", "encode -to csv", "cut -d, -f1-3"):
        assert flag in script, flag
    assert script.index(" attack ") < script.index(" report ") < script.index(" encode ") < script.index("rm -f")


def test_a_rate_run_passes_the_rate_and_keeps_vus_as_the_cap(tmp_path):
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=20, duration_s=5, out_dir=tmp_path, cpus=2, rate_rps=1000)
    assert ADAPTER.command(spec)[3:] == ["vegeta", "http://198.18.0.2:80/style.css", "20", "5", str(tmp_path), "1000"]


def test_keepalive_off_and_tls_are_attack_flags(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))[2]
    assert "-keepalive" not in plain and "-insecure" not in plain
    off = ADAPTER.command(command_spec(tmp_path, keepalive=False))[2]
    assert off == plain.replace(" attack -rate=", " attack -keepalive=false -rate=")
    argv = ADAPTER.command(command_spec(tmp_path, url=TLS_URL))
    # -http2=false: HTTP/1.1 over TLS as over TCP, even if the server offers h2.
    assert argv[2] == plain.replace(" attack -rate=", " attack -insecure -http2=false -rate=") and argv[4] == TLS_URL


def test_version_is_read_from_vegeta_version_output():
    text = "Version: v12.13.0\nCommit: \nRuntime: go1.26.8 linux/amd64\nDate: \n"
    assert ADAPTER.parse_version(text) == "12.13.0"


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_vegetas_json_report_and_nginx(case):
    output, meta = load(case)
    row, rep = meta["row"], report(case)
    m = ADAPTER.parse(output)
    lat = rep["latencies"]                          # nanoseconds
    assert m.requests == rep["requests"] == sum(rep["status_codes"].values())
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests
    assert m.errors == round(rep["requests"] * (1 - rep["success"])) == 0
    assert m.lat_min_ms == pytest.approx(lat["min"] / 1e6, abs=1e-9)
    assert m.lat_max_ms == pytest.approx(lat["max"] / 1e6, abs=1e-9)
    assert m.lat_mean_ms == pytest.approx(lat["total"] / rep["requests"] / 1e6, rel=1e-9)
    # vegeta's percentiles are t-digest estimates; the parser's are exact nearest-rank values.
    for p, key in ((50, "50th"), (90, "90th"), (95, "95th"), (99, "99th")):
        assert getattr(m, f"lat_p{p}_ms") == pytest.approx(lat[key] / 1e6, rel=0.03), p
    # The load window: first request start to last response end = report duration + wait.
    assert m.measured_s == pytest.approx((rep["duration"] + rep["wait"]) / 1e9, abs=1e-9)
    assert m.measured_s == pytest.approx((epoch_ns(rep["end"]) - epoch_ns(rep["earliest"])) / 1e9, abs=1e-9)
    assert row["duration_s"] - 0.1 < m.measured_s < row["duration_s"] + 0.5
    assert m.rps == pytest.approx(m.requests / m.measured_s) and m.rps > 0
    assert_ordered(m)
    assert m.notes == []
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(m, name) == pytest.approx(row[name]), name


@pytest.mark.parametrize("case", CASES)
def test_load_start_is_the_first_request_relative_to_launch(case):
    first_s = epoch_ns(report(case)["earliest"]) / 1e9
    output, _ = load(case, launched_at=first_s - 0.25)
    assert ADAPTER.parse(output).load_start_s == pytest.approx(0.25, abs=1e-6)
    assert ADAPTER.parse(load(case)[0]).load_start_s is None   # no launch time known


def test_missing_per_request_log_is_a_parse_error(tmp_path):
    shutil.copytree(FIXTURES / "vu20-host", tmp_path / "run")
    (tmp_path / "run" / "vegeta-requests.csv.gz").unlink()
    with pytest.raises(ParseError, match="per-request log"):
        ADAPTER.parse(load("", tmp_path / "run")[0])


def test_log_that_disagrees_with_the_report_is_a_parse_error(tmp_path):
    """e.g. `vegeta encode` died half-way: the pipeline's status is gzip's, the count check catches it."""
    shutil.copytree(FIXTURES / "vu20-host", tmp_path / "run")
    log = tmp_path / "run" / "vegeta-requests.csv.gz"
    lines = gzip.decompress(log.read_bytes()).splitlines(keepends=True)
    log.write_bytes(gzip.compress(b"".join(lines[: len(lines) // 2])))
    with pytest.raises(ParseError, match="counts"):
        ADAPTER.parse(load("", tmp_path / "run")[0])


def test_empty_or_garbled_log_is_a_parse_error(tmp_path):
    shutil.copytree(FIXTURES / "vu20-host", tmp_path / "run")
    log = tmp_path / "run" / "vegeta-requests.csv.gz"
    log.write_bytes(gzip.compress(b""))
    with pytest.raises(ParseError):
        ADAPTER.parse(load("", tmp_path / "run")[0])
    log.write_bytes(b"not gzip at all")
    with pytest.raises(ParseError):
        ADAPTER.parse(load("", tmp_path / "run")[0])
