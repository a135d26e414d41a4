"""JMeter adapter: the command, and the parser on a real run (tests/fixtures/jmeter/<case>/, copied
from a harness run folder).

Parsed figures (computed by the parser from the per-sample JTL) are checked against what JMeter
itself printed for the same run (its non-GUI summariser line "summary = N in ... Avg: Min: Max: Err:")
and against Nginx's request count (meta.json server_requests).
"""
import csv
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.flows import LOGIN
from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "jmeter"
ADAPTERS = discover()
CASES = cases("jmeter")
SUMMARY = re.compile(r"^summary =\s+(\d+) in [\d:]+ =\s+[\d.]+/s Avg:\s+(\d+) Min:\s+(\d+) Max:\s+(\d+) Err:\s+(\d+)",
                     re.MULTILINE)


def load(case: str, out_dir: Path | None = None, launched_at: float = 0.0) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case, out_dir, launched_at)


def first_timestamp_ms(folder: Path) -> int:
    with (folder / "jmeter.jtl").open() as handle:
        next(handle)
        return min(int(line.split(",", 1)[0]) for line in handle)


def test_command_maps_vus_duration_and_url(tmp_path):
    spec = RunSpec(url="http://198.18.0.2:8080/style.css?v=1", vus=50, duration_s=300, out_dir=tmp_path, cpus=2)
    argv = ADAPTERS["jmeter"].command(spec)
    assert argv[0] == "java" and "-Xmx1g" in argv and "-Xms1g" in argv
    assert argv[argv.index("-jar") + 1] == "/opt/lth/jmeter/bin/ApacheJMeter.jar"
    assert "-n" in argv and Path(argv[argv.index("-t") + 1]) == TOOLS_DIR / "jmeter" / "plan.jmx"
    assert argv[argv.index("-l") + 1] == str(tmp_path / "jmeter.jtl")
    assert argv[argv.index("-j") + 1] == str(tmp_path / "jmeter.log")
    for option in ("-Jthreads=50", "-Jduration=300", "-Jrampup=1", "-Jprotocol=http", "-Jhost=198.18.0.2",
                   "-Jport=8080", "-Jpath=/style.css?v=1", "-Jhttpclient4.time_to_live=360000",
                   "-Jhttpclient.reset_state_on_thread_group_iteration=false"):
        assert option in argv


def test_plan_reads_every_property_the_command_sets():
    plan = (TOOLS_DIR / "jmeter" / "plan.jmx").read_text()
    for prop in ("threads", "rampup", "duration", "host", "port", "protocol", "path"):
        assert f"${{__P({prop}," in plan
    # keep-alive unless -Jkeepalive=false (issue 23)
    assert '<stringProp name="HTTPSampler.use_keepalive">${__P(keepalive,true)}</stringProp>' in plan
    assert '<intProp name="LoopController.loops">-1</intProp>' in plan
    assert '<boolProp name="ThreadGroup.scheduler">true</boolProp>' in plan


def test_keepalive_off_and_tls(tmp_path):
    plain = ADAPTERS["jmeter"].command(command_spec(tmp_path))
    assert not any(a.startswith("-Jkeepalive") for a in plain)
    argv = ADAPTERS["jmeter"].command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    # JMeter's samplers accept any certificate: https is only the protocol and port.
    assert {"-Jkeepalive=false", "-Jprotocol=https", "-Jport=443"} <= set(argv)
    rate = RunSpec(url=TLS_URL, vus=20, duration_s=5, out_dir=tmp_path, cpus=2, rate_rps=100, keepalive=False)
    assert "-Jkeepalive=false" in ADAPTERS["jmeter"].command(rate)
    for plan in ("plan.jmx", "plan-rate.jmx"):
        text = (TOOLS_DIR / "jmeter" / plan).read_text()
        assert text.count('<stringProp name="HTTPSampler.use_keepalive">${__P(keepalive,true)}</stringProp>') == 1


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_jmeters_summariser_and_nginx(case):
    output, meta = load(case)
    metrics = ADAPTERS["jmeter"].parse(output)
    count, avg, low, high, err = map(int, SUMMARY.search(output.stdout).groups())
    assert metrics.requests == count
    assert metrics.errors == err == 0
    assert metrics.lat_min_ms == low and metrics.lat_max_ms == high
    assert abs(metrics.lat_mean_ms - avg) <= 1          # the summariser prints a whole-ms average
    assert meta["row"]["server_requests"] == metrics.requests
    assert f"{meta['row']['vus']} threads sampled" in " ".join(metrics.notes)
    assert metrics.rps > 0 and 0 < metrics.measured_s <= meta["row"]["duration_s"] + 1
    assert metrics.rps == pytest.approx(metrics.requests / metrics.measured_s)
    values = [metrics.lat_min_ms, metrics.lat_p50_ms, metrics.lat_p75_ms, metrics.lat_p90_ms,
              metrics.lat_p95_ms, metrics.lat_p99_ms, metrics.lat_max_ms]
    assert None not in values and values == sorted(values)
    assert "-Xmx1g" in metrics.source and any("-Xms1g -Xmx1g" in n for n in metrics.notes)


@pytest.mark.parametrize("case", CASES)
def test_load_start_is_first_sample_minus_launch(case):
    first_s = first_timestamp_ms(FIXTURES / case) / 1000.0
    output, _ = load(case, launched_at=first_s - 1.25)
    assert ADAPTERS["jmeter"].parse(output).load_start_s == pytest.approx(1.25)
    assert ADAPTERS["jmeter"].parse(load(case)[0]).load_start_s is None   # launch time unknown


def test_missing_jtl_is_a_parse_error(tmp_path):
    output, _ = load(CASES[0], out_dir=tmp_path)
    with pytest.raises(ParseError, match="jmeter.jtl"):
        ADAPTERS["jmeter"].parse(output)


@pytest.mark.parametrize("content, match", [
    ("", "lacks the columns"),
    ("timeStamp,elapsed,responseCode\n1,2,200\n", "lacks the columns"),
    ("timeStamp,elapsed,responseCode,threadName,success\n", "no samples"),
    ("timeStamp,elapsed,responseCode,threadName,success\n1795394540282,x,200,vus 1-1,true\n", "unreadable"),
])
def test_broken_jtl_is_a_parse_error(tmp_path, content, match):
    (tmp_path / "jmeter.jtl").write_text(content)
    output, _ = load(CASES[0], out_dir=tmp_path)
    with pytest.raises(ParseError, match=match):
        ADAPTERS["jmeter"].parse(output)


def test_failed_samples_count_as_errors(tmp_path):
    shutil.copy(FIXTURES / CASES[0] / "jmeter.jtl", tmp_path / "jmeter.jtl")
    with (tmp_path / "jmeter.jtl").open("a") as handle:
        handle.write('1795394540300,3,Non HTTP response code: java.net.ConnectException,vus 1-1,false,,0,1\n')
    output, _ = load(CASES[0], out_dir=tmp_path)
    base = ADAPTERS["jmeter"].parse(load(CASES[0])[0])
    metrics = ADAPTERS["jmeter"].parse(output)
    assert metrics.errors == base.errors + 1 and metrics.requests == base.requests + 1


# --- the login flow (issue 37): plan-flow.jmx ------------------------------------------------------------------
FLOW_CASE = "flow-vu20"   # the flow-vu20-rtt0.1 row of scenarios/flows.yaml, host runtime, 3 s


def flow_output(case: str = FLOW_CASE) -> tuple[ToolOutput, dict]:
    """The captured flow run as the parser gets it, its spec carrying the flow."""
    output, meta = load(case)
    spec = replace(output.spec, flow=LOGIN, relogin_every=meta["row"]["relogin_every"])
    return ToolOutput(spec, output.stdout, output.stderr, 0), meta


def jtl_rows(case: str) -> list[dict]:
    with (FIXTURES / case / "jmeter.jtl").open(newline="") as handle:
        return list(csv.DictReader(handle))


def nearest_rank(values: list[int], pct: int) -> int:
    ordered = sorted(values)
    return ordered[-(-pct * len(ordered) // 100) - 1]


def test_flow_command_runs_the_flow_plan_with_its_fields(tmp_path):
    plain = ADAPTERS["jmeter"].command(command_spec(tmp_path))
    assert Path(plain[plain.index("-t") + 1]).name == "plan.jmx"
    assert "-Jpath=/style.css" in plain and "-Jjmeter.save.saveservice.label=false" in plain
    assert not any(a.startswith(("-Jlogin", "-Jget_path", "-Jtoken", "-Jrelogin")) for a in plain)
    for relogin, passed in ((None, "-1"), (10, "10")):
        argv = ADAPTERS["jmeter"].command(replace(command_spec(tmp_path), flow=LOGIN, relogin_every=relogin))
        assert Path(argv[argv.index("-t") + 1]) == TOOLS_DIR / "jmeter" / "plan-flow.jmx"
        assert {"-Jthreads=20", "-Jduration=5", "-Jprotocol=http", "-Jhost=198.18.0.2", "-Jport=80",
                f"-Jlogin_path={LOGIN.login_path}", f"-Jlogin_body={LOGIN.login_body}",
                f"-Jlogin_content_type={LOGIN.login_content_type}", f"-Jtoken_field={LOGIN.token_field}",
                f"-Jget_path={LOGIN.get_path}", f"-Jtoken_header={LOGIN.token_header}",
                f"-Jrelogin_every={passed}", "-Jjmeter.save.saveservice.label=true"} <= set(argv)
        assert not any(a.startswith("-Jpath=") for a in argv)
        assert argv[:argv.index("-t")] == plain[:plain.index("-t")]     # the same JVM and launcher
    tls = ADAPTERS["jmeter"].command(replace(command_spec(tmp_path, url=TLS_URL), flow=LOGIN))
    assert {"-Jprotocol=https", "-Jport=443"} <= set(tls)


def test_flow_plan_reads_every_property_the_command_sets():
    plan = (TOOLS_DIR / "jmeter" / "plan-flow.jmx").read_text()
    for prop in ("threads", "rampup", "duration", "host", "port", "protocol", "login_path", "login_content_type",
                 "token_field", "get_path", "token_header", "relogin_every", "keepalive"):
        assert f"${{__P({prop}," in plan
    assert "${__P(login_body)}" in plan and '<boolProp name="HTTPSampler.postBodyRaw">true</boolProp>' in plan
    assert 'testname="login"' in plan and 'testname="get"' in plan
    assert '<stringProp name="JSONPostProcessor.referenceNames">token</stringProp>' in plan
    assert '<stringProp name="Header.value">${token}</stringProp>' in plan
    assert '<stringProp name="LoopController.loops">${__P(relogin_every,-1)}</stringProp>' in plan


def test_flow_steps_agree_with_the_jtl_and_the_api():
    output, meta = flow_output()
    m = ADAPTERS["jmeter"].parse(output)
    rows, row = jtl_rows(FLOW_CASE), meta["row"]
    logins = [int(r["elapsed"]) for r in rows if r["label"] == "login"]
    gets = [int(r["elapsed"]) for r in rows if r["label"] == "get"]
    # totals: every sample of the flow, as JMeter's summariser and Nginx counted them
    count, _avg, _low, _high, err = map(int, SUMMARY.search(output.stdout).groups())
    assert m.requests == count == row["server_requests"] == len(logins) + len(gets) and m.errors == err == 0
    # per step: the "login" and "get" samples are the API's logins (one per thread) and GETs
    assert (len(logins), len(gets)) == (row["server_logins"], row["server_api_gets"]) == (20, 10259)
    assert "flow samples: 10259 get, 20 login" in m.notes
    firsts = {}
    for r in sorted(rows, key=lambda r: int(r["timeStamp"])):
        firsts.setdefault(r["threadName"], r["label"])
    assert set(firsts.values()) == {"login"} and len(firsts) == 20      # each thread logs in first
    assert (m.lat_login_p50_ms, m.lat_login_p99_ms) == (nearest_rank(logins, 50), nearest_rank(logins, 99)) == (18, 50)
    assert (m.lat_api_get_p50_ms, m.lat_api_get_p99_ms) == (nearest_rank(gets, 50), nearest_rank(gets, 99)) == (4, 21)
    assert (row["lat_login_p50_ms"], row["lat_api_get_p99_ms"]) == (18, 21)    # as the row has them
    assert "lat_login_*" in m.source


def test_flow_steps_come_from_the_jtl_even_without_the_flow_in_the_spec():
    """The row's RunSpec is rebuilt without the flow: the label column (saved only for a flow) says which run it is."""
    without = ADAPTERS["jmeter"].parse(load(FLOW_CASE)[0])
    assert (without.lat_login_p50_ms, without.lat_api_get_p99_ms) == (18, 21)
    plain = ADAPTERS["jmeter"].parse(load("vu20-host")[0])
    assert (plain.lat_login_p50_ms, plain.lat_login_p99_ms, plain.lat_api_get_p50_ms, plain.lat_api_get_p99_ms) == (None,) * 4


def test_flow_jtl_without_labels_is_a_parse_error(tmp_path):
    shutil.copy(FIXTURES / "vu20-host" / "jmeter.jtl", tmp_path / "jmeter.jtl")
    output, _ = flow_output()
    with pytest.raises(ParseError, match="lacks the columns label"):
        ADAPTERS["jmeter"].parse(ToolOutput(replace(output.spec, out_dir=tmp_path), output.stdout, output.stderr, 0))
