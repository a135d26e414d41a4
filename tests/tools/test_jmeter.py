"""JMeter adapter: the command, and the parser on a real run (tests/fixtures/jmeter/<case>/, copied
from a harness run folder).

Parsed figures (computed by the parser from the per-sample JTL) are checked against what JMeter
itself printed for the same run (its non-GUI summariser line "summary = N in ... Avg: Min: Max: Err:")
and against Nginx's request count (meta.json server_requests).
"""
import re
import shutil
from pathlib import Path

import pytest

from harness import TOOLS_DIR
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
