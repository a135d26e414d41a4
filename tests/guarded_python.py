"""PY and LTH for the Makefile tests (`make PY="python tests/guarded_python.py" LTH="python tests/guarded_python.py lth"
...`): `-m harness ARGS` (`lth ARGS`) runs the CLI
with tests/no_real_run.py's guard (past validation it stops with status 99 instead of starting a run);
`-m analysis.report ARGS` (`lth report ARGS`) only appends ARGS to the file LTH_TEST_REPORT_LOG names, so a test sees whether
make asked for a report. LTH_TEST_HARNESS_EXIT=N: the harness exits N at once (the test's control)."""
import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS.parent), str(TESTS)]


def harness(args: list[str]) -> int:
    if "LTH_TEST_HARNESS_EXIT" in os.environ:
        return int(os.environ["LTH_TEST_HARNESS_EXIT"])
    import no_real_run
    from harness.cli import main
    no_real_run.install(setattr)
    try:
        return main(args)
    except no_real_run.ReachedARealRun as exc:
        print(f"guarded_python: {exc}", file=sys.stderr)
        return 99


def report(args: list[str]) -> int:
    with open(os.environ["LTH_TEST_REPORT_LOG"], "a") as log:
        log.write(" ".join(args) + "\n")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["lth"]:     # LTH for the Makefile tests: `lth report ARGS` as above, any other command the CLI's
        command = sys.argv[2:]
        sys.exit(report(command[1:]) if command[:1] == ["report"] else harness(command))
    flag, module, *rest = sys.argv[1:]
    assert flag == "-m", sys.argv
    sys.exit({"harness": harness, "analysis.report": report}[module](rest))
