"""The Grinder adapter: the command, the script's keep-alive loop, and the parser on a real run
(tests/fixtures/grinder/vu20-host/, copied from a 1-second harness run folder; the per-test data log
of a 5-second run is ~5 MB).

Parsed figures are checked against The Grinder's own final statistics in its worker log
(lth-0.log: tests, errors, mean test time, TPS), its 'New connections' column (keep-alive), and
Nginx's request count (meta.json server_requests).
"""
import re
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "grinder"
ADAPTERS = discover()
GRINDER = ADAPTERS["grinder"]
CASE = FIXTURES / "vu20-host"


def load(folder: Path, launched_at: float = 0.0) -> tuple[ToolOutput, dict]:
    return captured_run(folder, launched_at=launched_at)


def grinder_totals(folder: Path) -> dict[str, float]:
    log = (folder / "lth-0.log").read_text()
    tests, errors, mean, _stddev, tps = re.search(r"^Totals\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
                                                  log, re.MULTILINE).groups()
    elapsed_ms = int(re.search(r"elapsed time is (\d+) ms", log).group(1))
    return {"tests": int(tests), "errors": int(errors), "mean": float(mean), "tps": float(tps),
            "elapsed_s": elapsed_ms / 1000}


def test_command_sets_threads_script_and_logs(tmp_path):
    spec = command_spec(tmp_path)
    argv = GRINDER.command(spec)
    assert argv[:3] == ["java", "-cp", "/opt/lth/grinder/wrap:/opt/lth/grinder/lib/*"]
    assert "-Dgrinder.threads=20" in argv and f"-Dgrinder.logDirectory={tmp_path}" in argv
    assert f"-Dgrinder.script={TOOLS_DIR / 'grinder' / 'lth.py'}" in argv
    assert "-Dgrinder.lth.durationMs=5000" in argv and "-Dgrinder.lth.url=http://198.18.0.2:80/style.css" in argv
    assert argv[-2:] == ["LthGrinder", str(TOOLS_DIR / "grinder" / "grinder.properties")]
    properties = (TOOLS_DIR / "grinder" / "grinder.properties").read_text()
    assert "grinder.runs = 1" in properties and "grinder.useConsole = false" in properties


def test_keepalive_off_and_tls(tmp_path):
    plain = GRINDER.command(command_spec(tmp_path))
    assert not any(a.startswith("-Dgrinder.lth.close") for a in plain)
    argv = GRINDER.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    # The Grinder trusts every certificate: the https URL is all TLS needs.
    assert f"-Dgrinder.lth.url={TLS_URL}" in argv and "-Dgrinder.lth.close=true" in argv
    assert argv[-2:] == plain[-2:]
    script = (TOOLS_DIR / "grinder" / "lth.py").read_text()
    assert 'if grinder.properties.getBoolean("grinder.lth.close", False):' in script
    assert 'setDefaultHeaders([NVPair("Connection", "close")])' in script


def test_version_is_read_from_the_wrappers_version_output():
    assert GRINDER.parse_version("The Grinder 3.11\n") == "3.11"
    assert GRINDER.version_command[-2:] == ["LthGrinder", "--version"]


def test_parser_agrees_with_grinders_final_statistics_and_nginx():
    output, meta = load(CASE)
    row = meta["row"]
    metrics = GRINDER.parse(output)
    totals = grinder_totals(CASE)
    assert metrics.requests == totals["tests"] == row["server_requests"]
    assert metrics.errors == totals["errors"] == 0
    assert metrics.lat_mean_ms == pytest.approx(totals["mean"], abs=0.005)
    # Grinder's TPS divides by its own elapsed time (threads start to finish); ours by the requests' window.
    assert metrics.rps == pytest.approx(totals["tps"], rel=0.03)
    assert metrics.measured_s <= totals["elapsed_s"] + 0.01
    assert row["duration_s"] <= metrics.measured_s <= row["duration_s"] + 0.2
    values = [metrics.lat_min_ms, metrics.lat_p50_ms, metrics.lat_p75_ms, metrics.lat_p90_ms,
              metrics.lat_p95_ms, metrics.lat_p99_ms, metrics.lat_max_ms]
    assert all(v is not None and float(v).is_integer() for v in values) and values == sorted(values)
    assert metrics.notes == ["latencies are whole milliseconds (The Grinder's data log resolution)"]
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_each_thread_kept_one_connection():
    rows = (CASE / "lth-0-data.log").read_text().splitlines()
    header = [h.strip() for h in rows[0].split(",")]
    column = header.index("New connections")
    assert sum(int(r.split(",")[column]) for r in rows[1:]) == 20


def test_keepalive_off_notes_the_new_connections_instead_of_a_broken_keepalive():
    output, _ = load(CASE)
    spec = RunSpec(output.spec.url, output.spec.vus, output.spec.duration_s, output.spec.out_dir, 2, keepalive=False)
    metrics = GRINDER.parse(ToolOutput(spec, output.stdout, output.stderr, 0))
    assert metrics.notes[-1] == f"20 new connections for {metrics.requests} requests (keep-alive off)"


def test_load_start_comes_from_the_first_request():
    rows = (CASE / "lth-0-data.log").read_text().splitlines()[1:]
    first = min(int(r.split(",")[3]) for r in rows) / 1000
    output, _ = load(CASE, launched_at=first - 1.5)
    assert GRINDER.parse(output).load_start_s == pytest.approx(1.5)


def test_missing_or_empty_data_log_is_a_parse_error(tmp_path):
    spec = command_spec(tmp_path)
    with pytest.raises(ParseError, match="data log"):
        GRINDER.parse(ToolOutput(spec, "", "", 0))
    header = (CASE / "lth-0-data.log").read_text().splitlines()[0]
    (tmp_path / "lth-0-data.log").write_text(header + "\n")
    with pytest.raises(ParseError, match="no test record"):
        GRINDER.parse(ToolOutput(spec, "", "", 0))
