"""HTTP/2 (issue 38), without a network: the scenario fields and their one-line refusals, what each tool is
told for h2 and h2c, the file server's configuration and its log of requests in another HTTP version, and
the row that judges a run by that log. The real stacks and tools: tests/test_targets_e2e.py."""
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness import targets
from harness.scenarios import Scenario
from harness.store.record import RunRecord
from harness.store.results import RunRow
from harness.targets import Setup
from harness.targets.file_server import Target
from harness.tools import capabilities, registry
from harness.tools.output import RunSpec
from harness.row import target as row_target

TOOLS = registry.discover()


def scenario(**fields) -> Scenario:
    return Scenario(**{"id": "s", "vus": 20, "rtt_ms": 0.1, "duration_s": 5, **fields})


@pytest.mark.parametrize("fields, says", [
    ({"protocol": "h2"}, "protocol h2 is HTTP/2 over TLS (ALPN): add tls: true"),
    ({"protocol": "h2c", "tls": True}, "protocol h2c is cleartext HTTP/2: drop tls: true"),
    ({"streams": 4}, "streams is HTTP/2's requests in flight per connection: it needs protocol h2 or h2c"),
    ({"protocol": "h2c", "streams": 3}, "vus 20 is not a multiple of streams 3"),
    ({"protocol": "h3", "tls": True}, "target nginx does not serve protocol h3 (its target.toml protocols: "
                                      "http/1.1, h2, h2c): use target: caddy"),
    ({"protocol": "h3", "target": "caddy"}, "protocol h3 is HTTP/3 over QUIC, which is always TLS: add tls: true"),
    ({"protocol": "h3", "target": "caddy", "tls": True, "streams": 4}, "streams with protocol h3: not wired yet"),
    ({"protocol": "h2c", "keepalive": False}, "keepalive: false with protocol h2c"),
    ({"protocol": "h2c", "rate_rps": 100}, "rate_rps with protocol h2c"),
    ({"protocol": "http/2"}, "Input should be 'http/1.1', 'h2', 'h2c' or 'h3'"),
])
def test_protocol_fields_that_do_not_fit_are_refused_with_the_way_out(fields, says):
    with pytest.raises(ValidationError) as refused:
        scenario(**fields)
    assert says in str(refused.value)


def test_vus_are_requests_in_flight_connections_times_streams():
    assert scenario().connections == 20 and scenario().protocol == "http/1.1" and scenario().streams == 1
    assert scenario(protocol="h2c", streams=20).connections == 1
    assert scenario(protocol="h2", tls=True, streams=5).connections == 4
    assert RunSpec("http://x:81/f", vus=20, duration_s=5, out_dir=Path("/t"), cpus=2, protocol="h2c",
                   streams=10).connections == 2


def test_a_tool_gets_the_streams_it_can_hold_else_an_unsupported_row_with_why():
    h2load, k6, vegeta, wrk = TOOLS["h2load"], TOOLS["k6"], TOOLS["vegeta"], TOOLS["wrk"]
    one_connection = scenario(protocol="h2c", streams=20)
    assert capabilities.unsupported_reason(one_connection, h2load) is None            # any connections x streams
    assert capabilities.unsupported_reason(one_connection, vegeta) is None            # -h2c: one connection
    assert capabilities.unsupported_reason(scenario(protocol="h2c"), vegeta) == (
        "streams 1 at 20 VUs not supported: the tool's h2c holds one shared connection, every VU a stream on it "
        "(streams = vus)")
    assert capabilities.unsupported_reason(scenario(protocol="h2", tls=True), vegeta) is None   # a connection per VU
    assert capabilities.unsupported_reason(scenario(protocol="h2", tls=True, streams=20), k6).startswith(
        "streams 20 at 20 VUs not supported: the tool's h2 holds a connection per VU")
    assert capabilities.unsupported_reason(scenario(protocol="h2c"), k6).startswith("h2c not supported: k6 speaks")
    assert capabilities.unsupported_reason(scenario(protocol="h2", tls=True), wrk) == \
        "h2 not supported: wrk speaks HTTP/1.1 only (HTTP/2 is wrk issues #254 and #499)"


def spec(protocol="http/1.1", streams=1, tls=False, vus=20) -> RunSpec:
    url = f"{'https' if tls else 'http'}://198.18.0.2:{81 if protocol == 'h2c' else 443 if tls else 80}/style.css"
    return RunSpec(url, vus=vus, duration_s=5, out_dir=Path("/r"), cpus=2, protocol=protocol, streams=streams)


def test_each_tool_is_told_the_protocol_and_the_streams():
    h2load = TOOLS["h2load"].command
    assert h2load(spec())[1:8] == ["--h1", "-c", "20", "-t", "2", "-m", "1"]
    assert h2load(spec("h2", 5, tls=True))[1:7] == ["-c", "4", "-t", "2", "-m", "5"]
    assert "--h1" not in h2load(spec("h2c", 20)) and h2load(spec("h2c", 20))[1:3] == ["-c", "1"]
    oha = TOOLS["oha"].command(spec("h2c", 10))
    assert oha[oha.index("-c") + 1] == "2" and oha[oha.index("--http2") + 1:oha.index("--http2") + 3] == ["-p", "10"]
    assert "--http2" not in TOOLS["oha"].command(spec(tls=True))
    vegeta = TOOLS["vegeta"]
    assert vegeta.attack_options(spec("h2", tls=True)).split() == ["-insecure", "-http2=true"]
    assert vegeta.attack_options(spec("h2c", 20)).split() == ["-h2c"]
    assert vegeta.attack_options(spec(tls=True)).split() == ["-insecure", "-http2=false"]   # HTTP/1.1 stays so
    assert "-h2" in TOOLS["hey"].command(spec("h2", tls=True)) and "-h2" not in TOOLS["hey"].command(spec(tls=True))
    assert "--http2" in TOOLS["bombardier"].command(spec("h2", tls=True))
    assert TOOLS["k6"].command(spec("h2", tls=True)) == TOOLS["k6"].command(spec(tls=True))     # ALPN does it
    assert "-Dlth.http2=true" in TOOLS["gatling"].command(spec("h2", tls=True))
    assert "-Dlth.http2=true" not in TOOLS["gatling"].command(spec(tls=True))


def test_the_file_server_speaks_h2_on_443_and_h2c_on_its_own_port(tmp_path):
    certificate = targets.Certificate(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "b.pem")
    h2 = targets.stage(Setup(tls=True, protocol="h2"), tmp_path / "h2", "198.18.0.2", "198.18.0.2", certificate)
    server = (tmp_path / "h2" / "files" / "lth-server.conf").read_text()
    assert "listen 443 ssl http2 backlog=8192;" in server and "access_log protocol.log lth_protocol" in server
    assert h2.target.url == h2.target.check_url == "https://198.18.0.2:443/style.css"
    assert h2.target.protocol_log == tmp_path / "h2" / "files" / "protocol.log"
    h2c = targets.stage(Setup(protocol="h2c"), tmp_path / "h2c", "198.18.0.2", "198.18.0.2", None)
    h2c_server = (tmp_path / "h2c" / "files" / "lth-server.conf").read_text()
    assert "listen 81 http2 backlog=8192;" in h2c_server and "sendfile off;" in h2c_server   # 460 rps with it
    assert h2c.target.url == "http://198.18.0.2:81/style.css"          # the tools
    assert h2c.target.check_url == "http://198.18.0.2:80/style.css"    # the harness: HTTP/1.1 on port 80
    http = (tmp_path / "h2c" / "files" / "lth-http.conf").read_text()
    assert '"~^80 " 0;' in http and '"~ lth-[a-z-]+$" 0;' in http        # stub_status, checks, probes: not logged
    tls = targets.stage(Setup(tls=True), tmp_path / "tls", "198.18.0.2", "198.18.0.2", certificate)
    assert "listen 443 ssl backlog=8192;" in (tmp_path / "tls" / "files" / "lth-server.conf").read_text()
    assert tls.target.protocol_log is None and not (tmp_path / "tls" / "files" / "lth-http.conf").exists()


def test_a_target_that_does_not_declare_http2_is_refused_with_the_way_out(tmp_path, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "target.toml").write_text('description = "d"\nrole = "proxy"\npackages = []\nconfig = "c"\n'
                                       'command = ["p"]\nversion_command = ["p", "-v"]\n')
    monkeypatch.setenv("LTH_EXTRA_TARGETS", str(tmp_path))
    with pytest.raises(ValidationError) as refused:
        scenario(protocol="h2c", target="plain")
    assert ("target plain does not serve protocol h2c (its target.toml protocols: http/1.1): use target: api or "
            "caddy or haproxy or nginx or nginx-proxy") in str(refused.value)
    assert scenario(protocol="h2c", target="haproxy").connections == 20


@pytest.mark.parametrize("proxy, h2, h2c, says", [
    ("haproxy", "alpn h2,http/1.1", "bind :81 proto h2", "set-header X-Lth-Client-Protocol HTTP/%[req.ver]"),
    ("caddy", "tls ", "protocols h1 h2c", "header_up X-Lth-Client-Protocol {http.request.proto}"),
    ("nginx-proxy", "listen 443 ssl http2", "listen 81 http2", "X-Lth-Client-Protocol $server_protocol"),
])
def test_a_proxy_speaks_http2_to_the_tools_and_tells_the_file_server_what_its_client_spoke(tmp_path, proxy, h2, h2c,
                                                                                           says):
    certificate = targets.Certificate(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "b.pem")
    config = targets.get(proxy).config
    over_tls = targets.stage(Setup(proxy, tls=True, protocol="h2"), tmp_path / "h2", "198.18.0.2", "198.18.0.3",
                             certificate)
    staged = (tmp_path / "h2" / "proxy" / config).read_text()
    assert h2 in staged and says in staged
    assert over_tls.target.url == "https://198.18.0.2:443/style.css" and over_tls.target.protocol_log is not None
    cleartext = targets.stage(Setup(proxy, protocol="h2c"), tmp_path / "h2c", "198.18.0.2", "198.18.0.3", None)
    assert h2c in (tmp_path / "h2c" / "proxy" / config).read_text()
    assert cleartext.target.url == "http://198.18.0.2:81/style.css"
    assert "listen 81" not in (tmp_path / "h2c" / "files" / "lth-server.conf").read_text()   # the proxy's port
    assert "$http_x_lth_client_protocol" in (tmp_path / "h2c" / "files" / "lth-http.conf").read_text()
    plain = targets.stage(Setup(proxy, tls=True), tmp_path / "plain", "198.18.0.2", "198.18.0.3", certificate)
    assert "X-Lth-Client-Protocol" not in (tmp_path / "plain" / "proxy" / config).read_text()   # HTTP/1.1: as before
    assert plain.target.protocol_log is None


def test_behind_a_proxy_the_verdict_names_the_proxy_and_skips_the_connections():
    fell_back = row(target="haproxy", server_connections=3)
    row_target.check_protocol(fell_back, {"HTTP/1.1": 1000})
    assert fell_back.status == "failed" and fell_back.error.startswith(
        "protocol h2 was asked, but haproxy was sent (as it told the file server) 1,000 HTTP/1.1 on the tools' port")
    spoke = row(target="haproxy", server_connections=3)      # the proxy's connections to the file server
    row_target.check_protocol(spoke, {})
    assert spoke.status == "ok" and not spoke.notes


def test_the_log_of_other_versions_is_read_from_where_the_run_began(tmp_path):
    log = tmp_path / "protocol.log"
    target = Target("198.18.0.2", 443, tls=True, protocol="h2", protocol_log=log)
    assert target.protocol_log_size() == 0 and target.off_protocol_requests(0) == {}      # not opened yet
    log.write_text("443 HTTP/1.1\n")
    since = target.protocol_log_size()
    with log.open("a") as more:
        more.write("443 HTTP/1.1\n443 HTTP/1.1\n443 HTTP/1.0\n")
    assert target.off_protocol_requests(since) == {"HTTP/1.1": 2, "HTTP/1.0": 1}
    assert Target("198.18.0.2", 80).off_protocol_requests(Target("198.18.0.2", 80).protocol_log_size()) is None


def row(**fields) -> RunRow:
    row = RunRow(tool="vegeta", tool_version="12.13.0", runtime="host", scenario="s", vus=20, rtt_target_ms=0.1,
                 duration_s=5, status="ok", protocol="h2", streams=1, server_requests=1000, server_connections=20)
    for name, value in fields.items():
        setattr(row, name, value)
    return row


def test_a_run_the_server_saw_in_http_1_1_fails_with_the_servers_count():
    fell_back = row()
    row_target.check_protocol(fell_back, {"HTTP/1.1": 1000})
    assert fell_back.status == "failed" and fell_back.server_off_protocol_requests == 1000
    assert fell_back.error == ("protocol h2 was asked, but the file server answered 1,000 HTTP/1.1 on the tools' "
                               "port (of 1,000 requests): the tool did not speak HTTP/2")
    spoke = row()
    row_target.check_protocol(spoke, {})
    assert spoke.status == "ok" and spoke.server_off_protocol_requests == 0 and not spoke.notes
    fewer = row(server_connections=1)
    row_target.check_protocol(fewer, {})
    assert fewer.status == "ok" and fewer.notes == ("HTTP/2: the file server accepted 1 connections for 20 requests "
                                                    "in flight (20 asked: 1 stream(s) each)")
    beside_a_probe = row(server_connections=28)
    row_target.check_protocol(beside_a_probe, {}, probed_under_load=True)     # the probe's own connections
    assert beside_a_probe.status == "ok" and not beside_a_probe.notes
    plain = row(protocol="http/1.1")
    row_target.check_protocol(plain, None)
    assert plain.server_off_protocol_requests is None and plain.status == "ok"


def test_the_record_keeps_the_servers_count_for_rederive(tmp_path):
    record = RunRecord(tool="oha", runtime="host", scenario=scenario(protocol="h2c").model_dump(), repeat=1,
                       started_at="t", run_dir="r", shaper="none", cpus_target="0", cpus_tool="1",
                       split={"available": [0, 1], "target": [0], "tool": [1]}, server_off_protocol={"HTTP/1.1": 3})
    record.save(tmp_path)
    again = RunRecord.load(tmp_path)
    assert again.server_off_protocol == {"HTTP/1.1": 3} and again.scenario["protocol"] == "h2c"


def test_the_wire_keeps_connections_and_handshakes_of_an_http2_run_but_pairs_no_request():
    """The wire's request pairing is HTTP/1.1's (one request, then its response, per connection): over HTTP/2
    its pairs would be frames, not requests."""
    from harness.row import wire
    summary = {"pairs": 5000, "p50_ms": 0.2, "p99_ms": 1.0, "connect_p50_ms": 0.05, "connections": 1}
    h2c = row(protocol="h2c", streams=20, lat_p50_ms=0.3)
    wire.fill(h2c, summary)
    assert (h2c.wire_connections, h2c.wire_connect_ms) == (1, 0.05)
    assert h2c.wire_requests is None and h2c.wire_p50_ms is None and h2c.tool_error_p50_ms is None
    assert "request pairing is HTTP/1.1's" in h2c.notes
    http1 = row(protocol="http/1.1", lat_p50_ms=0.3)
    wire.fill(http1, summary)
    assert http1.wire_requests == 5000 and http1.wire_p50_ms == 0.2


def test_http3_at_an_rtt_is_unsupported_where_toxiproxy_shapes_and_runs_with_netem():
    from harness.network.shaping import ShaperChoice
    from harness.suite.runner import Bench
    h3 = lambda rtt_ms: scenario(protocol="h3", tls=True, target="caddy", rtt_ms=rtt_ms)   # noqa: E731
    bench = Bench(plan=None, runtime=None, folder=None, finished=set(), broken={}, no_tcpdump=False,
                  shaper=ShaperChoice("toxiproxy", "no netem here"))
    assert bench._shaper_reason(h3(50)).startswith("HTTP/3 is QUIC over UDP, and Toxiproxy shapes TCP only")
    assert bench._shaper_reason(h3(0.1)) is None                                        # the native hop: no shaping
    assert bench._shaper_reason(scenario(protocol="h2", tls=True, rtt_ms=50)) is None   # TCP: Toxiproxy shapes it
    netem = Bench(plan=None, runtime=None, folder=None, finished=set(), broken={}, no_tcpdump=False,
                  shaper=ShaperChoice("netem", "available"))
    assert netem._shaper_reason(h3(50)) is None
