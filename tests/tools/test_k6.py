"""k6 adapter: the command and script, and the parser on real runs (tests/fixtures/k6/vu20-<runtime>/, and a login
flow's, tests/fixtures/k6/flow-vu20/: scenarios/flows.yaml flow-vu20-rtt0.1 on the host).

The parser reads k6's --summary-export JSON; every figure is checked against k6's own text summary
of the same run in stdout (printed with two decimals in its own unit) and against Nginx's count (a flow's steps
against the API's own counts of logins and GETs).
"""
import json
import re
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from harness.flows import LOGIN
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "k6"
ADAPTER = discover()["k6"]
CASES = cases("k6", "vu")
UNIT_MS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1000.0}


def load(case: str, launched_at: float = 0.0, out_dir: Path | None = None) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case, out_dir, launched_at)


def text_trend(stdout: str, metric: str) -> dict[str, tuple[float, float]]:
    """k6's printed trend line: {stat: (value in ms, printing precision in ms)}."""
    line = re.search(rf"^\s+{re.escape(metric)}\.+: (.*)$", stdout, re.MULTILINE).group(1)
    return _stats(line)


def _stats(line: str) -> dict[str, tuple[float, float]]:
    """The stats of one printed trend line (the part after its dots)."""
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


# --- the login flow (issue 37): flow.js, tags per step -------------------------------------------------------
def flow_spec(tmp_path: Path, relogin_every: int | None = None, url: str = "http://198.18.0.2:80/style.css") -> RunSpec:
    return RunSpec(url=url, vus=20, duration_s=5, out_dir=tmp_path, cpus=2, flow=LOGIN, relogin_every=relogin_every)


def env_of(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-e")


def test_flow_command_runs_flow_js_with_the_flow_in_its_environment(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    argv = ADAPTER.command(flow_spec(tmp_path, relogin_every=10))
    assert Path(argv[-1]) == ADAPTER.folder / "flow.js" and Path(argv[-1]).is_file()
    assert argv[:argv.index("-e")] == plain[:plain.index("-e")]          # the same VUs, duration and summary
    assert env_of(argv) == {
        "LTH_BASE": "http://198.18.0.2:80", "LTH_LOGIN_METHOD": "POST", "LTH_LOGIN_PATH": "/api/auth/login",
        "LTH_LOGIN_BODY": LOGIN.login_body, "LTH_LOGIN_CONTENT_TYPE": "application/json", "LTH_TOKEN_FIELD": "token",
        "LTH_GET_PATH": "/api/contact?size=20&page=0", "LTH_TOKEN_HEADER": "Authorization", "LTH_RELOGIN_EVERY": "10"}
    assert env_of(ADAPTER.command(flow_spec(tmp_path)))["LTH_RELOGIN_EVERY"] == "0"      # once per VU
    tls = ADAPTER.command(flow_spec(tmp_path, url=TLS_URL))
    assert "--insecure-skip-tls-verify" in tls and env_of(tls)["LTH_BASE"] == "https://198.18.0.2:443"
    # A plain spec is unchanged: script.js and LTH_URL only.
    assert env_of(plain) == {"LTH_URL": "http://198.18.0.2:80/style.css"} and plain[-1].endswith("script.js")


def test_flow_script_keeps_the_token_per_vu_and_tags_each_step():
    script = (ADAPTER.folder / "flow.js").read_text()
    assert "let token = null;" in script and "res.json(__ENV.LTH_TOKEN_FIELD)" in script
    assert "[__ENV.LTH_TOKEN_HEADER]: token" in script and "sleep(" not in script
    # Each tag the parser reads has its (empty: never failing) threshold, which keeps it in the summary.
    from tools.k6.adapter import STEP_TRENDS
    for step, trend in STEP_TRENDS.items():
        assert f"tags: {{ name: '{step}' }}" in script and f"'{trend}': []" in script


def test_flow_parser_reads_each_step_and_agrees_with_k6s_text_and_the_api():
    output, meta = load("flow-vu20")
    row, summary = meta["row"], json.loads((FIXTURES / "flow-vu20" / "k6-summary.json").read_text())["metrics"]
    m = ADAPTER.parse(output)
    # The totals are over every request of the flow, logins and GETs, as k6 counts them.
    assert m.requests == row["server_requests"] == row["server_logins"] + row["server_api_gets"] == 35614
    assert row["server_logins"] == 20 and row["server_logins_refused"] == row["server_api_gets_refused"] == 0
    assert summary["http_req_duration{name:login}"]["count"] == row["server_logins"]
    assert summary["http_req_duration{name:api_get}"]["count"] == row["server_api_gets"]
    count, rate = re.search(r"http_reqs\.+: (\d+)\s+([\d.]+)/s", output.stdout).groups()
    assert m.requests == int(count) and m.rps == pytest.approx(float(rate)) and m.errors == 0
    assert m.lat_p50_ms == pytest.approx(text_trend(output.stdout, "http_req_duration")["p(50)"][0], abs=0.01)
    # Each step's p50/p99 against k6's printed sub-metric lines ({ name:login }, { name:api_get }).
    for step in ("login", "api_get"):
        printed = _stats(re.search(rf"{{ name:{step} }}\.+: (.*)$", output.stdout, re.MULTILINE).group(1))
        for stat, field in (("p(50)", f"lat_{step}_p50_ms"), ("p(99)", f"lat_{step}_p99_ms")):
            value, precision = printed[stat]
            assert getattr(m, field) == pytest.approx(value, abs=precision), field
    # The 20 logins came first, while every VU started at once: slower than the GETs that followed.
    assert m.lat_login_p50_ms == pytest.approx(4.826, abs=0.001) and m.lat_api_get_p50_ms == pytest.approx(0.945, abs=0.001)
    assert "name:login" in m.source


def test_plain_runs_have_no_step_figures_and_a_flow_summary_needs_both_steps(tmp_path):
    m = ADAPTER.parse(load("vu20-host")[0])
    assert (m.lat_login_p50_ms, m.lat_login_p99_ms, m.lat_api_get_p50_ms, m.lat_api_get_p99_ms) == (None,) * 4
    data = json.loads((FIXTURES / "flow-vu20" / "k6-summary.json").read_text())
    del data["metrics"]["http_req_duration{name:api_get}"]
    (tmp_path / "k6-summary.json").write_text(json.dumps(data))
    with pytest.raises(ParseError, match="api_get"):
        ADAPTER.parse(load("flow-vu20", out_dir=tmp_path)[0])
