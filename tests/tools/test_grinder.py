"""The Grinder adapter: the command, the script's keep-alive loop, and the parser on a real run
(tests/fixtures/grinder/vu20-host/, copied from a 1-second harness run folder; the per-test data log
of a 5-second run is ~5 MB).

Parsed figures are checked against The Grinder's own final statistics in its worker log
(lth-0.log: tests, errors, mean test time, TPS), its 'New connections' column (keep-alive), and
Nginx's request count (meta.json server_requests).
"""
import dataclasses
import math
import re
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.flows import LOGIN
from harness.store.figures import below_resolution
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


# --- the login flow (issue 37) --------------------------------------------------------------------------------
FLOW_CASE = FIXTURES / "flow-vu20"
STEP_TESTS = type(GRINDER).parse.__globals__["STEP_TESTS"]   # adapter modules are loaded by path


def flow_spec(tmp_path: Path, relogin_every: int | None = None, **kwargs) -> RunSpec:
    return dataclasses.replace(command_spec(tmp_path, **kwargs), flow=LOGIN, relogin_every=relogin_every)


def test_a_flow_spec_carries_the_login_the_api_get_the_header_and_relogin(tmp_path):
    plain = GRINDER.command(command_spec(tmp_path))
    argv = GRINDER.command(flow_spec(tmp_path, relogin_every=10))
    flow = ["-Dgrinder.lth.loginUrl=http://198.18.0.2:80/api/auth/login", "-Dgrinder.lth.loginMethod=POST",
            '-Dgrinder.lth.loginBody={"username":"lth-user","password":"lth-password"}',
            "-Dgrinder.lth.loginContentType=application/json", "-Dgrinder.lth.tokenField=token",
            "-Dgrinder.lth.tokenHeader=Authorization", "-Dgrinder.lth.reloginEvery=10"]
    # The API's GET replaces the plain URL; the login options come after the others, the rest is the plain command.
    expected = [a.replace("/style.css", "/api/contact?size=20&page=0") for a in plain]
    assert argv == [*expected[:-2], *flow, *expected[-2:]]
    assert not any(a.startswith("-Dgrinder.lth.login") for a in plain)
    assert "-Dgrinder.lth.reloginEvery=0" in GRINDER.command(flow_spec(tmp_path))
    tls = GRINDER.command(flow_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert "-Dgrinder.lth.loginUrl=https://198.18.0.2:443/api/auth/login" in tls and "-Dgrinder.lth.close=true" in tls
    assert GRINDER.login_flow is True


def test_the_script_numbers_its_steps_as_the_parser_reads_them():
    script = (TOOLS_DIR / "grinder" / "lth.py").read_text()
    assert f'Test({STEP_TESTS["login"]}, "login")' in script and f'Test({STEP_TESTS["api_get"]}, "API GET")' in script
    assert 'Test(1, "GET")' in script and 1 not in STEP_TESTS.values()
    # The token lives in the TestRunner, one per worker thread; relogin by a counter of GETs.
    assert "self.token = " in script and "gets >= RELOGIN_EVERY" in script
    assert "NVPair(TOKEN_HEADER, self.token)" in script


def grinder_tests(folder: Path) -> dict[int, tuple[int, int, float]]:
    """Grinder's own final statistics per test (worker log): tests, errors, mean test time."""
    log = (folder / "lth-0.log").read_text()
    return {int(n): (int(tests), int(errors), float(mean)) for n, tests, errors, mean in
            re.findall(r"^Test (\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)", log, re.MULTILINE)}


def step_times(folder: Path) -> dict[int, list[int]]:
    rows = (folder / "lth-0-data.log").read_text().splitlines()
    header = [h.strip() for h in rows[0].split(",")]
    test, time = header.index("Test"), header.index("Test time")
    times: dict[int, list[int]] = {}
    for row in rows[1:]:
        cells = row.split(",")
        times.setdefault(int(cells[test]), []).append(int(cells[time]))
    return times


def test_flow_parser_times_each_step_apart_and_agrees_with_grinder_and_the_api():
    output, meta = load(FLOW_CASE)
    output = ToolOutput(dataclasses.replace(output.spec, flow=LOGIN), output.stdout, output.stderr, 0)
    row = meta["row"]
    metrics = GRINDER.parse(output)
    own = grinder_tests(FLOW_CASE)
    login, api_get = own[STEP_TESTS["login"]], own[STEP_TESTS["api_get"]]
    assert set(own) == {2, 3}                       # no plain GET (Test 1) in a flow run
    assert login[0] == row["server_logins"] == row["vus"] and api_get[0] == row["server_api_gets"]
    assert metrics.requests == login[0] + api_get[0] == row["server_requests"]
    assert metrics.errors == login[1] + api_get[1] == row["server_logins_refused"] + row["server_api_gets_refused"] == 0
    # Per step: nearest-rank percentiles over that test's rows, in whole ms (a 0, under 1 ms, the runner empties).
    times = step_times(FLOW_CASE)
    for step, number in STEP_TESTS.items():
        values = sorted(times[number])
        for p in (50, 99):
            assert getattr(metrics, f"lat_{step}_p{p}_ms") == values[math.ceil(p / 100 * len(values)) - 1], (step, p)
        assert sum(values) / len(values) == pytest.approx(own[number][2], abs=0.005)
    assert 1 <= metrics.lat_login_p50_ms <= metrics.lat_login_p99_ms
    assert metrics.lat_api_get_p50_ms == 0 and metrics.lat_api_get_p99_ms >= 1   # GETs under 1 ms, logins not
    assert "Test 2 (login) and Test 3 (API GET)" in metrics.source
    shown = below_resolution(metrics, GRINDER.timing_resolution_ms)
    for name in ("requests", "errors", "rps", "lat_p99_ms", "lat_max_ms", "lat_login_p50_ms", "lat_login_p99_ms",
                 "lat_api_get_p50_ms", "lat_api_get_p99_ms"):
        assert getattr(shown, name) == (None if row[name] is None else pytest.approx(row[name])), name


def test_the_plain_run_has_no_step_figures():
    metrics = GRINDER.parse(load(CASE)[0])
    assert [metrics.lat_login_p50_ms, metrics.lat_api_get_p99_ms] == [None, None]
    assert "login" not in metrics.source
