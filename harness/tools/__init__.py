"""What a load tool is to the harness: the adapter base class and what it receives and returns (an adapter in
tools/<id>/adapter.py imports them from here), the registry that finds the adapters, what each can do
(capabilities, the open model) and the README's generated tool table.

Imports the stored run's figures and the shared modules (scenarios, targets, errors); nothing that runs.
"""
from harness.store.figures import Metrics
from harness.tools.adapter import ToolAdapter
from harness.tools.output import LatencyHistogram, ParseError, RunSpec, ToolOutput

__all__ = ["LatencyHistogram", "Metrics", "ParseError", "RunSpec", "ToolAdapter", "ToolOutput"]
