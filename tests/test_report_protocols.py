"""The report's HTTP/2 table (analysis/protocols.py) on rows as runs.csv holds them: each HTTP/2 setting beside
HTTP/1.1 at the same target, VUs and RTT over the same transport; a proxy's lines apart, without the file server's
connections (the proxy's own); an unsupported run says why."""
import pandas as pd

from analysis import protocols


def run(tool: str, scenario: str, protocol: str = "http/1.1", tls: bool = False, target: str = "nginx",
        rps: float = 1000.0, streams: int = 1, status: str = "ok", error: str = "") -> dict:
    return {"runtime": "host", "tool": tool, "target": target, "vus": 20, "rtt_target_ms": 0.1, "scenario": scenario,
            "protocol": protocol, "streams": streams, "tls": str(tls), "keepalive": "True", "backend_delay_ms": None,
            "status": status, "error": error, "rps": rps if status == "ok" else None, "lat_p50_ms": 0.5,
            "lat_p99_ms": 2.0, "cpu_avg_pct": 50.0, "target_cpu_pct": 100.0, "server_connections": 20}


def test_http2_lines_are_compared_with_http_1_1_at_the_same_target_and_transport():
    df = pd.DataFrame([run("oha", "h1tls", tls=True, rps=1000), run("oha", "h2", "h2", tls=True, rps=1500),
                       run("oha", "h1", rps=2000), run("oha", "h2c", "h2c", rps=1000, streams=20),
                       run("oha", "h1tls-haproxy", tls=True, target="haproxy", rps=500),
                       run("oha", "h2-haproxy", "h2", tls=True, target="haproxy", rps=750),
                       run("wrk", "h2", "h2", tls=True, status="unsupported", error="wrk speaks HTTP/1.1 only")])
    lines = {(line["tool"], line["target"], line["scenario"]): line for line in protocols.table(df)}
    assert lines[("oha", "nginx", "h2")]["vs HTTP/1.1"] == "+50%"             # against HTTP/1.1 over TLS
    assert lines[("oha", "nginx", "h2c")]["vs HTTP/1.1"] == "-50%"            # against plain HTTP/1.1
    assert lines[("oha", "haproxy", "h2-haproxy")]["vs HTTP/1.1"] == "+50%"   # the proxy's own HTTP/1.1
    assert lines[("oha", "nginx", "h2")]["connections"] and not lines[("oha", "haproxy", "h2-haproxy")]["connections"]
    assert lines[("wrk", "nginx", "h2")]["result"] == "unsupported: wrk speaks HTTP/1.1 only"
    order = [(line["target"], line["scenario"]) for line in protocols.table(df) if line["tool"] == "oha"]
    assert order.index(("nginx", "h2c")) < order.index(("haproxy", "h1tls-haproxy"))   # Nginx first, then proxies


def test_no_http2_scenario_no_section():
    assert protocols.table(pd.DataFrame([run("oha", "h1")])) == []


def test_the_section_lists_who_cannot_once_per_reason_and_keeps_baselines_where_http2_ran():
    df = pd.DataFrame([run("oha", "h1tls", tls=True), run("oha", "h2", "h2", tls=True, rps=1500),
                       run("wrk", "h1tls", tls=True), run("wrk", "h2", "h2", tls=True, status="unsupported",
                                                          error="wrk speaks HTTP/1.1 only"),
                       run("wrk", "h2c", "h2c", streams=20, status="unsupported",
                           error="h2c not supported: wrk speaks HTTP/1.1 only")])
    section = protocols.section(df)
    assert [(line["tool"], line["scenario"]) for line in section["lines"]] == [("oha", "h1tls"), ("oha", "h2")]
    assert section["cannot"] == [{"tool": "wrk", "runtime": "host", "protocols": "h2, h2c",
                                  "why": "wrk speaks HTTP/1.1 only"}]
    assert protocols.section(pd.DataFrame([run("oha", "h1")])) == {}
