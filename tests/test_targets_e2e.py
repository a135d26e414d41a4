"""Every target setup, really started (issue 23): the host runtime's namespace with Nginx, HAProxy and
Caddy serving the file over HTTP and HTTPS and with a backend delay; a proxy that does not serve the file
stopped by the pre-flight in one line; and scenarios/targets.yaml, protocols.yaml and flows.yaml as a user types
them, in the as-typed tier's throw-away clone (tests/test_as_typed.py has the quick start there)."""
import csv
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, leftovers, make_as_typed, require_root_tools, selected_tools
from harness import targets
from harness.cpus import choose_split
from harness.runtimes.host import HostRuntime
from harness.targets import Setup

pytestmark = pytest.mark.e2e
SETUPS = [Setup(), Setup(tls=True), Setup(delay_ms=(100.0, 100.0)), Setup("nginx-proxy"), Setup("haproxy", tls=True),
          Setup("caddy"), Setup("caddy", tls=True), Setup(tls=True, protocol="h2"), Setup(protocol="h2c"),
          *(Setup(proxy, tls=True, protocol="h2") for proxy in ("nginx-proxy", "haproxy", "caddy")),
          *(Setup(proxy, protocol="h2c") for proxy in ("nginx-proxy", "haproxy", "caddy"))]
PROTOCOLS_TYPED = "h1tls-vu20-rtt0.1,h2-vu20-rtt0.1,h2c-vu20-s20-rtt0.1,h3-caddy-vu20-rtt0.1"
FLOW_TOOLS = ["wrk", "k6", "locust", "locust-http", "gatling", "jmeter", "artillery", "tsung", "grinder", "autocannon",
              "drill"]


def test_every_setup_serves_the_file_with_keep_alive_and_counts_at_nginx():
    require_root_tools("ip", "nginx", "haproxy", "caddy", "openssl")
    runtime = HostRuntime()
    runtime.split = choose_split()
    with runtime:
        for setup in SETUPS:
            runtime.use_target(setup)
            target = runtime._stack.stack.target
            before = target.counters()
            started = time.monotonic()
            runtime.check_target()                          # 3 GETs on one connection: status, length, reuse
            took = time.monotonic() - started
            after = target.counters()
            # The check's 3 requests reach Nginx (through the proxy) on one connection; stub_status adds one of each.
            assert (after.requests - before.requests, after.accepts - before.accepts) == (4, 2), setup
            assert target.url.startswith("https://" if setup.tls else "http://")
            if setup.delay_ms:
                assert took >= 3 * 0.1, took                   # each GET slept 100 ms at the file server
            facts = runtime.target_facts()
            assert facts["target_version"] and facts["target_stack"].startswith(setup.target), facts
            assert bool(runtime._stack.pids("proxy")) == targets.get(setup.target).is_proxy
            # an Nginx's master and one worker per CPU of its share (its `auto` would count the machine's)
            shares = runtime._stack.cpus
            assert len(runtime._stack.pids("upstream")) == 1 + len(shares["upstream"]), setup
            # the file server's folder directly under /tmp, as deep as a copy by hand (Nginx walks the path per request)
            master = Path(f"/proc/{runtime._stack.procs['upstream'].pid}/cmdline").read_text().replace("\0", " ").split()
            assert Path(master[master.index("-p") + 1]).parent == Path("/tmp"), master
            if setup.target == "nginx-proxy":
                assert len(runtime._stack.pids("proxy")) == 1 + len(shares["proxy"]), setup
            if setup.checked:
                assert_only_other_versions_are_logged(target, setup)
    assert leftovers() == []


def assert_only_other_versions_are_logged(target, setup: Setup) -> None:
    """The file server's log of the tools' port (behind a proxy: of what the proxy's client spoke): the harness's
    own HTTP/1.1 requests (the check above, stub_status) are not in it, an HTTP/2 request is not, an HTTP/1.1 request
    there is (h2: ALPN lets it fall back; Caddy's h2c port answers HTTP/1.1 too)."""
    protocol = setup.protocol
    curl = ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_version}", target.url]
    assert target.off_protocol_requests(0) == {}, protocol
    assert subprocess.run([*curl[:-1], "--http2-prior-knowledge" if protocol == "h2c" else "--http2", target.url],
                          capture_output=True, text=True).stdout == "2"
    assert target.off_protocol_requests(0) == {}
    fallback = subprocess.run([*curl[:-1], "--http1.1", target.url], capture_output=True, text=True).stdout
    if protocol == "h2" or setup.target == "caddy":
        assert fallback == "1.1" and target.off_protocol_requests(0) == {"HTTP/1.1": 1}
    else:                                                           # h2c's port speaks HTTP/2 only
        assert fallback != "1.1" and target.off_protocol_requests(0) == {}


def test_a_proxy_that_does_not_serve_the_file_is_refused_in_one_line(tmp_path):
    require_root_tools("ip", "nginx", "haproxy")
    broken = tmp_path / "extra" / "broken-proxy"
    broken.mkdir(parents=True)
    haproxy = targets.get("haproxy").folder
    (broken / "target.toml").write_text((haproxy / "target.toml").read_text())
    (broken / "haproxy.cfg.j2").write_text((haproxy / "haproxy.cfg.j2").read_text()
                                           .replace("server files {{ upstream }}", "server files 127.0.0.1:9"))
    scenarios = tmp_path / "s.yaml"
    scenarios.write_text("scenarios:\n  - {id: x, vus: 1, rtt_ms: 0.1, duration_s: 2, target: broken-proxy}\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "latest").symlink_to("an-earlier-run")
    result = subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "host", "--tools", "wrk",
                             "--scenarios", str(scenarios), "--results", str(tmp_path / "results")], cwd=REPO,
                            capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LTH_EXTRA_TARGETS": str(broken.parent)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == ("error: target broken-proxy -> nginx failed its pre-flight check: target check failed: "
                             "GET http://198.18.0.2:80/style.css returned 503, expected 200\n")
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["latest"]   # no empty folder left
    assert (tmp_path / "results" / "latest").readlink().name == "an-earlier-run"  # latest as it was
    assert leftovers() == []


TYPED = "ka-off-vu20-rtt0.1,tls-vu20-rtt0.1,haproxy-vu16,delay0-1000-vu1000"


def bench_all(bench_quick, runtime: str, *arguments: str, returncode: int = 0,
              test_tools: Path | None = None) -> tuple[Path, list[dict], str]:
    """`make bench-all ARGUMENTS DURATION=3` in the runtime's as-typed clone (the quick start's, shared): the
    results folder it left, its rows and what make printed."""
    clone = bench_quick(runtime).latest.parent.parent
    result = make_as_typed(clone, "bench-all", *arguments, "DURATION=3", test_tools=test_tools)
    output = result.stdout + result.stderr
    assert result.returncode == returncode, output[-3000:]
    latest = clone / "results" / "latest"
    return latest, list(csv.DictReader((latest / "runs.csv").open())), output


def test_make_bench_all_targets_as_typed_on_the_host(bench_quick):
    """`make bench-all RUNTIME=host SCENARIOS=scenarios/targets.yaml:... TOOLS=wrk,oha,h2load CAPTURE=1` in the
    clone: keep-alive off checked on the wire, TLS, a proxy with its CPU apart, the slow backend held,
    h2load's keep-alive off an unsupported row with its reason, and the report's three tables."""
    tools = {"wrk", "oha", "h2load"}
    if selected_tools() is not None and not tools <= selected_tools():
        pytest.skip("wrk, oha and h2load are not among the selected tools")
    latest, runs, _ = bench_all(bench_quick, "host", "RUNTIME=host", f"SCENARIOS=scenarios/targets.yaml:{TYPED}",
                                "TOOLS=wrk,oha,h2load", "CAPTURE=1")
    rows = {(r["scenario"], r["tool"]): r for r in runs}
    assert len(rows) == 4 * 3
    unsupported = rows[("ka-off-vu20-rtt0.1", "h2load")]
    assert unsupported["status"] == "unsupported" and unsupported["error"].startswith("keep-alive off not supported: ")
    for tool in ("wrk", "oha"):
        off = rows[("ka-off-vu20-rtt0.1", tool)]
        assert off["status"] == "ok" and off["keepalive"] == "False", off
        assert 0.95 <= float(off["wire_requests_per_connection"]) <= 1.05, off      # a connection per request
        assert int(off["server_connections"]) >= 0.95 * int(off["server_requests"]), off
    ok = {key: r for key, r in rows.items() if r["status"] == "ok"}
    assert set(rows) - set(ok) == {("ka-off-vu20-rtt0.1", "h2load")}, [r["error"] for r in rows.values()]
    for (scenario, tool), row in ok.items():
        if scenario != "ka-off-vu20-rtt0.1":
            assert float(row["wire_requests_per_connection"]) > 2, row           # keep-alive on: reused
        assert row["target_stack"] and row["target_version"], row
    row = ok[("haproxy-vu16", "wrk")]
    assert row["target"] == "haproxy" and 0 < float(row["proxy_cpu_pct"]) < float(row["target_cpu_pct"]), row
    assert row["target_stack"].startswith("haproxy"), row
    assert ok[("tls-vu20-rtt0.1", "oha")]["tls"] == "True"
    for tool in ("wrk", "oha", "h2load"):
        slow = ok[("delay0-1000-vu1000", tool)]
        assert 0.3 < float(slow["lat_p50_ms"]) / 500 < 1.5, slow                  # the file server slept
        assert float(slow["rtt_measured_ms"]) < 5, slow                            # the probe was not delayed
    html = (latest / "report" / "index.html").read_text()
    for table in ("targets-cost-table", "targets-proxy-table", "targets-slow-table"):
        assert f'id="{table}"' in html
    assert "keep-alive off not supported" in html and "held 1,000 connections" in html


def test_make_bench_all_targets_as_typed_in_docker(bench_quick):
    """The same in the Docker runtime (its default): a proxy container in front of the upstream Nginx
    container, TLS ended in the Nginx container."""
    if selected_tools() is not None and "wrk" not in selected_tools():
        pytest.skip("wrk is not among the selected tools")
    latest, runs, _ = bench_all(bench_quick, "docker", "SCENARIOS=scenarios/targets.yaml:tls-vu20-rtt0.1,haproxy-vu16",
                                "TOOLS=wrk")
    rows = {r["scenario"]: r for r in runs}
    assert {r["status"] for r in rows.values()} == {"ok"}, rows
    assert rows["haproxy-vu16"]["runtime"] == "docker" and float(rows["haproxy-vu16"]["proxy_cpu_pct"]) > 0
    assert (latest / rows["haproxy-vu16"]["run_dir"] / "upstream.log").is_file()
    assert rows["tls-vu20-rtt0.1"]["tls"] == "True" and int(rows["tls-vu20-rtt0.1"]["server_requests"]) > 0


def test_make_bench_all_protocols_as_typed_on_the_host(bench_quick):
    """`make bench-all RUNTIME=host SCENARIOS=scenarios/protocols.yaml:... TOOLS=h2load,oha,vegeta,k6,wrk,
    fault-h2-fallback CAPTURE=1 DURATION=3` in the host clone (a run of its own: another scenario file than the
    shared runs', with the suite's fault tool, h2load always told --h1 while it claims h2): each HTTP/2 row ok was
    HTTP/2 at the file server with the connections asked for, and on the wire every connection opened in HTTP/2;
    the fallback is a failed row with the server's count and the wire's ALPN offer, a tool that cannot is an
    unsupported row with why, and HTTP/1.1 over TLS stays HTTP/1.1; oha's HTTP/3 through Caddy is HTTP/3.0 at the
    server (its ~30 s wind-down waited for)."""
    tools = {"h2load", "oha", "vegeta", "k6", "wrk"}
    if selected_tools() is not None and not tools <= selected_tools():
        pytest.skip("h2load, oha, vegeta, k6 and wrk are not among the selected tools")
    # The fault's failed row makes the harness exit 1, and make 2; everything else ran.
    latest, runs, output = bench_all(bench_quick, "host", "RUNTIME=host",
                                     f"SCENARIOS=scenarios/protocols.yaml:{PROTOCOLS_TYPED}",
                                     "TOOLS=h2load,oha,vegeta,k6,wrk,fault-h2-fallback", "CAPTURE=1", returncode=2,
                                     test_tools=REPO / "tests" / "fault_tools")
    assert "14 of 24 runs ok, 9 unsupported" in output, output[-3000:]
    assert "failed: h2-vu20-rtt0.1 fault-h2-fallback: protocol h2 was asked" in output
    rows = {(r["scenario"], r["tool"]): r for r in runs}
    assert len(rows) == 4 * 6
    status = {key: row["status"] for key, row in rows.items()}
    h2 = {tool for (scenario, tool), s in status.items() if scenario == "h2-vu20-rtt0.1" and s == "ok"}
    h2c = {tool for (scenario, tool), s in status.items() if scenario == "h2c-vu20-s20-rtt0.1" and s == "ok"}
    assert h2 == {"h2load", "oha", "vegeta", "k6"} and h2c == {"h2load", "oha", "vegeta"}, status
    for (scenario, tool), row in rows.items():
        if row["status"] != "ok":
            continue
        if scenario == "h1tls-vu20-rtt0.1":
            assert row["protocol"] == "http/1.1" and row["server_off_protocol_requests"] == "", row
            continue
        if scenario == "h3-caddy-vu20-rtt0.1":
            assert tool == "oha" and row["server_off_protocol_requests"] == "0" and int(row["server_requests"]) > 500
            assert "HTTP/3 (h3) at caddy on port UDP 443" in row["target_stack"], row
            assert "oha #835" in row["notes"] and float(row["measured_s"]) == 3.0, row
            assert "no wire capture: HTTP/3 is QUIC over UDP" in row["notes"], row
            continue
        assert row["server_off_protocol_requests"] == "0" and int(row["server_requests"]) > 1000, row
        assert int(row["server_connections"]) == (20 if scenario == "h2-vu20-rtt0.1" else 1), row   # vus / streams
        assert row["wire_h2_connections"] == row["wire_connections"] == row["server_connections"], row
        assert f"HTTP/2 ({row['protocol']}) at nginx" in row["target_stack"], row
    fallback = rows[("h2-vu20-rtt0.1", "fault-h2-fallback")]
    assert fallback["status"] == "failed" and "the file server answered" in fallback["error"], fallback
    assert " HTTP/1.1 on the tools' port" in fallback["error"] and "did not speak HTTP/2" in fallback["error"]
    assert "wire: 0 of 20 connections opened in HTTP/2 (ALPN offered http/1.1 on 20)" in fallback["notes"], fallback
    assert rows[("h1tls-vu20-rtt0.1", "fault-h2-fallback")]["status"] == "ok"        # HTTP/1.1 is what it speaks
    assert rows[("h2-vu20-rtt0.1", "wrk")]["error"] == \
        "h2 not supported: wrk speaks HTTP/1.1 only (HTTP/2 is wrk issues #254 and #499)"
    assert rows[("h2c-vu20-s20-rtt0.1", "k6")]["error"].startswith("h2c not supported: k6 speaks HTTP/2 only")
    assert rows[("h3-caddy-vu20-rtt0.1", "h2load")]["error"].startswith("h3 not supported: Debian's nghttp2-client")
    html = (latest / "report" / "index.html").read_text()
    assert 'id="http2-table"' in html and "the tool did not speak HTTP/2" in html


def test_make_bench_all_protocols_as_typed_in_docker(bench_quick):
    """The same in the Docker runtime: the target container's Nginx logs what the harness reads (its stack folder
    is mounted at the same path), oha and vegeta speak h2 to it and h2c on port 81, and to HAProxy (h2) and
    Caddy (h2c) in a proxy container in front of it, which say what their client spoke."""
    if selected_tools() is not None and not {"oha", "vegeta"} <= selected_tools():
        pytest.skip("oha and vegeta are not among the selected tools")
    scenarios = "h2-vu20-rtt0.1,h2c-vu20-s20-rtt0.1,h2-haproxy-vu20-rtt0.1,h2c-caddy-vu20-s20-rtt0.1"
    _, rows, _ = bench_all(bench_quick, "docker", f"SCENARIOS=scenarios/protocols.yaml:{scenarios}", "TOOLS=oha,vegeta")
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}, [r["error"] for r in rows]
    for row in rows:
        assert row["runtime"] == "docker" and row["server_off_protocol_requests"] == "0", row
        assert int(row["server_requests"]) > 1000, row
        if row["target"] == "nginx":
            assert int(row["server_connections"]) == (20 if row["scenario"] == "h2-vu20-rtt0.1" else 1), row
        else:
            assert f"HTTP/2 ({row['protocol']}) at {row['target']}" in row["target_stack"], row


def flows_as_typed(bench_quick, runtime: str) -> tuple[dict, str]:
    """`make bench-all SCENARIOS=scenarios/flows.yaml:flow-vu20-rtt0.1 TOOLS=<every scripting tool>,oha DURATION=3`
    in the runtime's clone (a run of its own: another scenario file and target than the shared runs', and the tools
    that script), with the suite's broken script on the host: its rows by tool, and the report's page."""
    fault = runtime == "host"
    tools = ",".join([*FLOW_TOOLS, "oha", *(["fault-flow-no-token"] if fault else [])])
    latest, runs, output = bench_all(bench_quick, runtime, f"RUNTIME={runtime}",
                                     "SCENARIOS=scenarios/flows.yaml:flow-vu20-rtt0.1", f"TOOLS={tools}",
                                     returncode=2 if fault else 0,
                                     test_tools=REPO / "tests" / "fault_tools" if fault else None)
    rows = {r["tool"]: r for r in runs}
    assert len(rows) == len(FLOW_TOOLS) + 1 + fault, output[-3000:]
    for tool in FLOW_TOOLS:
        row = rows[tool]
        assert row["status"] == "ok" and row["flow"] == "login" and row["runtime"] == runtime, (tool, row["error"])
        # The API's verdict: one login per VU, every GET carried a token it issued.
        assert row["server_logins"] == "20" and row["server_logins_refused"] == "0", row
        assert int(row["server_api_gets"]) > 100 and row["server_api_gets_refused"] == "0", row
        assert row["target_stack"].startswith("api: nginx"), row
    assert rows["oha"]["status"] == "unsupported" and rows["oha"]["error"].startswith("login flow not supported: oha")
    for tool in ("k6", "locust", "gatling", "jmeter", "drill", "grinder", "artillery"):   # they time steps apart
        assert rows[tool]["lat_api_get_p99_ms"] and rows[tool]["lat_login_p99_ms"], rows[tool]
    html = (latest / "report" / "index.html").read_text()
    assert 'id="flows-table"' in html and 'id="flows-cannot-table"' in html
    return rows, html


def test_make_bench_all_flows_as_typed_on_the_host(bench_quick):
    """Every tool that scripts the login flow runs it ok on the host, judged by the API's counts; the broken script
    (the token in a header the API does not read) is a failed row with the API's refusals; oha cannot (its reason)."""
    if selected_tools() is not None and not set(FLOW_TOOLS) <= selected_tools():
        pytest.skip("not every scripting tool is among the selected tools")
    rows, html = flows_as_typed(bench_quick, "host")
    broken = rows["fault-flow-no-token"]
    assert broken["status"] == "failed" and broken["error"].startswith("flow login: the API answered 20 logins and "
                                                                       "0 GETs, refused 0 logins and "), broken
    assert "the tool did not log in and carry the token as scripted" in broken["error"] and "failed: flow" in html


def test_make_bench_all_flows_as_typed_in_docker(bench_quick):
    """The same in the Docker runtime: the api target's own image (njs), each tool's image running its script."""
    if selected_tools() is not None and not set(FLOW_TOOLS) <= selected_tools():
        pytest.skip("not every scripting tool is among the selected tools")
    flows_as_typed(bench_quick, "docker")
