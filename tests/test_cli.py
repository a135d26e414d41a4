"""Bad input: one line on stderr naming the value and what is allowed, exit status 2."""
import pytest

from conftest import harness

CASES = {
    "unknown tool": (["--tools", "wrk,nosuchtool"], "unknown tool nosuchtool; available:"),
    "unknown scenario id": (["--scenarios", "scenarios/quick.yaml:vu20-rtt0.1,vu9-rtt9"], "unknown scenario id vu9-rtt9"),
    "missing scenario file": (["--scenarios", "scenarios/nope.yaml"], "scenarios/nope.yaml does not exist"),
    "duration not a number": (["--duration", "ten"], "argument --duration: must be a whole number of seconds, got 'ten'"),
    "duration zero": (["--duration", "0"], "argument --duration: must be > 0"),
    "unknown runtime": (["--runtime", "vm"], "invalid choice: 'vm'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_one_clear_line(case, tmp_path):
    args, expected = CASES[case]
    result = harness("run", "--results-root", str(tmp_path), *args, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert not any(tmp_path.iterdir()), "bad input must not create a results folder"


def test_list_tools_shows_each_adapter():
    result = harness("list-tools", timeout=60)
    assert result.returncode == 0
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert {"wrk", "ab"} <= set(names)
