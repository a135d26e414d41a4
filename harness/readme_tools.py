"""The README's tool table, generated from the manifests (tools/<id>/tool.toml) so that a version
lives in one place: ``python -m harness.readme_tools`` (``make readme-tools``) rewrites the table in
README.md; tests/tools/test_manifests.py fails when README and manifests disagree."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from harness import REPO_ROOT
from harness.adapter import read_manifest
from harness.registry import discover

README = REPO_ROOT / "README.md"
HEADER = "| id | version | concurrency model | figures from |\n|---|---|---|---|\n"
TABLE = re.compile(re.escape(HEADER) + r"(?:\|.*\n)*")


def tool_table() -> str:
    """One row per tool folder with a manifest, naming every tool id (variants) it provides."""
    ids: dict[Path, list[str]] = {}
    for adapter in discover().values():
        if adapter.manifest:
            ids.setdefault(adapter.folder, []).append(f"`{adapter.name}`")
    rows = []
    for folder, names in sorted(ids.items()):
        manifest = read_manifest(folder)
        rows.append(f"| {', '.join(names)} | {manifest['version']} ({manifest['origin']}) "
                    f"| {manifest['concurrency']} | {manifest['figures']} |\n")
    return HEADER + "".join(rows)


def with_tool_table(readme: str) -> str:
    if TABLE.search(readme) is None:
        raise SystemExit(f"{README}: no tool table (a line {HEADER.splitlines()[0]!r}) to replace")
    return TABLE.sub(lambda _: tool_table(), readme, count=1)


def main() -> int:
    text = README.read_text()
    updated = with_tool_table(text)
    if updated != text:
        README.write_text(updated)
    print(f"{README.name}: tool table {'rewritten' if updated != text else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
