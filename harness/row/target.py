"""A row's target columns (issue 23): the scenario's setup, the stack that served it, and whether
keep-alive off really opened a connection per request (the wire's count, else the file server's)."""
from __future__ import annotations

from harness.store.record import RunRecord
from harness.store.results import RunRow

# Keep-alive off, judged: more requests per connection than this means connections were reused.
REUSE_TOLERANCE = 1.05


def setup_columns(record: RunRecord) -> dict:
    scenario, facts = record.scenario, record.target or {}
    return {"target": scenario.get("target", "nginx"), "keepalive": scenario.get("keepalive", True),
            "tls": scenario.get("tls", False), "backend_delay_ms": scenario.get("backend_delay_ms"),
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
