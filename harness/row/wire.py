"""A run's wire_* and tool_error_* columns from its capture's summary (harness/network/capture.py records
it in the run's record: the pcap itself is deleted once parsed unless --keep-pcap), and a rate run's
schedule fidelity columns from the same summary (harness/network/fidelity.py)."""
from __future__ import annotations

from harness.scenarios import HTTP2_PROTOCOLS
from harness.store.results import RunRow


def fill(row: RunRow, capture: dict, probe_gets: int = 0, stops_timing_before_closing: bool = False) -> None:
    """``capture``: the capture's summary, ``{"skipped": why}`` or ``{"error": ...}`` (see Capture.summary);
    ``probe_gets``: requests on the captured path that were the harness's RTT probe, not the tool's;
    ``stops_timing_before_closing``: the adapter's flag (the wire's p50/p99 then end at the tool's stop)."""
    if "skipped" in capture:
        _note(row, f"no wire capture: {capture['skipped']}")
        return
    if "error" in capture:
        _note(row, f"wire capture unreadable: {capture['error']}")
        return
    row.wire_connect_ms = capture.get("connect_p50_ms")      # summaries stored before it lack the key
    row.wire_connections = capture.get("connections")
    if row.protocol in HTTP2_PROTOCOLS:
        # Streams interleave on a connection and frames (SETTINGS, WINDOW_UPDATE, PING) travel between them:
        # the request/response runs the wire pairs are HTTP/1.1's, so only connections and handshakes hold.
        _note(row, "wire: connections, handshakes and how each connection opened; its request pairing is "
                   "HTTP/1.1's and reads no HTTP/2 request")
        fill_openers(row, capture.get("openers"))
        return
    row.wire_requests = capture["pairs"] - probe_gets
    row.wire_p50_ms, row.wire_p99_ms = capture["p50_ms"], capture["p99_ms"]
    if capture.get("after_close"):
        _note(row, f"wire p50/p99 leave out {capture['after_close']:,} responses that ended after the tool closed "
                   "their connection (in flight when it stopped; counted in wire_requests)")
    if stops_timing_before_closing and capture.get("answered_after_stop"):
        row.wire_p50_ms, row.wire_p99_ms = capture["p50_until_stop_ms"], capture["p99_until_stop_ms"]
        _note(row, f"wire p50/p99 leave out {capture['answered_after_stop']:,} responses that ended after the "
                   f"tool's last request: {row.tool} does not time the requests in flight when it stops")
    if row.wire_connections and row.wire_requests is not None:
        row.wire_requests_per_connection = row.wire_requests / row.wire_connections
    if row.lat_p50_ms is not None and row.wire_p50_ms is not None:
        row.tool_error_p50_ms = row.lat_p50_ms - row.wire_p50_ms
    if row.lat_p99_ms is not None and row.wire_p99_ms is not None:
        row.tool_error_p99_ms = row.lat_p99_ms - row.wire_p99_ms
    row.lat_added_ms = added_latency(row)
    _flag(row, capture)
    fill_fidelity(row, capture.get("fidelity"))


def fill_openers(row: RunRow, openers: dict | None) -> None:
    """An HTTP/2 run's wire_h2_connections from how its connections opened (harness/network/openers.py), and a
    note where the wire saw something else: connections that did not open in HTTP/2, HTTP/1.x requests, what ALPN
    offered. The server's count decides the run (harness/row/target.py); the wire is the second witness."""
    if openers is None:
        return
    if "error" in openers:
        _note(row, f"wire: how the connections opened is not known: {openers['error']}")
        return
    row.wire_h2_connections = openers["http2"]
    offers = ", ".join(f"{offer} on {n:,}" for offer, n in sorted(openers["alpn_offers"].items()))
    said = [f"ALPN offered {offers}" if offers else "",
            f"{openers['http1_requests']:,} HTTP/1.x requests" if openers["http1_requests"] else "",
            f"{openers['unreadable']:,} ClientHellos unreadable" if openers["unreadable"] else ""]
    opened = row.wire_connections
    if opened and openers["http2"] < opened or any(said[1:]):
        _note(row, f"wire: {openers['http2']:,} of {opened or 0:,} connections opened in HTTP/2"
                   f" ({'; '.join(filter(None, said))})")


def fill_fidelity(row: RunRow, fidelity: dict | None) -> None:
    """``fidelity``: Fidelity.describe() of a rate run's sends, ``{"error": ...}``, or None (not a rate
    run, or a summary stored before fidelity was computed): the columns stay empty."""
    if fidelity is None:
        return
    if "error" in fidelity:
        _note(row, f"schedule fidelity not computed: {fidelity['error']}")
        return
    row.wire_rate_rps, row.wire_rate_cv = fidelity["wire_rate_rps"], fidelity["wire_rate_cv"]
    row.wire_rate_min_window_rps, row.wire_gap_cv = fidelity["wire_rate_min_window_rps"], fidelity["wire_gap_cv"]
    row.wire_schedule = fidelity["verdict"]


def added_latency(row: RunRow) -> float | None:
    """The tool's own share of its p50 (tool minus wire). Empty, with a note, when the difference is
    within the tool's clock step: a whole-ms tool's 11 ms for a wire 11.16 ms is its rounding, not a finding."""
    error, resolution = row.tool_error_p50_ms, row.timing_resolution_ms or 0.0
    if error is not None and abs(error) < resolution:
        _note(row, f"lat_added_ms empty: p50 within the tool's {resolution:g} ms timing resolution of the wire's "
                   f"({error:+.3f} ms)")
        return None
    return error


def _flag(row: RunRow, capture: dict) -> None:
    cap = capture.get("max_packets")
    if cap and capture.get("captured", 0) >= cap:
        _note(row, f"wire capture hit its cap of {cap:,} packets: wire figures cover the first "
                   f"{capture['span_s'] or 0:.1f} s of the load only")
    if row.shaper == "netem" and capture.get("after_netem"):
        # tcpdump sees egress packets after the qdisc: requests are stamped once netem has delayed them.
        _note(row, "wire latency and handshake exclude the netem delay (added on the captured interface's egress)")
    if capture.get("dropped_by_kernel"):
        _note(row, f"wire capture: the kernel dropped {capture['dropped_by_kernel']:,} packets: "
                   "wire figures may miss requests")


def _note(row: RunRow, text: str) -> None:
    row.notes = "; ".join(filter(None, [row.notes, text]))
