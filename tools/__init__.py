"""One package per load tool: tools/<id>/adapter.py, discovered by harness.tools.registry."""
