"""Rate scenarios (issue 13): which tools run them.

A scenario with ``rate_rps`` runs every tool whose adapter declares ``open_model = True`` at that
arrival rate, ``vus`` capping its connections/users. A tool without an open model gets a row with
status ``unsupported`` and its adapter's one-line reason, unless the scenario says
``closed_model_tools: run``: then it runs closed-loop with ``vus`` users (the stall table shows
every tool) and its row says so. The row's rate and stall columns: harness/row/rate.py.
"""
from __future__ import annotations

from harness.scenarios import Scenario
from harness.tools.adapter import ToolAdapter


def rate_for(scenario: Scenario, adapter: ToolAdapter) -> int | None:
    """The arrival rate the tool is asked for (None: closed model)."""
    return scenario.rate_rps if adapter.open_model else None


def unsupported_reason(scenario: Scenario, adapter: ToolAdapter) -> str | None:
    if scenario.rate_rps is None or adapter.open_model or scenario.closed_model_tools == "run":
        return None
    return f"open model not supported: {adapter.rate_model}"
