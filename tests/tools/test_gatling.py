"""Gatling adapter: the command, the binary simulation.log reader, and the parser on a real run
(tests/fixtures/gatling/<case>/, copied from a harness run folder).

Parsed figures (computed by the parser from the binary simulation.log) are checked against what
Gatling itself printed for the same run (its "Global Information" console summary, made by its own
report generator from the same log) and against Nginx's request count (meta.json server_requests).
The reader's branches that a plain run does not exercise (groups, KO messages, UTF-16 strings,
error records) are checked on a log written here byte by byte after Gatling's LogFileDataWriter.
"""
import re
import struct
from dataclasses import replace
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.flows import LOGIN
from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec, with_stdout

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gatling"
ADAPTERS = discover()
CASES = cases("gatling")
simlog = type(ADAPTERS["gatling"]).parse.__globals__["simlog"]   # tools/gatling/simlog.py, as the adapter loaded it


def load(case: str, out_dir: Path | None = None, launched_at: float = 0.0) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case, out_dir, launched_at)


def summary(stdout: str, label: str) -> tuple[str, str]:
    """(Total, KO) of a row of Gatling's final 'Global Information' table."""
    block = stdout[stdout.rindex("---- Global Information"):]
    total, _ok, ko = re.search(rf"> {re.escape(label)}\s+\|\s+([\d,.]+)\s+\|\s+([\d,.]+)\s+\|\s+([\d,.-]+)", block).groups()
    return total.replace(",", ""), ko


def simulation_log(case: str) -> Path:
    return next((FIXTURES / case).glob("*/simulation.log"))


# --- a simulation.log written after Gatling 3.15.1's LogFileDataWriter ------------------------------
class Writer:
    def __init__(self):
        self.out, self.cache = bytearray(), {}

    def int(self, v): self.out += struct.pack(">i", v)
    def long(self, v): self.out += struct.pack(">q", v)
    def byte(self, v): self.out += bytes([v])

    def string(self, s):
        if not s:
            self.int(0)
            return
        try:
            value, coder = s.encode("latin-1"), 0
        except UnicodeEncodeError:
            value, coder = s.encode("utf-16-le"), 1
        self.int(len(value))
        self.out += value
        self.byte(coder)

    def cached(self, s):
        if s in self.cache:
            self.int(-self.cache[s])
        else:
            self.cache[s] = index = len(self.cache) + 1
            self.int(index)
            self.string(s)

    def request(self, name, start, end, ok, message="", groups=()):
        self.byte(1)
        self.int(len(groups))
        for g in groups:
            self.cached(g)
        self.cached(name)
        self.int(start)
        self.int(end)
        self.byte(1 if ok else 0)
        self.cached(message)


def synthetic_log(version="3.15.1") -> bytes:
    w = Writer()
    w.byte(0)
    w.string(version)
    w.string("lth.LthSimulation")
    w.long(1_795_394_796_630)
    w.string("")
    w.int(1)
    w.string("lth")
    w.int(0)
    w.byte(2); w.int(0); w.byte(1); w.int(5)                       # user start
    w.request("GET", 10, 12, True)
    w.request("GET", 12, 13, True)                                  # fast path: name and message cached
    w.request("GET", 13, 20, False, "status.find.in(200-210,304), but actually found 503")
    w.request("GET", 20, 21, False, "status.find.in(200-210,304), but actually found 503")
    w.request("GET ünïcode ✓", 21, 25, True, groups=("grp",))    # UTF-16 name, a group
    w.byte(3); w.int(1); w.cached("grp"); w.int(21); w.int(25); w.int(4); w.byte(1)   # group record
    w.byte(4); w.cached("j.n.ConnectException: refused"); w.int(26)                 # error record
    w.byte(2); w.int(0); w.byte(0); w.int(30)                       # user end
    return bytes(w.out)


def test_reader_follows_gatlings_writer(tmp_path):
    path = tmp_path / "simulation.log"
    path.write_bytes(synthetic_log())
    log = simlog.read(path)
    assert (log.gatling_version, log.simulation, log.run_start_ms, log.scenarios) == \
        ("3.15.1", "lth.LthSimulation", 1_795_394_796_630, ["lth"])
    assert log.starts == [10, 12, 13, 20, 21] and log.ends == [12, 13, 20, 21, 25]
    assert log.names == ["GET"] * 4 + ["GET ünïcode ✓"]
    assert log.ok == [True, True, False, False, True]
    assert log.messages == {"status.find.in(200-210,304), but actually found 503": 2}
    assert (log.users_started, log.users_ended, log.errors) == (1, 1, 1)


def test_adapter_on_synthetic_log(tmp_path):
    (tmp_path / "lthsimulation-1").mkdir()
    (tmp_path / "lthsimulation-1" / "simulation.log").write_bytes(synthetic_log())
    output, _ = load(CASES[0], out_dir=tmp_path, launched_at=1_795_394_796.630 - 2.0)
    m = ADAPTERS["gatling"].parse(output)
    assert (m.requests, m.errors) == (5, 2)
    assert m.measured_s == pytest.approx(0.015)                       # 10 ms .. 25 ms
    assert m.load_start_s == pytest.approx(2.010)                     # run start + 10 ms, launched 2 s before
    assert (m.lat_min_ms, m.lat_max_ms) == (1, 7)
    assert any("2 x status.find.in" in n for n in m.notes)


@pytest.mark.parametrize("mutate, match", [
    (lambda b: b[:-3], "truncated"),
    (lambda b: b + b"\x09", "unknown record header 9"),
    (lambda b: b"", "empty"),
    (lambda b: b"\x01" + b[1:], "run record"),
])
def test_damaged_log_is_a_parse_error(tmp_path, mutate, match):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "simulation.log").write_bytes(mutate(synthetic_log()))
    output, _ = load(CASES[0], out_dir=tmp_path)
    with pytest.raises(ParseError, match=match):
        ADAPTERS["gatling"].parse(output)


def test_log_of_another_gatling_version_is_a_parse_error(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "simulation.log").write_bytes(synthetic_log(version="3.16.0"))
    output, _ = load(CASES[0], out_dir=tmp_path)
    with pytest.raises(ParseError, match="3.16.0"):
        ADAPTERS["gatling"].parse(output)


def test_missing_log_is_a_parse_error(tmp_path):
    output, _ = load(CASES[0], out_dir=tmp_path)
    with pytest.raises(ParseError, match="simulation.log"):
        ADAPTERS["gatling"].parse(output)


# --- the real run ----------------------------------------------------------------------------------
def test_command_runs_the_precompiled_simulation_offline(tmp_path):
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=100, duration_s=300, out_dir=tmp_path, cpus=2)
    argv = ADAPTERS["gatling"].command(spec)
    assert argv[0] == "java" and "-Xmx1G" in argv
    assert argv[argv.index("-cp") + 1] == "/opt/lth/gatling/classes:/opt/lth/gatling/lib/*"
    assert argv[argv.index("--simulation") + 1] == "lth.LthSimulation"
    assert argv[argv.index("--results-folder") + 1] == str(tmp_path)
    for option in ("-Dlth.url=http://198.18.0.2:80/style.css", "-Dlth.vus=100", "-Dlth.duration=300",
                   "-Dgatling.data.enableAnalytics=false", "-Dgatling.http.warmUpUrl=",
                   "-Dhttps.proxyHost=127.0.0.1"):
        assert option in argv
    simulation = (TOOLS_DIR / "gatling" / "src/test/java/lth/LthSimulation.java").read_text()
    for dsl in ("atOnceUsers(VUS)", ".during(Duration.ofSeconds(DURATION_S))", ".disableWarmUp()", ".disableCaching()"):
        assert dsl in simulation


def test_keepalive_off_and_tls(tmp_path):
    plain = ADAPTERS["gatling"].command(command_spec(tmp_path))
    assert "-Dlth.keepalive=false" not in plain
    argv = ADAPTERS["gatling"].command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    # Gatling trusts every certificate by default: the https URL is all TLS needs.
    assert argv == [a.replace("http://198.18.0.2:80", "https://198.18.0.2:443") for a in plain[:plain.index("-cp")]] + \
        ["-Dlth.keepalive=false", *plain[plain.index("-cp"):]]
    simulation = (TOOLS_DIR / "gatling" / "src/test/java/lth/LthSimulation.java").read_text()
    assert 'System.getProperty("lth.keepalive", "true")' in simulation
    assert 'protocol.connectionHeader("close")' in simulation and 'CLOSE_MARK = "LTH_CONNECTION_CLOSE"' in simulation


def test_keepalive_off_without_the_simulations_mark_is_a_parse_error(tmp_path):
    """An install older than the simulation's -Dlth.keepalive would keep connections open: refused."""
    output, _ = load(CASES[0])
    spec = RunSpec(output.spec.url, output.spec.vus, output.spec.duration_s, output.spec.out_dir, 2, keepalive=False)
    with pytest.raises(ParseError, match="LTH_CONNECTION_CLOSE"):
        ADAPTERS["gatling"].parse(ToolOutput(spec, output.stdout, output.stderr, 0))
    assert ADAPTERS["gatling"].parse(ToolOutput(spec, "LTH_CONNECTION_CLOSE\n" + output.stdout, output.stderr, 0)).requests


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_gatlings_summary_and_nginx(case):
    output, meta = load(case)
    m = ADAPTERS["gatling"].parse(output)
    text = output.stdout
    total, ko = summary(text, "request count")
    assert m.requests == int(total) and ko == "-" and m.errors == 0
    assert m.lat_min_ms == float(summary(text, "min response time (ms)")[0])
    assert m.lat_max_ms == float(summary(text, "max response time (ms)")[0])
    assert abs(m.lat_mean_ms - float(summary(text, "mean response time (ms)")[0])) <= 0.5 + 1e-9
    for pct in (50, 75, 95, 99):   # Gatling's own percentile method on the same whole-ms data
        assert abs(getattr(m, f"lat_p{pct}_ms") - float(summary(text, f"response time {pct}th percentile (ms)")[0])) <= 1
    assert meta["row"]["server_requests"] == m.requests
    assert f"{meta['row']['vus']} users started, {meta['row']['vus']} ended" in " ".join(m.notes)
    assert m.rps > 0 and 0 < m.measured_s <= meta["row"]["duration_s"] + 1
    values = [m.lat_min_ms, m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p95_ms, m.lat_p99_ms, m.lat_max_ms]
    assert None not in values and values == sorted(values)


@pytest.mark.parametrize("case", CASES)
def test_fast_path_and_full_reader_agree(case, monkeypatch):
    fast = simlog.read(simulation_log(case))
    monkeypatch.setattr(simlog, "_REQUEST_CACHED", type("NoFastPath", (), {"size": 1 << 40})())
    full = simlog.read(simulation_log(case))
    assert (fast.names, fast.starts, fast.ends, fast.ok) == (full.names, full.starts, full.ends, full.ok)
    assert fast.starts and len(fast.names) == len(fast.starts) == len(fast.ends) == len(fast.ok)


@pytest.mark.parametrize("case", CASES)
def test_load_start_is_first_request_minus_launch(case):
    log = simlog.read(simulation_log(case))
    first_s = (log.run_start_ms + min(log.starts)) / 1000.0
    output, _ = load(case, launched_at=first_s - 1.5)
    assert ADAPTERS["gatling"].parse(output).load_start_s == pytest.approx(1.5)


# --- the login flow (issue 37): LthFlowSimulation ---------------------------------------------------------------
FLOW_CASE = "flow-vu20"   # the flow-vu20-rtt0.1 row of scenarios/flows.yaml, host runtime, 3 s


def flow_output(case: str = FLOW_CASE) -> tuple[ToolOutput, dict]:
    """The captured flow run as the parser gets it, its spec carrying the flow."""
    output, meta = load(case)
    spec = replace(output.spec, url="http://198.18.0.2:80/style.css", flow=LOGIN, relogin_every=meta["row"]["relogin_every"])
    return ToolOutput(spec, output.stdout, output.stderr, 0), meta


def step_counts(stdout: str) -> dict[str, int]:
    """Gatling's own per-request totals (its console's last "---- Requests ----" block)."""
    block = stdout[stdout.rindex("---- Requests ----"):]
    return {name: int(total.replace(",", "")) for name, total in re.findall(r"^> (\w+)\s+\|\s+([\d,]+)", block, re.MULTILINE)}


def test_flow_command_runs_the_flow_simulation_with_its_fields(tmp_path):
    plain = ADAPTERS["gatling"].command(command_spec(tmp_path))
    assert plain == ADAPTERS["gatling"].command(replace(command_spec(tmp_path), flow=None, relogin_every=None))
    assert plain[plain.index("--simulation") + 1] == "lth.LthSimulation"
    assert not any(a.startswith(("-Dlth.login", "-Dlth.get_path", "-Dlth.token", "-Dlth.relogin")) for a in plain)
    for relogin, passed in ((None, "0"), (10, "10")):
        argv = ADAPTERS["gatling"].command(replace(command_spec(tmp_path), flow=LOGIN, relogin_every=relogin))
        assert argv[argv.index("--simulation") + 1] == "lth.LthFlowSimulation"
        assert {"-Dlth.url=http://198.18.0.2:80", "-Dlth.vus=20", "-Dlth.duration=5",
                f"-Dlth.login_path={LOGIN.login_path}", f"-Dlth.login_body={LOGIN.login_body}",
                f"-Dlth.login_content_type={LOGIN.login_content_type}", f"-Dlth.token_field={LOGIN.token_field}",
                f"-Dlth.get_path={LOGIN.get_path}", f"-Dlth.token_header={LOGIN.token_header}",
                f"-Dlth.relogin_every={passed}"} <= set(argv)
        assert not any(a.startswith("-Dlth.url=http://198.18.0.2:80/") for a in argv)   # the base URL, no path
    tls = ADAPTERS["gatling"].command(replace(command_spec(tmp_path, url=TLS_URL), flow=LOGIN))
    assert "-Dlth.url=https://198.18.0.2:443" in tls
    simulation = (TOOLS_DIR / "gatling" / "src/test/java/lth/LthFlowSimulation.java").read_text()
    for dsl in ('jsonPath("$." + TOKEN_FIELD).saveAs("token")', '.header(TOKEN_HEADER, "#{token}")',
                "repeat(RELOGIN_EVERY).on(GET)", 'http("login")', 'http("get")', "LthSimulation.protocol()"):
        assert dsl in simulation
    # the install's stamp covers every simulation source: a new or edited one rebuilds the classes
    assert '"$TOOL_DIR/src/test/java/lth/"*.java' in (TOOLS_DIR / "gatling" / "install.sh").read_text()


def test_flow_steps_agree_with_gatlings_per_request_totals_and_the_api():
    output, meta = flow_output()
    m = ADAPTERS["gatling"].parse(output)
    counts = step_counts(output.stdout)
    row = meta["row"]
    # totals: every request of the flow, as Gatling and Nginx counted them
    assert m.requests == counts["Global"] == row["server_requests"] == counts["login"] + counts["get"]
    assert m.errors == 0
    # per step: Gatling's "login" and "get" requests are the API's logins (one per VU) and GETs
    assert (counts["login"], counts["get"]) == (row["server_logins"], row["server_api_gets"]) == (20, 19564)
    assert "flow requests: 19564 get, 20 login" in m.notes
    log = simlog.read(simulation_log(FLOW_CASE))
    logins = sorted(e - s for n, s, e in zip(log.names, log.starts, log.ends) if n == "login")
    gets = sorted(e - s for n, s, e in zip(log.names, log.starts, log.ends) if n == "get")
    assert (len(logins), len(gets)) == (20, 19564)
    # nearest rank: p50 of 20 is the 10th value, p99 the 20th
    assert (m.lat_login_p50_ms, m.lat_login_p99_ms) == (logins[9], logins[19]) == (141, 154)
    assert (m.lat_api_get_p50_ms, m.lat_api_get_p99_ms) == (gets[-(-len(gets) // 2) - 1], gets[-(-99 * len(gets) // 100) - 1]) == (1, 21)
    assert m.lat_api_get_p50_ms <= m.lat_p50_ms <= m.lat_login_p50_ms
    # Gatling's own overall figures on the same run
    assert m.lat_p99_ms == float(summary(output.stdout, "response time 99th percentile (ms)")[0])
    assert (m.lat_p50_ms, row["lat_login_p50_ms"], row["lat_api_get_p99_ms"]) == (1, 141, 21)   # as the row has them
    assert "lat_login_*" in m.source


def test_flow_steps_come_from_the_log_even_without_the_flow_in_the_spec():
    """The row's RunSpec is rebuilt without the flow: the flow simulation's log says which run it is."""
    with_flow = ADAPTERS["gatling"].parse(flow_output()[0])
    without = ADAPTERS["gatling"].parse(load(FLOW_CASE)[0])
    assert without.lat_login_p50_ms == with_flow.lat_login_p50_ms == 141
    assert without.lat_api_get_p99_ms == with_flow.lat_api_get_p99_ms
    plain = ADAPTERS["gatling"].parse(load(CASES[CASES.index("vu20-host")])[0])
    assert (plain.lat_login_p50_ms, plain.lat_login_p99_ms, plain.lat_api_get_p50_ms, plain.lat_api_get_p99_ms) == (None,) * 4


def test_flow_without_the_simulations_mark_is_a_parse_error():
    """An install older than LthFlowSimulation would have failed to find it; one without the mark is refused."""
    output, _ = flow_output()
    with pytest.raises(ParseError, match="LTH_FLOW"):
        ADAPTERS["gatling"].parse(with_stdout(output, output.stdout.replace("LTH_FLOW", "")))
