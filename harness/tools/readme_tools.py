"""The README's tool table, generated from the manifests (tools/<id>/tool.toml: version, origin, figures)
and the adapters (their concurrency_model and capabilities), so that what a tool declares lives in one place:
``python -m harness.tools.readme_tools`` (``make readme-tools``) rewrites the table in
README.md; tests/tools/test_manifests.py fails when README and the declarations disagree."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from harness import REPO_ROOT
from harness.tools import capabilities
from harness.tools.manifest import read_manifest
from harness.tools.registry import discover

README = REPO_ROOT / "README.md"
COLUMNS = ["id", "version", "concurrency model", "figures from", *capabilities.FEATURES.values()]
HEADER = f"| {' | '.join(COLUMNS)} |\n" + "|---" * len(COLUMNS) + "|\n"
# The table as any earlier version wrote it: its header's first four columns, then rows.
TABLE = re.compile(re.escape("| id | version | concurrency model | figures from |") + r".*\n(?:\|.*\n)*")


def tool_table() -> str:
    """One row per tool folder with a manifest, naming every tool id (variants) it provides."""
    adapters: dict[Path, list] = {}
    for adapter in discover().values():
        if adapter.manifest:
            adapters.setdefault(adapter.folder, []).append(adapter)
    rows = []
    for folder, variants in sorted(adapters.items()):
        manifest = read_manifest(folder)
        names = ", ".join(f"`{a.name}`" for a in variants)
        features = " | ".join(_capability(variants, feature) for feature in capabilities.FEATURES)
        rows.append(f"| {names} | {manifest['version']} ({manifest['origin']}) "
                    f"| {_concurrency(variants)} | {manifest['figures']} | {features} |\n")
    return HEADER + "".join(rows)


def _concurrency(variants: list) -> str:
    """The adapters' concurrency_model (the one meta.json keeps), per variant where they differ."""
    models = {a.name: a.concurrency_model for a in variants}
    if len(set(models.values())) == 1:
        return next(iter(models.values()))
    return "; ".join(f"`{name}`: {model}" for name, model in models.items())


def _capability(variants: list, feature: str) -> str:
    """yes/no for the folder's tools (per variant where they differ); `make list-tools` says why not."""
    answers = {a.name: "yes" if capabilities.supports(a, feature) else "no" for a in variants}
    if len(set(answers.values())) == 1:
        return next(iter(answers.values()))
    return ", ".join(f"{name}: {answer}" for name, answer in answers.items())


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
