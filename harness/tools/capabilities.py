"""What each tool can do beyond closed-loop keep-alive HTTP, and which runs it therefore cannot make.

A tool declares it in its adapter (harness/tools/adapter.py: open_model, keepalive_off, tls, h2, h2c); a scenario that
needs what the tool lacks gets a row with status ``unsupported`` and the tool's reason, never a silently
different test. ``matrix`` is what ``list-tools`` and the README's tool table print.
"""
from __future__ import annotations

from harness.scenarios import HTTP2_PROTOCOLS, Scenario
from harness.tools import openmodel
from harness.tools.adapter import ToolAdapter

FEATURES = {"open_model": "open model", "keepalive_off": "keep-alive off", "tls": "TLS", "h2": "h2", "h2c": "h2c",
            "h3": "h3", "login_flow": "login flow"}
# How an HTTP/2 tool spreads the VUs' requests over connections (ToolAdapter.h2_connections), and the
# scenarios' streams it can therefore run: streams = requests in flight per connection.
H2_CONNECTIONS = {"any": "connections x streams as asked",
                  "per_vu": "a connection per VU, one request in flight each (streams 1)",
                  "one": "one shared connection, every VU a stream on it (streams = vus)"}


def supports(adapter: ToolAdapter, feature: str) -> bool:
    return getattr(adapter, feature) is True


def why_not(adapter: ToolAdapter, feature: str) -> str:
    """The adapter's one-line reason it cannot (open model: its rate_model)."""
    return adapter.rate_model if feature == "open_model" else str(getattr(adapter, feature))


def unsupported_reason(scenario: Scenario, adapter: ToolAdapter) -> str | None:
    if reason := openmodel.unsupported_reason(scenario, adapter):
        return reason
    needed = [f for f, wanted in (("keepalive_off", not scenario.keepalive), ("tls", scenario.tls),
                                  ("h2", scenario.protocol == "h2"), ("h2c", scenario.protocol == "h2c"),
                                  ("h3", scenario.protocol == "h3"),
                                  ("login_flow", scenario.flow is not None)) if wanted]
    missing = [f for f in needed if not supports(adapter, f)]
    if missing:
        return "; ".join(f"{FEATURES[f]} not supported: {why_not(adapter, f)}" for f in missing)
    return streams_reason(scenario, adapter)


def streams_reason(scenario: Scenario, adapter: ToolAdapter) -> str | None:
    """Why the tool cannot hold the scenario's streams per connection (None: it can, or HTTP/1.1)."""
    if scenario.protocol not in HTTP2_PROTOCOLS:
        return None
    model = h2_connections(adapter, scenario.protocol)
    fits = {"any": True, "per_vu": scenario.streams == 1, "one": scenario.streams == scenario.vus}
    if fits[model]:
        return None
    return (f"streams {scenario.streams} at {scenario.vus} VUs not supported: the tool's {scenario.protocol} holds "
            f"{H2_CONNECTIONS[model]}")


def h2_connections(adapter: ToolAdapter, protocol: str) -> str:
    """The tool's way of spreading the VUs over HTTP/2 connections for ``protocol`` (a key of H2_CONNECTIONS)."""
    model = adapter.h2_connections
    return model[protocol] if isinstance(model, dict) else model


def matrix(adapter: ToolAdapter) -> dict[str, str]:
    """{feature label: "yes" or "no: <reason>"} for one tool."""
    return {label: "yes" if supports(adapter, f) else f"no: {why_not(adapter, f)}" for f, label in FEATURES.items()}
