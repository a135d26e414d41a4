"""What each tool can do beyond closed-loop keep-alive HTTP, and which runs it therefore cannot make.

A tool declares it in its adapter (harness/tools/adapter.py: open_model, keepalive_off, tls); a scenario that
needs what the tool lacks gets a row with status ``unsupported`` and the tool's reason, never a silently
different test. ``matrix`` is what ``list-tools`` and the README's tool table print.
"""
from __future__ import annotations

from harness.scenarios import Scenario
from harness.tools import openmodel
from harness.tools.adapter import ToolAdapter

FEATURES = {"open_model": "open model", "keepalive_off": "keep-alive off", "tls": "TLS"}


def supports(adapter: ToolAdapter, feature: str) -> bool:
    return getattr(adapter, feature) is True


def why_not(adapter: ToolAdapter, feature: str) -> str:
    """The adapter's one-line reason it cannot (open model: its rate_model)."""
    return adapter.rate_model if feature == "open_model" else str(getattr(adapter, feature))


def unsupported_reason(scenario: Scenario, adapter: ToolAdapter) -> str | None:
    if reason := openmodel.unsupported_reason(scenario, adapter):
        return reason
    needed = [f for f, wanted in (("keepalive_off", not scenario.keepalive), ("tls", scenario.tls)) if wanted]
    missing = [f for f in needed if not supports(adapter, f)]
    return "; ".join(f"{FEATURES[f]} not supported: {why_not(adapter, f)}" for f in missing) or None


def matrix(adapter: ToolAdapter) -> dict[str, str]:
    """{feature label: "yes" or "no: <reason>"} for one tool."""
    return {label: "yes" if supports(adapter, f) else f"no: {why_not(adapter, f)}" for f, label in FEATURES.items()}
