"""The error line of a failed run names the cause, picked from the tool's real stderr
(tests/fixtures/failures/<tool>/: each tool run by hand with its output file in a folder that did not
exist, as a relative results path inside a container once made them fail), not its last line."""
import pytest

from conftest import FIXTURES
from harness.failure import cause_line, name_the_missing_path

CAUSES = {
    "artillery": "Error: Path does not exist: results/",       # last line: "Node.js v20.20.2"
    "drill": "couldn't open results/",                          # last line: a RUST_BACKTRACE hint
    "ab": "Cannot open CSV output file: No such file or directory",
    "vegeta": "2026/11/24 22:13:22 error opening results/",
    "h2load": "--log-file: Could not open file results/",
    "oha": "Error: No such file or directory (os error 2)",   # all oha says: no path
    # k6 exits 0 without its summary file: the parse error quotes this line (harness/row _figures)
    "k6": 'time="2026-11-24T22:13:24Z" level=error msg="failed to handle the end-of-test summary"',
}


@pytest.mark.parametrize("tool", sorted(CAUSES))
def test_the_cause_line_of_a_real_failure(tool):
    folder = FIXTURES / "failures" / tool
    stderr = (folder / "stderr.txt").read_text()
    assert int((folder / "exit_code").read_text()) != 0 or tool == "k6"
    line = cause_line(stderr, (folder / "stdout.txt").read_text())
    assert line.startswith(CAUSES[tool]), line
    assert line != stderr.strip().splitlines()[-1] or tool in ("ab", "vegeta", "h2load", "oha", "k6")


def test_a_panic_message_on_the_line_after_panicked_at_is_joined():
    stderr = "thread 'main' panicked at src/reader.rs:13:17:\nno plan file\nnote: run with `RUST_BACKTRACE=1`"
    assert cause_line(stderr) == "thread 'main' panicked at src/reader.rs:13:17: no plan file"


def test_without_an_error_like_line_the_last_telling_line_and_stdout_when_stderr_is_empty():
    assert cause_line("starting\nstopped early\n") == "stopped early"
    assert cause_line("", "fatal: bad plan\n") == "fatal: bad plan"
    assert cause_line("", "") == "no output"


def test_a_bare_no_such_file_names_the_path_whose_folder_is_missing(tmp_path):
    """oha's real message has no path: the run's command line gives it."""
    stderr = (FIXTURES / "failures" / "oha" / "stderr.txt").read_text()
    missing = tmp_path / "missing" / "oha.json"
    command = ["oha", "--no-tui", "-o", str(missing), f"--db-url={tmp_path / 'oha.db'}", "http://198.18.0.2/"]
    error = name_the_missing_path(cause_line(stderr), command)
    assert error == f"Error: No such file or directory (os error 2) (its command names {missing}: no such folder)"
    # a message that names its path already, or another cause, is left as it is
    assert name_the_missing_path("couldn't open /x/y: No such file", command) == "couldn't open /x/y: No such file"
    assert name_the_missing_path("Connection refused", command) == "Connection refused"
