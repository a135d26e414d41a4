"""What each tool's adapter declared, as a results folder recorded it (issue 50.2): the scorecard's capability
columns (open model, keep-alive off, TLS, HTTP/2, HTTP/3, the login flow) read the folder's own declarations, so an
old folder's report shows the capabilities its runs had, not today's adapters'.

declarations.json beside runs.csv: {tool: {declaration: value}}, a value True or the reason it is not (rate_model:
how the tool paces a rate). The suite writes it when it opens the folder (harness/suite/runner.py; a resumed one
adds the tools it runs); a folder written before it reads today's adapters', through harness/store/upgrade.py
folder_declarations, the one fallback.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from harness.store.safe import write_text_inside

DECLARATIONS_JSON = "declarations.json"
DECLARED = ("open_model", "rate_model", "keepalive_off", "tls", "h2", "h2c", "h3", "login_flow")
Declaration = bool | str
Declarations = dict[str, dict[str, Declaration]]     # tool -> declaration -> value


def declared_by(adapter: object) -> dict[str, Declaration]:
    """An adapter's (or any object's) DECLARED attributes."""
    return {name: getattr(adapter, name) for name in DECLARED}


def write_declarations(folder: Path, adapters: Mapping[str, object]) -> None:
    """Record the adapters' declarations in ``folder`` (a resumed folder keeps the tools it had recorded)."""
    recorded = read_declarations(folder) or {}
    merged = {**recorded, **{tool: declared_by(adapter) for tool, adapter in adapters.items()}}
    write_text_inside(folder, DECLARATIONS_JSON, json.dumps(merged, indent=2, sort_keys=True) + "\n")


def read_declarations(folder: Path) -> Declarations | None:
    """The declarations ``folder`` recorded (None: it holds no readable declarations.json, as a folder written
    before it); a tool's entry that is not a mapping of DECLARED values is left out (no adapter of that name)."""
    path = folder / DECLARATIONS_JSON
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict):
        return None
    return {tool: {name: values[name] for name in DECLARED} for tool, values in stored.items()
            if isinstance(values, dict) and all(isinstance(values.get(name), (bool, str)) for name in DECLARED)}
