"""The `lth` command as a newcomer meets it (issue 49.4): internal commands out of `lth --help` yet callable,
an example at the end of every visible command's --help, `lth scenarios` and `lth tools`."""
from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from harness import cli

INTERNAL = cli.INTERNAL


def _commands() -> argparse._SubParsersAction:
    return next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))


def visible() -> list[str]:
    return [choice.dest for choice in _commands()._choices_actions]


def _help_of(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stopped:
        cli.main([*argv, "--help"])
    assert stopped.value.code == 0
    return out.getvalue()


def test_internal_commands_are_not_listed_but_still_run(capsys):
    listed = _help_of()
    assert not [name for name in INTERNAL if name in listed], listed
    assert set(INTERNAL) <= set(_commands().choices)
    assert cli.main(["target-packages"]) == 0 and "nginx" in capsys.readouterr().out


def test_the_newcomers_commands_are_listed():
    assert {"run", "report", "compare", "capacity", "tools", "scenarios", "rederive", "clean-state"} <= set(visible())


@pytest.mark.parametrize("command", visible())
def test_every_visible_command_ends_its_help_with_an_example(command):
    text = _help_of(command)
    tail = text[text.rfind("example"):]
    assert "example" in text and f"lth {command}" in tail, f"`lth {command} --help` shows no example:\n{text}"


def test_scenarios_lists_each_scenario_of_a_file(capsys):
    assert cli.main(["scenarios", "scenarios/targets.yaml:tls-vu20-rtt0.1,delay0-1000-vu1000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:5] == ["tls-vu20-rtt0.1", "20", "0.1", "60s", "-"] and lines[1].endswith("tls")
    assert lines[2].endswith("backend delay 0..1000 ms") and lines[-1].startswith("2 scenarios, 120 s")


def test_scenarios_of_a_missing_file_is_one_line_and_status_2(capsys):
    assert cli.main(["scenarios", "scenarios/nope.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scenarios/nope.yaml does not exist" in err[0]
