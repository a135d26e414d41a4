"""How HTTP/2 connections opened on the wire (issue 38): harness/network/openers.py on captures of real runs
(tests/fixtures/openers/README.md), and the row's wire_h2_connections and notes from it."""
from pathlib import Path

from harness.network import openers
from harness.network.wire import client_payloads
from harness.row import wire
from harness.store.results import RunRow

FIXTURES = Path(__file__).parent / "fixtures" / "openers"


def test_every_connection_of_a_real_h2_run_offered_h2_by_alpn():
    h2load = openers.read(FIXTURES / "h2load-h2.pcap", 443)
    assert h2load.client_hellos == 20 and h2load.http2 == 20 and h2load.unreadable == 0
    assert dict(h2load.alpn_offers) == {"h2,h2-16,h2-14,http/1.1": 20}
    assert dict(openers.read(FIXTURES / "oha-h2.pcap", 443).alpn_offers) == {"h2": 20}   # oha offers h2 alone


def test_a_tool_told_http_1_1_offers_no_h2():
    fell_back = openers.read(FIXTURES / "h2load-h1-asked-h2.pcap", 443)
    assert fell_back.client_hellos == 20 and dict(fell_back.alpn_offers) == {"http/1.1": 20} and fell_back.http2 == 0


def test_h2c_opens_with_the_preface_and_http_1_1_on_its_port_is_seen():
    assert openers.read(FIXTURES / "vegeta-h2c.pcap", 81).describe() == {
        "h2c_prefaces": 1, "client_hellos": 0, "alpn_offers": {}, "http1_requests": 0, "unreadable": 0, "http2": 1}
    mixed = openers.read(FIXTURES / "h2load-h1-and-h2c-on-h2c-port.pcap", 81)
    assert (mixed.h2c_prefaces, mixed.http1_requests) == (1, 2)
    assert openers.read(FIXTURES / "vegeta-h2c.pcap", 80).describe()["http2"] == 0    # another port: nothing


def test_a_client_hello_cut_short_is_unreadable_not_a_guess():
    record = (FIXTURES / "h2load-h2.pcap").read_bytes()
    hello = next(client_payloads(record, 443))
    assert openers.alpn_offer(hello) == ["h2", "h2-16", "h2-14", "http/1.1"]
    assert openers.alpn_offer(hello[:60]) is None and openers.alpn_offer(b"GET / HTTP/1.1\r\n") is None


def test_the_filter_asks_for_the_opening_packets_only():
    expression = openers.bpf_filter("198.18.0.2", 81)
    assert expression.startswith("tcp and dst host 198.18.0.2 and dst port 81 and (")
    assert "0x50524920" in expression and "0x47455420" in expression and "= 0x16" in expression


def row(**fields) -> RunRow:
    return RunRow(tool="h2load", tool_version="1.52.0", runtime="host", scenario="s", vus=20, rtt_target_ms=0.1,
                  duration_s=5, status="ok", protocol="h2", streams=1, **fields)


def test_the_row_counts_the_connections_that_opened_in_http2_and_says_what_the_others_did():
    summary = {"connections": 20, "connect_p50_ms": 0.1, "openers": {"h2c_prefaces": 0, "client_hellos": 20,
               "alpn_offers": {"h2,http/1.1": 20}, "http1_requests": 0, "unreadable": 0, "http2": 20}}
    spoke = row()
    wire.fill(spoke, summary)
    assert spoke.wire_h2_connections == 20 and spoke.wire_connections == 20 and "opened in HTTP/2" not in spoke.notes
    offered = {**summary["openers"], "alpn_offers": {"http/1.1": 20}, "http2": 0}
    fell_back = row()
    wire.fill(fell_back, {**summary, "openers": offered})
    assert fell_back.wire_h2_connections == 0
    assert "wire: 0 of 20 connections opened in HTTP/2 (ALPN offered http/1.1 on 20)" in fell_back.notes
    unknown = row()
    wire.fill(unknown, {**summary, "openers": {"error": "the openers' tcpdump did not start: no such device"}})
    assert unknown.wire_h2_connections is None and "how the connections opened is not known" in unknown.notes
