"""The docs' reference tables, generated from the code: ``.venv/bin/python scripts/gen_docs.py`` rewrites
every generated block in README.md and docs/*.md; ``--check`` rewrites nothing and exits 1 naming each
block that differs (tests/test_docs.py runs it). A block is

    <!-- generated: NAME -->
    ...
    <!-- end -->

and NAME is one of GENERATORS below: nothing between the two lines is kept by hand."""
from __future__ import annotations

import re
import sys
from dataclasses import fields
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end -->)", re.S)
TEMPLATE = REPO / "analysis" / "templates" / "report.html.j2"
H2 = re.compile(r'<h2 id="([^"]+)"[^>]*>(.*?)</h2>', re.S)


def runs_columns() -> str:
    """runs.csv's columns in order, each with its declared meaning (harness/store/results.py RunRow)."""
    from harness.store.results import RunRow
    rows = [f"| `{f.name}` | {f.metadata['doc']} |" for f in fields(RunRow)]
    return "\n".join(["| column | meaning |", "|---|---|", *rows]) + "\n"


def scorecard_columns() -> str:
    """The scorecard's columns in analysis/scorecard.py's order: header, CSV column, what it holds."""
    from analysis import scorecard
    rows = [f"| {scorecard.HEADERS.get(key, key)} | `{key}` | {doc} |" for key, doc in scorecard.COLUMNS.items()]
    return "\n".join(["| column | in scorecard.csv | what it holds |", "|---|---|---|", *rows]) + "\n"


def report_sections() -> str:
    """The report's sections in the order its template writes them (the <h2 id="..."> of report.html.j2)."""
    rows = []
    for number, (anchor, title) in enumerate(H2.findall(TEMPLATE.read_text()), 1):
        if "{{" in anchor:
            anchor, title = anchor.split("{{")[0] + "<folder>", "one section per results folder: its machine"
        title = " ".join(re.sub(r"<[^>]+>|\{\{.*?\}\}|\{%.*?%\}", "", title).split())
        rows.append(f"| {number} | {title} | `#{anchor}` |")
    return "\n".join(["| # | section | anchor |", "|---|---|---|", *rows]) + "\n"


def tools() -> str:
    """The tool matrix, from the manifests and adapters (harness/tools/readme_tools.py)."""
    from harness.tools.readme_tools import tool_table
    return tool_table()


def _in_repo(default: object) -> object:
    """A default path inside the clone, as a path relative to it: the docs must not depend on where it was cloned."""
    if isinstance(default, (str, Path)) and Path(default).is_absolute() and Path(default).is_relative_to(REPO):
        return Path(default).relative_to(REPO)
    return default


def cli_options() -> str:
    """Every subcommand's flags as the parser declares them (harness/cli.py build_parser)."""
    import argparse
    from harness.cli import DELEGATED, build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    shown = {c.dest: c.help for c in sub._choices_actions}       # the hidden internal ones have no help line
    delegated = {name for name, _, _ in DELEGATED}
    rows = []
    for name, command in sub.choices.items():
        if name not in shown:
            continue
        if name in delegated:
            rows.append(f"| `lth {name}` | | {shown[name]}: its options are `lth {name} --help`'s |")
            continue
        for action in command._actions:
            if not action.option_strings or action.dest == "help":
                continue
            default = "" if action.default in (None, False, argparse.SUPPRESS) else f"`{_in_repo(action.default)}`"
            text = " ".join(str(action.help or "").replace("|", "\\|").split())
            rows.append(f"| `lth {name}` | `{', '.join(action.option_strings)}` {default} | {text} |")
    return "\n".join(["| command | flag (default) | what it does |", "|---|---|---|", *rows]) + "\n"


def make_variables() -> str:
    """The Makefile's variables with a default (`NAME ?= value`), in its order."""
    found = re.findall(r"^([A-Z][A-Z0-9_]*)\s*\?=[ \t]*(.*)$", (REPO / "Makefile").read_text(), re.M)
    rows = [f"| `{name}` | {'`' + value.strip() + '`' if value.strip() else '(empty)'} |" for name, value in found]
    return "\n".join(["| variable | default |", "|---|---|", *rows]) + "\n"


GENERATORS = {"runs-columns": runs_columns, "scorecard-columns": scorecard_columns,
              "report-sections": report_sections, "tools": tools, "cli-options": cli_options,
              "make-variables": make_variables}


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def regenerate(text: str, where: str = "") -> str:
    """``text`` with every generated block rewritten; an unknown block name is an error."""
    def block(match: re.Match) -> str:
        name = match.group(2)
        if name not in GENERATORS:
            raise SystemExit(f"{where}: unknown generated block {name!r} (known: {', '.join(GENERATORS)})")
        return match.group(1) + GENERATORS[name]() + match.group(4)
    return BLOCK.sub(block, text)


def stale(paths: list[Path] | None = None) -> list[str]:
    """'<file>: <block>' for each generated block whose text differs from what the code gives."""
    found = []
    for path in paths or documents():
        text = path.read_text()
        for match in BLOCK.finditer(text):
            name = match.group(2)
            if name in GENERATORS and match.group(3) != GENERATORS[name]():
                found.append(f"{path.relative_to(REPO)}: {name}")
            elif name not in GENERATORS:
                found.append(f"{path.relative_to(REPO)}: unknown block {name}")
    return found


def main(argv: list[str]) -> int:
    if "--check" in argv:
        differ = stale()
        for line in differ:
            print(f"{line} differs from the code: run .venv/bin/python scripts/gen_docs.py")
        return 1 if differ else 0
    for path in documents():
        text = path.read_text()
        updated = regenerate(text, str(path.relative_to(REPO)))
        if updated != text:
            path.write_text(updated)
            print(f"{path.relative_to(REPO)}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
