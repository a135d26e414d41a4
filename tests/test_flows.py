"""Scripted flows (issue 37), without a network: the scenario fields and their refusals (the CLI's one line and
exit 2: rows 68-70 of tests/README's bad-input contract), what a tool that cannot is told, what wrk is given, and
the row that judges a run by the API's counts. The real API: tests/test_api_target.py; every tool's flow end to
end: tests/test_targets_e2e.py."""

import pytest
from pydantic import ValidationError

from harness.flows import LOGIN
from harness.row import target as row_target
from harness.scenarios import Scenario
from harness.store.results import RunRow
from harness.tools import capabilities, registry
from harness.tools.output import RunSpec

TOOLS = registry.discover()


def scenario(**fields) -> Scenario:
    return Scenario(**{"id": "s", "vus": 20, "rtt_ms": 0.1, "duration_s": 5, "target": "api", **fields})


@pytest.mark.parametrize("fields, says", [
    ({"flow": "checkout"}, "unknown flow 'checkout'; flows: login (harness/flows.py)"),
    ({"flow": "login", "target": "nginx"}, "target nginx has no API for flow login: use target: api"),
    ({"relogin_every": 10}, "relogin_every goes with a flow: add flow: login"),
    ({"flow": "login", "protocol": "h2", "tls": True}, "flow with protocol h2: flows run over HTTP/1.1 only so far"),
    ({"flow": "login", "rate_rps": 100}, "flow with rate_rps: the open model is not wired for flows"),
    ({"flow": "login", "relogin_every": 0}, "relogin_every"),
])
def test_flow_fields_that_do_not_fit_are_refused_with_the_way_out(fields, says):
    with pytest.raises(ValidationError) as refused:
        scenario(**fields)
    assert says in str(refused.value)


def test_a_tool_that_cannot_script_gets_an_unsupported_row_with_its_reason():
    flow = scenario(flow="login")
    assert capabilities.unsupported_reason(flow, TOOLS["oha"]).startswith(
        "login flow not supported: oha sends one fixed request")
    assert capabilities.unsupported_reason(flow, TOOLS["wrk"]) is None
    assert capabilities.unsupported_reason(scenario(), TOOLS["oha"]) is None      # the plain GET of the api target
    cannot = [name for name, tool in TOOLS.items() if tool.login_flow is not True]
    assert {"ab", "hey", "oha", "bombardier", "h2load", "siege", "vegeta"} <= set(cannot)
    assert all(isinstance(TOOLS[name].login_flow, str) and TOOLS[name].login_flow for name in cannot)


def test_wrk_is_given_the_flow_by_its_script_arguments_and_the_plain_get_is_unchanged(tmp_path):
    plain = RunSpec("http://198.18.0.2:80/style.css", vus=20, duration_s=5, out_dir=tmp_path, cpus=2)
    flow = RunSpec("http://198.18.0.2:80/style.css", vus=20, duration_s=5, out_dir=tmp_path, cpus=2, flow=LOGIN,
                   relogin_every=10)
    wrk = TOOLS["wrk"]
    assert wrk.command(plain)[-3:] == ["-s", str(wrk.folder / "report.lua"), "http://198.18.0.2:80/style.css"]
    argv = wrk.command(flow)
    assert argv[argv.index("-s") + 1:argv.index("-s") + 3] == [str(wrk.folder / "flow.lua"), "http://198.18.0.2:80"]
    assert argv[argv.index("--") + 1:] == [LOGIN.login_path, LOGIN.login_body, "application/json", "token",
                                           LOGIN.get_path, "Authorization", "10", "10"]   # 20 VUs on 2 threads
    assert not list(tmp_path.iterdir())                                                    # command() wrote nothing


def row(**fields) -> RunRow:
    row = RunRow(tool="wrk", tool_version="4.1.0", runtime="host", scenario="s", vus=20, rtt_target_ms=0.1,
                 duration_s=5, status="ok", flow="login")
    for name, value in fields.items():
        setattr(row, name, value)
    return row


def api(logins_ok=20, logins_refused=0, gets_ok=10_000, gets_refused=0, other=0) -> dict:
    return {"logins_ok": logins_ok, "logins_refused": logins_refused, "gets_ok": gets_ok, "gets_refused": gets_refused,
            "other": other}


def test_the_api_judges_the_flow_not_the_tool():
    ran = row()
    row_target.check_flow(ran, api())
    assert ran.status == "ok" and (ran.server_logins, ran.server_api_gets, ran.server_api_gets_refused) == (20, 10_000, 0)
    no_token = row()
    row_target.check_flow(no_token, api(gets_ok=0, gets_refused=9_000))
    assert no_token.status == "failed" and no_token.error == (
        "flow login: the API answered 20 logins and 0 GETs, refused 0 logins and 9,000 GETs (401): the tool did not "
        "log in and carry the token as scripted")
    every_time = row()                                       # logs in before every GET: not the script
    row_target.check_flow(every_time, api(logins_ok=5_000, gets_ok=5_000))
    assert every_time.status == "failed" and "5,000 logins for 20 VUs, where each VU logs in once" in every_time.error
    relogin = row(relogin_every=10)
    row_target.check_flow(relogin, api(logins_ok=1_000, gets_ok=9_900))
    assert relogin.status == "ok"
    too_many = row(relogin_every=10)
    row_target.check_flow(too_many, api(logins_ok=100, gets_ok=9_900))
    assert too_many.status == "failed" and "more GETs per login than relogin_every 10" in too_many.error
    too_few = row(relogin_every=10)
    row_target.check_flow(too_few, api(logins_ok=5_000, gets_ok=5_000))
    assert too_few.status == "failed" and "1.0 GETs per login, where relogin_every is 10" in too_few.error
    plain = row(flow=None)
    row_target.check_flow(plain, None)
    assert plain.status == "ok" and plain.server_logins is None
