"""k6 adapter: the command and script, and the parser on real runs (tests/fixtures/k6/vu20-<runtime>/).

The parser reads k6's --summary-export JSON; every figure is checked against k6's own text summary
of the same run in stdout (printed with two decimals in its own unit) and against Nginx's count.
"""
import json
import re
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "k6"
ADAPTER = discover()["k6"]
CASES = cases("k6")
UNIT_MS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1000.0}


def load(case: str, launched_at: float = 0.0, out_dir: Path | None = None) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case, out_dir, launched_at)


def text_trend(stdout: str, metric: str) -> dict[str, tuple[float, float]]:
    """k6's printed trend line: {stat: (value in ms, printing precision in ms)}."""
    line = re.search(rf"^\s+{re.escape(metric)}\.+: (.*)$", stdout, re.MULTILINE).group(1)
    stats = {}
    for stat, number, unit in re.findall(r"([\w()]+)=([\d.]+)(ns|µs|us|ms|s)\b", line):
        stats[stat] = (float(number) * UNIT_MS[unit], 0.01 * UNIT_MS[unit])
    return stats


def test_command_runs_the_script_with_vus_for_the_duration(tmp_path):
    spec = command_spec(tmp_path)
    argv = ADAPTER.command(spec)
    assert argv[:2] == ["/opt/lth/bin/k6", "run"]
    joined = " ".join(argv)
    assert "--vus 20 --duration 5s" in joined
    assert f"--summary-export {tmp_path}/k6-summary.json" in joined
    assert "-e LTH_URL=http://198.18.0.2:80/style.css" in joined
    assert "--out" not in argv                      # per-point output halves k6's throughput
    stats = argv[argv.index("--summary-trend-stats") + 1].split(",")
    assert {"avg", "min", "med", "max", "p(50)", "p(75)", "p(90)", "p(95)", "p(99)"} <= set(stats)
    assert Path(argv[-1]) == ADAPTER.folder / "script.js" and Path(argv[-1]).is_file()


def test_keepalive_off_and_tls_are_k6_run_flags(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    assert "--no-connection-reuse" not in plain and "--insecure-skip-tls-verify" not in plain
    argv = ADAPTER.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert argv == [*plain[:6], "--no-connection-reuse", "--insecure-skip-tls-verify",
                    *[f"LTH_URL={TLS_URL}" if a.startswith("LTH_URL=") else a for a in plain[6:]]]
    rate = RunSpec(url=TLS_URL, vus=20, duration_s=5, out_dir=tmp_path, cpus=2, rate_rps=1000, keepalive=False)
    assert {"--no-connection-reuse", "--insecure-skip-tls-verify"} <= set(ADAPTER.command(rate))


def test_script_is_one_get_without_sleep():
    script = (ADAPTER.folder / "script.js").read_text()
    assert "http.get(__ENV.LTH_URL" in script
    assert "sleep(" not in script
    assert "discardResponseBodies: true" in script
    assert "LTH_LOAD_START_MS" in script


def test_version_is_read_from_k6_version_output():
    assert ADAPTER.parse_version("k6 v1.8.1 (go1.26.8, linux/amd64)\n") == "1.8.1"


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_k6s_text_summary_and_nginx(case):
    output, meta = load(case)
    row = meta["row"]
    m = ADAPTER.parse(output)
    count, rate = re.search(r"http_reqs\.+: (\d+)\s+([\d.]+)/s", output.stdout).groups()
    assert m.requests == int(count)
    assert m.rps == pytest.approx(float(rate), rel=1e-6) and m.rps > 0
    failed, total = re.search(r"http_req_failed\.+: [\d.]+%\s+(\d+) out of (\d+)", output.stdout).groups()
    assert m.errors == int(failed) == 0 and int(total) == m.requests
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests
    printed = text_trend(output.stdout, "http_req_duration")
    for stat, field in (("avg", "lat_mean_ms"), ("min", "lat_min_ms"), ("max", "lat_max_ms"), ("med", "lat_p50_ms"),
                        ("p(50)", "lat_p50_ms"), ("p(75)", "lat_p75_ms"), ("p(90)", "lat_p90_ms"),
                        ("p(95)", "lat_p95_ms"), ("p(99)", "lat_p99_ms")):
        value, precision = printed[stat]
        assert getattr(m, field) == pytest.approx(value, abs=precision), stat
    assert int(re.search(r"count=(\d+)", output.stdout).group(1)) == m.requests
    # k6's test run duration: the --duration plus setup() and the wait for the last iterations.
    assert row["duration_s"] <= m.measured_s < row["duration_s"] + 0.5
    values = [m.lat_min_ms, m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p95_ms, m.lat_p99_ms, m.lat_max_ms]
    assert values == sorted(values)
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(m, name) == pytest.approx(row[name]), name


@pytest.mark.parametrize("case", CASES)
def test_load_start_comes_from_the_setup_timestamp(case):
    output, meta = load(case)
    mark_ms = int(re.search(r"LTH_LOAD_START_MS (\d+)", output.stderr).group(1))
    assert ADAPTER.parse(load(case, launched_at=mark_ms / 1000 - 0.4)[0]).load_start_s == pytest.approx(0.4)
    assert ADAPTER.parse(output).load_start_s is None          # no launch time known
    # The harness recorded a start-up within a second of launch for these 20-VU runs.
    assert 0 <= meta["row"]["startup_s"] < 1


def test_missing_or_incomplete_summary_is_a_parse_error(tmp_path):
    with pytest.raises(ParseError, match="no summary"):
        ADAPTER.parse(load("vu20-host", out_dir=tmp_path)[0])
    (tmp_path / "k6-summary.json").write_text(json.dumps({"metrics": {"iterations": {"count": 1}}}))
    with pytest.raises(ParseError, match="http_reqs"):
        ADAPTER.parse(load("vu20-host", out_dir=tmp_path)[0])
    (tmp_path / "k6-summary.json").write_text("{truncated")
    with pytest.raises(ParseError):
        ADAPTER.parse(load("vu20-host", out_dir=tmp_path)[0])
