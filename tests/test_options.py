"""One name and one default per option across Make and `lth` (issue 49.4): a Make variable named after a flag
(RESULTS_ROOT is --results-root) holds the flag's default, and the Makefile passes each flag from the variable of
its name. A variable left empty in the Makefile leaves the flag out: the parser's default holds by construction."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from harness import cli

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = r"([A-Z][A-Z0-9_]*)\s*(\?=|=)[ \t]*(.*)$"
# (the target whose own values are read, "" for none: the file's defaults; the lth command it calls)
CHECKED = [("", "run"), ("bench-capacity", "capacity"), ("bench-compare", "host-vs-docker")]


def make_defaults(makefile: str, target: str = "") -> dict[str, str]:
    """Every `VAR ?= value` of the file, overridden by `target: VAR = value` lines of that target."""
    values = {name: value.strip() for name, op, value in re.findall("^" + ASSIGNMENT, makefile, re.M) if op == "?="}
    if target:
        values |= {name: value.strip() for name, _, value in
                   re.findall(f"^{re.escape(target)}:[ \t]*" + ASSIGNMENT, makefile, re.M)}
    return values


def flag_defaults(command: str) -> dict[str, object]:
    commands = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest.upper(): a.default for a in commands.choices[command]._actions if a.option_strings}


def as_make(default: object) -> str:
    """A parser default as Make spells it: a path inside the clone relative to it, a flag on as 1."""
    if isinstance(default, bool):
        return "1" if default else ""
    if isinstance(default, (str, Path)) and Path(default).is_absolute() and Path(default).is_relative_to(REPO):
        return str(Path(default).relative_to(REPO))
    return "" if default is None else str(default)


def mismatches(makefile: str) -> list[str]:
    found = []
    for target, command in CHECKED:
        flags = flag_defaults(command)
        for name, value in make_defaults(makefile, target).items():
            if name in flags and value and value != as_make(flags[name]):
                found.append(f"{target or 'Makefile'}: {name}={value} but `lth {command}` defaults to "
                             f"{as_make(flags[name])!r}")
    return found


def misnamed(makefile: str) -> list[str]:
    """`--some-flag $(VAR)` where VAR, a variable of the Makefile's, is not SOME_FLAG."""
    ours = make_defaults(makefile)       # the variables a user sets (not Make's own, such as CURDIR)
    return [f"--{flag} $({var})" for flag, var in re.findall(r"--([a-z][a-z0-9-]*) \$\(([A-Z][A-Z0-9_]*)\)", makefile)
            if var in ours and flag.upper().replace("-", "_") != var]


MAKEFILE = (REPO / "Makefile").read_text()


def test_the_makefile_defaults_are_the_parsers():
    assert mismatches(MAKEFILE) == []


def test_every_variable_is_named_after_its_flag():
    assert misnamed(MAKEFILE) == []


@pytest.mark.parametrize("planted, expected", [
    (("REPEAT    ?= 1", "REPEAT    ?= 2"), "Makefile: REPEAT=2 but `lth run` defaults to '1'"),
    (("bench-capacity: RUNTIME = host", "bench-capacity: RUNTIME = docker"),
     "bench-capacity: RUNTIME=docker but `lth capacity` defaults to 'host'"),
    (("ISOLATION ?= 1", "ISOLATION ?= 0"), "Makefile: ISOLATION=0 but `lth run` defaults to '1'"),
])
def test_a_default_changed_on_one_side_only_is_caught(planted, expected):
    old, new = planted
    assert old in MAKEFILE
    assert expected in mismatches(MAKEFILE.replace(old, new))


def test_a_variable_named_otherwise_than_its_flag_is_caught():
    planted = MAKEFILE.replace("GENERATORS ?=", "LAB_GENERATORS ?=").replace("--generators $(GENERATORS)",
                                                                             "--generators $(LAB_GENERATORS)")
    assert set(misnamed(planted)) == {"--generators $(LAB_GENERATORS)"}      # bench-lab's and RUNTIME=swarm's
