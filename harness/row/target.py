"""A row's target columns (issue 23): the scenario's setup, the stack that served it, whether keep-alive off
really opened a connection per request (the wire's count, else the file server's), and whether an HTTP/2 run
was HTTP/2 at the file server (issue 38)."""
from __future__ import annotations

from harness.scenarios import Scenario
from harness.targets import SERVED_AS
from harness.store.results import RunRow

# Keep-alive off, judged: more requests per connection than this means connections were reused.
REUSE_TOLERANCE = 1.05


def setup_columns(scenario: Scenario, target_facts: dict | None) -> dict:
    """The setup columns: the scenario's, and the running stack's facts (RunRecord.target)."""
    facts = target_facts or {}
    return {"target": scenario.target, "keepalive": scenario.keepalive, "tls": scenario.tls,
            "backend_delay_ms": scenario.backend_delay_ms, "protocol": scenario.protocol, "streams": scenario.streams,
            "flow": scenario.flow, "relogin_every": scenario.relogin_every,
            "target_stack": facts.get("target_stack"), "target_version": facts.get("target_version")}


def check_keepalive(row: RunRow) -> None:
    """Keep-alive off, checked against what was counted rather than the tool's word: the wire's
    connections (with a capture), else those the file server accepted when the tool talks to it directly."""
    if row.keepalive or row.status != "ok":
        return
    if row.wire_connections and row.wire_requests is not None:
        counted, where = row.wire_connections, "on the wire"
        requests = row.wire_requests
    elif row.server_connections and row.server_requests is not None and row.target == "nginx":
        counted, where, requests = row.server_connections, "at the file server", row.server_requests
    else:
        return
    per_connection = requests / counted
    if per_connection > REUSE_TOLERANCE:
        _note(row, f"keep-alive off was asked, but {where} {requests:,} requests used {counted:,} connections "
                   f"({per_connection:.2f} per connection): the tool reused connections")


def _note(row: RunRow, text: str) -> None:
    row.notes = f"{row.notes}; {text}" if row.notes else text


def check_protocol(row: RunRow, off_protocol: dict | None, probed_under_load: bool = False) -> None:
    """An HTTP/2 run, judged at the file server rather than on the tool's word: a request it answered in another
    HTTP version (a tool that fell back to HTTP/1.1 over ALPN; behind a proxy, the version the proxy's client spoke,
    which the proxy forwards in a header) fails the run; the connections it accepted
    against those asked for (vus / streams) are noted when they differ, unless the RTT probe ran beside the
    load (Toxiproxy's loaded probe opens connections of its own, which the file server counts too)."""
    if row.protocol not in SERVED_AS or off_protocol is None:
        return
    row.server_off_protocol_requests = sum(off_protocol.values())
    if row.status != "ok":
        return
    if row.server_off_protocol_requests:
        seen = ", ".join(f"{count:,} {version}" for version, count in sorted(off_protocol.items()))
        row.status = "failed"
        where = ("the file server answered" if row.target == "nginx"
                 else f"{row.target} was sent (as it told the file server)")
        spoken = SERVED_AS[row.protocol][:-2]   # HTTP/2, HTTP/3
        row.error = (f"protocol {row.protocol} was asked, but {where} {seen} on the tools' port "
                     f"(of {row.server_requests or 0:,} requests): the tool did not speak {spoken}")
        return
    asked = max(1, row.vus // row.streams)
    if row.target != "nginx" or row.protocol == "h3":   # behind a proxy: the proxy's connections to the file server
        return
    if not probed_under_load and row.server_connections is not None and row.server_connections != asked:
        _note(row, f"HTTP/2: the file server accepted {row.server_connections:,} connections for {row.vus} requests "
                   f"in flight ({asked:,} asked: {row.streams} stream(s) each)")


# A VU's login and its last GETs may be cut by the run's end: the logins may exceed the VUs by this share.
EXTRA_LOGINS = 0.1


def check_flow(row: RunRow, api: dict | None) -> None:
    """A flow run, judged by the API's answers rather than the tool's word: a refused GET or login (a token not
    carried, or not one the target issued) fails the run, and so do logins that do not match the script (more
    than one per VU without relogin_every; more GETs per login than relogin_every), naming what was counted."""
    if row.flow is None or api is None:
        return
    row.server_logins, row.server_logins_refused = api["logins_ok"], api["logins_refused"]
    row.server_api_gets, row.server_api_gets_refused = api["gets_ok"], api["gets_refused"]
    if row.status != "ok":
        return
    counted = (f"the API answered {api['logins_ok']:,} logins and {api['gets_ok']:,} GETs, refused "
               f"{api['logins_refused']:,} logins and {api['gets_refused']:,} GETs (401)")
    if api["gets_refused"] or api["logins_refused"] or not api["logins_ok"] or not api["gets_ok"]:
        _fail(row, f"flow {row.flow}: {counted}: the tool did not log in and carry the token as scripted")
    elif row.relogin_every is None and api["logins_ok"] > row.vus * (1 + EXTRA_LOGINS) + 1:
        _fail(row, f"flow {row.flow}: {counted}: {api['logins_ok']:,} logins for {row.vus} VUs, where each VU logs "
                   "in once")
    elif row.relogin_every is not None and api["gets_ok"] > api["logins_ok"] * row.relogin_every:
        _fail(row, f"flow {row.flow}: {counted}: more GETs per login than relogin_every {row.relogin_every}")
    elif row.relogin_every is not None and api["gets_ok"] < 0.5 * api["logins_ok"] * row.relogin_every - row.vus:
        _fail(row, f"flow {row.flow}: {counted}: {api['gets_ok'] / api['logins_ok']:.1f} GETs per login, where "
                   f"relogin_every is {row.relogin_every}")


def _fail(row: RunRow, error: str) -> None:
    row.status, row.error = "failed", error
