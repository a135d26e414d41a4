"""Tsung adapter: the command and its config template, and the parser on a real run
(tests/fixtures/tsung/vu20-host/, copied from a harness run folder).

Parsed figures are checked against what is independent of what the parser reads in the same raw
output: Tsung's http_200 and 'page' counters, the users' start/end notes, and Nginx's request
count (meta.json server_requests).
"""
import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from harness import TOOLS_DIR
from harness.flows import LOGIN
from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, command_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tsung"
ADAPTERS = discover()
CASE = FIXTURES / "vu20-host"
TSUNG = ADAPTERS["tsung"]
combine_requests = type(TSUNG).parse.__globals__["combine_requests"]   # adapter modules are loaded by path
combine_sample = type(TSUNG).parse.__globals__["combine_sample"]


def load(folder: Path, launched_at: float = 0.0) -> tuple[ToolOutput, dict]:
    return captured_run(folder, launched_at=launched_at)


def stats_samples(folder: Path) -> list[dict]:
    data = json.loads(next((folder / "log").glob("*/tsung.log")).read_text())
    return [{s["name"]: s for s in dump["samples"]} for dump in data["stats"]]


def test_command_runs_the_wrapper_with_the_target_split_up(tmp_path):
    spec = command_spec(tmp_path)
    argv = TSUNG.command(spec)
    assert argv == [str(TOOLS_DIR / "tsung" / "run.sh"), str(tmp_path), "198.18.0.2", "80", "/style.css", "20", "5"]


def test_keepalive_off_and_tls_are_run_sh_options(tmp_path):
    argv = TSUNG.command(command_spec(tmp_path, url="https://198.18.0.2/style.css", keepalive=False))
    assert argv == [str(TOOLS_DIR / "tsung" / "run.sh"), str(tmp_path), "198.18.0.2", "443", "/style.css", "20", "5",
                    "--close", "--ssl"]
    assert TSUNG.command(command_spec(tmp_path, url=TLS_URL))[-2:] == ["5", "--ssl"]


def filled_config(tmp_path: Path, *options: str, out_name: str = "run", url_path: str = "/style.css") -> ET.Element:
    """The tsung.xml run.sh writes, with erlc, tsung and epmd replaced by stubs that do nothing."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("erlc", "tsung", "epmd"):
        (stubs / name).write_text("#!/bin/sh\nexit 0\n")
        (stubs / name).chmod(0o755)
    out = tmp_path / out_name
    out.mkdir()
    subprocess.run([str(TOOLS_DIR / "tsung" / "run.sh"), str(out), "198.18.0.2", "443", url_path, "20", "5", *options],
                   env={**os.environ, "PATH": f"{stubs}:/usr/bin:/bin"}, check=True, capture_output=True)
    text = (out / "tsung.xml").read_text()
    return ET.fromstring(text[text.index("<tsung "):])


@pytest.mark.parametrize("options, server_type, headers", [
    ((), "tcp", []),
    (("--close", "--ssl"), "ssl", [{"name": "Connection", "value": "close"}]),
])
def test_run_sh_fills_the_server_type_and_the_connection_header(tmp_path, options, server_type, headers):
    config = filled_config(tmp_path, *options)
    assert config.find("servers/server").attrib == {"host": "198.18.0.2", "port": "443", "type": server_type}
    http = config.find(".//request/http")
    assert http.attrib == {"url": "/style.css", "method": "GET", "version": "1.1"}
    assert [h.attrib for h in http.findall("http_header")] == headers


def test_a_folder_or_url_path_holding_xml_or_sed_characters_comes_out_as_itself(tmp_path):
    """sed's | delimiter, its & and \\, and XML's & < > " ': each was taken as syntax (sed failed, or the XML
    did not parse, or named another file)."""
    folder, url_path = "run a|b & <c> \"d\" 'e' \\f", "/style.css?a=1&b=<2>|3"
    config = filled_config(tmp_path, out_name=folder, url_path=url_path)
    assert config.find(".//request/http").attrib["url"] == url_path
    users_file = next(s for s in config.iter("setdynvars") if s.find("var").attrib["name"] == "lth_users_file")
    assert users_file.attrib["value"] == str(tmp_path / folder / "lth-users.txt")


def test_template_and_wrapper_keep_their_promises():
    template = (TOOLS_DIR / "tsung" / "tsung.xml.in").read_text()
    assert 'backend="json"' in template and 'dumptraffic="false"' in template
    assert 'maxnumber="@VUS@"' in template and "<thinktime" not in template
    assert 'callback="lth_tsung:go"' in template and '<while var="lth_go" eq="1"/>' in template
    run = (TOOLS_DIR / "tsung" / "run.sh").read_text()
    assert "tsung -n -w 0" in run and "epmd -kill" in run and "erlc" in run
    assert 'epmd_before" = no' in run       # never kill an epmd that was running before


def test_parser_agrees_with_tsungs_counters_users_and_nginx():
    output, meta = load(CASE)
    row = meta["row"]
    metrics = TSUNG.parse(output)
    dumps = stats_samples(CASE)
    assert metrics.requests == dumps[-1]["http_200"]["total"] == sum(d["page"]["value"] for d in dumps if "page" in d)
    assert metrics.errors == 0
    assert metrics.requests == row["server_requests"]        # users stop themselves: nothing lost
    users = (CASE / "lth-users.txt").read_text().split()
    assert users.count("start") == users.count("end") == row["vus"]
    assert row["duration_s"] <= metrics.measured_s <= row["duration_s"] + 0.3
    assert metrics.rps == pytest.approx(metrics.requests / metrics.measured_s) and metrics.rps > 0
    assert metrics.lat_min_ms <= metrics.lat_mean_ms <= metrics.lat_max_ms
    assert metrics.lat_p50_ms is None and metrics.lat_p99_ms is None and not TSUNG.reports_percentiles
    assert metrics.notes == []
    for name in ("requests", "errors", "rps", "lat_mean_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_load_start_comes_from_the_first_user_start():
    starts = [int(line.split()[1]) for line in (CASE / "lth-users.txt").read_text().splitlines()
              if line.startswith("start")]
    output, _ = load(CASE, launched_at=min(starts) / 1e6 - 0.4)
    assert TSUNG.parse(output).load_start_s == pytest.approx(0.4)


def test_intervals_combine_like_one_sample():
    rng = np.random.default_rng(1)
    parts = [rng.exponential(1.0, 500), rng.exponential(3.0, 300)]
    dumps = [{"request": {"value": len(p), "mean": p.mean(), "stddev": p.std(), "min": 0, "max": 0}} for p in parts]
    dumps[-1]["request"].update(min=min(p.min() for p in parts), max=max(p.max() for p in parts))
    combined = combine_requests(dumps)
    whole = np.concatenate(parts)
    assert combined["count"] == 800
    assert combined["mean"] == pytest.approx(whole.mean())
    assert combined["stddev"] == pytest.approx(whole.std())
    assert combined["max"] == whole.max() and not math.isnan(combined["stddev"])


def test_an_aborted_run_with_unterminated_json_still_parses_and_is_noted(tmp_path):
    shutil.copytree(CASE, tmp_path / "run")
    stats = next((tmp_path / "run" / "log").glob("*/tsung.log"))
    text = stats.read_text().rstrip()
    assert text.endswith("]}]}")
    aborted = text[: -len("]}]}")].rstrip() + ', {"name": "error_abort", "value": 1, "total": 1}'
    stats.write_text(aborted)
    output, _ = load(tmp_path / "run")
    metrics = TSUNG.parse(output)
    assert metrics.errors == 1 and any("aborted" in n for n in metrics.notes)


def test_missing_stats_is_a_parse_error(tmp_path):
    spec = command_spec(tmp_path)
    with pytest.raises(ParseError, match="tsung.log"):
        TSUNG.parse(ToolOutput(spec, "", "", 0))
    (tmp_path / "log" / "20260101-0000").mkdir(parents=True)
    (tmp_path / "log" / "20260101-0000" / "tsung.log").write_text('{"stats": [{"timestamp": 1, "samples": []}]}')
    with pytest.raises(ParseError, match="no request"):
        TSUNG.parse(ToolOutput(spec, "", "", 0))


@pytest.mark.parametrize("folder, refused", [
    ("/work/results", ""), ("/tmp/lth-x/2026_11-27.a+b@c:d=e~f%g,h", ""),
    ("/tmp/my results", " "), ("/tmp/a'b\"c", "\"'"), ("/tmp/{a,b}*", "*{}"),
])
def test_a_results_folder_tsungs_own_script_cannot_take_is_refused_before_the_suite(folder, refused):
    """/usr/bin/tsung leaves its -l and -X paths unquoted (some inside Erlang strings): a space split the
    log folder in two, mid-run. The plan refuses such a folder in one line, before anything starts."""
    from harness.cpus import NO_SPLIT
    from harness.errors import HarnessError
    from harness.suite.plan import Plan
    problem = TSUNG.folder_problem(Path(folder))
    assert (problem is None) if not refused else f"holding {refused!r}" in problem
    if refused:
        with pytest.raises(HarnessError, match=f"--results-root {re.escape(folder)}: Tsung's own start script"):
            Plan(runtime="host", tools=[TSUNG], scenarios=[], results_root=Path(folder), split=NO_SPLIT)


# --- the login flow (issue 37) --------------------------------------------------------------------------------
FLOW_CASE = FIXTURES / "flow-vu20"
FLOW_OPTIONS = ["--login-path", "/api/auth/login", "--login-method", "POST",
                "--login-body", '{"username":"lth-user","password":"lth-password"}',
                "--login-content-type", "application/json", "--token-field", "token", "--token-header", "Authorization"]


def flow_spec(tmp_path: Path, relogin_every: int | None = None, **kwargs) -> RunSpec:
    return dataclasses.replace(command_spec(tmp_path, **kwargs), flow=LOGIN, relogin_every=relogin_every)


def test_a_flow_spec_runs_the_flow_session_with_its_paths_header_and_relogin(tmp_path):
    argv = TSUNG.command(flow_spec(tmp_path, relogin_every=10))
    # The same server as the plain GET; PATH is the API's GET, the login goes in options.
    assert argv == [str(TOOLS_DIR / "tsung" / "run.sh"), str(tmp_path), "198.18.0.2", "80",
                    "/api/contact?size=20&page=0", "20", "5", *FLOW_OPTIONS, "--relogin-every", "10"]
    tls = TSUNG.command(flow_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert tls[3] == "443" and tls[7:9] == ["--close", "--ssl"] and tls[-2:] == ["--relogin-every", "0"]
    assert TSUNG.login_flow is True
    plain = TSUNG.command(command_spec(tmp_path))
    assert plain == [str(TOOLS_DIR / "tsung" / "run.sh"), str(tmp_path), "198.18.0.2", "80", "/style.css", "20", "5"]


@pytest.mark.parametrize("relogin, gets_per_login", [("10", "10"), ("0", "2000000000")])
def test_run_sh_keeps_the_flow_session_with_the_token_carried(tmp_path, relogin, gets_per_login):
    config = filled_config(tmp_path, *FLOW_OPTIONS, "--relogin-every", relogin, url_path="/api/contact?size=20&page=0")
    sessions = config.findall("sessions/session")
    assert [s.attrib["name"] for s in sessions] == ["lth_flow"]
    login, get = (t.find("request") for t in sessions[0].iter("transaction"))
    assert [t.attrib["name"] for t in sessions[0].iter("transaction")] == ["login", "api_get"]
    assert login.find("dyn_variable").attrib == {"name": "lth_token", "jsonpath": "token"}
    assert login.find("http").attrib == {"url": "/api/auth/login", "method": "POST", "version": "1.1",
                                         "contents": '{"username":"lth-user","password":"lth-password"}',
                                         "content_type": "application/json"}
    assert get.attrib["subst"] == "true"
    assert get.find("http").attrib["url"] == "/api/contact?size=20&page=0"
    assert [h.attrib for h in get.find("http").findall("http_header")] == [
        {"name": "Authorization", "value": "%%_lth_token%%"}]
    loop = sessions[0].find("repeat/for")
    assert loop.attrib == {"var": "lth_i", "from": "1", "to": gets_per_login, "incr": "1"}
    assert loop.find("setdynvars").attrib["callback"] == "lth_tsung:next"
    # The plain run keeps only the GET session.
    (tmp_path / "plain").mkdir()
    plain = filled_config(tmp_path / "plain")
    assert [s.attrib["name"] for s in plain.findall("sessions/session")] == ["lth"]


def test_run_sh_refuses_a_relogin_that_is_not_a_count(tmp_path):
    with pytest.raises(subprocess.CalledProcessError):
        filled_config(tmp_path, *FLOW_OPTIONS, "--relogin-every", "ten")


def flow_output() -> tuple[ToolOutput, dict]:
    output, meta = load(FLOW_CASE)
    return ToolOutput(dataclasses.replace(output.spec, flow=LOGIN), output.stdout, output.stderr, 0), meta


def test_flow_parser_agrees_with_the_apis_counts_and_tsungs_transactions():
    output, meta = flow_output()
    row = meta["row"]
    metrics = TSUNG.parse(output)
    dumps = stats_samples(FLOW_CASE)
    login, api_get = (combine_sample(dumps, name) for name in ("tr_login", "tr_api_get"))
    # Every request is a step: the totals are over logins and GETs, as the API counted them.
    assert metrics.requests == login["count"] + api_get["count"] == row["server_requests"]
    assert login["count"] == row["server_logins"] == row["vus"] and api_get["count"] == row["server_api_gets"]
    assert row["server_logins_refused"] == row["server_api_gets_refused"] == metrics.errors == 0
    assert (FLOW_CASE / "tsung.xml").read_text().count('<session name="lth_flow"') == 1
    # Tsung times each step (its transactions) but computes no percentiles: the per-step columns stay empty.
    assert [metrics.lat_login_p50_ms, metrics.lat_login_p99_ms, metrics.lat_api_get_p50_ms,
            metrics.lat_api_get_p99_ms] == [None] * 4
    assert metrics.notes == [f"per step (Tsung's transactions; means only, Tsung computes no percentiles): login "
                             f"{login['count']:,} timed, mean {login['mean']:.3f} ms, max {login['max']:.3f} ms, "
                             f"api_get {api_get['count']:,} timed, mean {api_get['mean']:.3f} ms, max "
                             f"{api_get['max']:.3f} ms"]
    assert "tr_login" in metrics.source
    for name in ("requests", "errors", "rps", "lat_mean_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_the_plain_run_has_no_step_note():
    output, _ = load(CASE)
    assert TSUNG.parse(output).notes == [] and "tr_login" not in TSUNG.parse(output).source
