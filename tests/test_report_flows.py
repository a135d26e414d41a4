"""The report's scripted-flows section and the scorecard's login-flow cell (analysis/flows.py, analysis/scorecard.py)
on rows as runs.csv holds them: the flow's requests per CPU-second against the same tool's plain GET at the same
level, the API's counts beside the tool's, a failed flow with the API's verdict, the tools that cannot."""
import pandas as pd

from analysis import flows, scorecard


def run(tool: str, scenario: str, flow: str | None = None, rps: float = 1000.0, cpu: float = 50.0,
        status: str = "ok", error: str = "", relogin_every: float | None = None, **server) -> dict:
    return {"runtime": "host", "tool": tool, "label": tool, "target": "api", "vus": 20, "rtt_target_ms": 0.1,
            "tls": "False", "keepalive": "True", "protocol": "http/1.1", "backend_delay_ms": None, "flow": flow,
            "relogin_every": relogin_every, "scenario": scenario, "status": status, "error": error,
            "rps": rps if status == "ok" else None, "cpu_avg_pct": cpu, "requests": rps * 3,
            "lat_login_p50_ms": server.pop("login_p50", None), "lat_api_get_p50_ms": server.pop("get_p50", None),
            "server_logins": 20, "server_api_gets": rps * 3 - 20, "server_logins_refused": 0,
            "server_api_gets_refused": 0, "folder": "f", "run_dir": f"{scenario}/{tool}", **server}


def frame() -> pd.DataFrame:
    return pd.DataFrame([run("wrk", "get"), run("wrk", "flow", "login", rps=600, cpu=100.0),
                         run("k6", "get", rps=400, cpu=100.0), run("k6", "flow", "login", rps=100, cpu=100.0,
                                                                    login_p50=2.0, get_p50=1.0),
                         run("k6", "flow-relogin", "login", rps=90, cpu=100.0, relogin_every=10.0),
                         run("jmeter", "flow", "login", status="failed",
                             error="flow login: the API answered 20 logins and 0 GETs, refused 0 logins and 2,980"),
                         run("oha", "flow", "login", status="unsupported", error="login flow not supported: oha")])


def test_the_cost_of_scripting_is_per_core_against_the_same_tools_plain_get():
    section = flows.table(frame())
    lines = {(line["tool"], line["scenario"]): line for line in section["cost"]}
    assert lines[("wrk", "flow")]["per core vs plain"] == "30%"          # 600/1.0 against 1000/0.5
    assert lines[("k6", "flow")]["per core vs plain"] == "25%" and lines[("k6", "flow")]["login p50 ms"]
    assert lines[("k6", "flow-relogin")]["relogin every"] == "10" and lines[("k6", "flow")]["relogin every"] == "once"
    assert lines[("wrk", "flow")]["API logins"] == "20" and lines[("wrk", "flow")]["API 401s"] == "0"
    assert lines[("jmeter", "flow")]["result"].startswith("failed: flow login: the API answered 20 logins")
    assert section["cannot"] == [{"tool": "oha", "runtime": "host", "why": "login flow not supported: oha"}]


def test_the_scorecard_says_what_scripting_costs_and_who_cannot():
    declared = {"wrk": True, "k6": True, "jmeter": True, "oha": "oha sends one fixed request"}
    cells = scorecard.flow_cells(frame(), declared.get)
    assert cells["wrk"].text == "yes: 30% of its plain-GET req / CPU-s (flow)" and cells["wrk"].facts["share"] == 0.3
    assert cells["oha"].text == "no" and cells["oha"].facts == {"answer": "no"}
    assert cells["jmeter"].facts == {"answer": "yes"}                                   # no ok flow run
    row = {column: scorecard.Cell("") for column in scorecard.COLUMNS}
    assert "scripts the login flow at 30% of its plain-GET rate per core" in scorecard.sentence(
        "wrk", {**row, "login_flow": cells["wrk"]})
    assert "cannot script the login flow" in scorecard.sentence("oha", {**row, "login_flow": cells["oha"]})


def test_no_flow_no_section_and_no_no():
    plain = pd.DataFrame([run("wrk", "get")])
    assert flows.table(plain) == {} and scorecard.flow_cells(plain, {"wrk": "no"}.get)["wrk"].facts == {}
