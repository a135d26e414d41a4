"""Bad input, the contract (tests/README.md): every row of its table gets exit status 2 and exactly one line,
before anything starts, and leaves the previous results/latest as it was; make writes no report after such a
line; and the scenario loader, fuzzed, raises nothing but its own one-line HarnessError."""
import codecs
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

import no_real_run
from conftest import MAKE_ENVIRONMENT, REPO
from harness.cli import main
from harness.errors import HarnessError
from harness.scenarios import load_file

SECTION = "## Bad input, the contract"
ROW = re.compile(r"^\| (\d+) \| `([^`]+)` \| (.+?) \| [^|]* \|$")


def contract_rows() -> list[tuple[int, str, list[str]]]:
    """(number, command, fragments) of each row of the table in tests/README.md."""
    text = (REPO / "tests" / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [(int(m[1]), m[2], re.findall(r"`([^`]+)`", m[3])) for m in map(ROW.match, section.splitlines()) if m]


ROWS = contract_rows()


def words(command: str) -> list[str]:
    """The command's words as a shell splits them; `\\n` in one is a newline (a character the table cannot show)."""
    return [codecs.decode(word, "unicode_escape") if "\\" in word else word for word in shlex.split(command)]


@pytest.fixture
def results_root(tmp_path: Path) -> Path:
    """A results root as a user has it: a previous results folder with its report, and `latest` on it."""
    root = tmp_path / "results"
    previous = root / "20260101T000000Z-host"
    (previous / "report").mkdir(parents=True)
    (previous / "runs.csv").write_text("tool,status\nwrk,ok\n")
    (previous / "report" / "index.html").write_text("<p>the previous report</p>\n")
    (root / "latest").symlink_to(previous.name)
    return root


def snapshot(root: Path) -> list[tuple]:
    return sorted((str(p.relative_to(root)), os.readlink(p) if p.is_symlink() else p.lstat().st_mtime_ns)
                  for p in root.rglob("*"))


def exit_status(argv: list[str]) -> int:
    return exit_status_of(lambda: main(argv))


def exit_status_of(command: Callable[[], int]) -> int:
    try:
        return command()
    except SystemExit as exc:     # argparse's one line (harness.cli._Parser.error)
        return exc.code


def test_the_contract_lists_at_least_25_bad_inputs_in_order():
    assert len(ROWS) >= 25 and [number for number, _, _ in ROWS] == list(range(1, len(ROWS) + 1))
    assert all(fragments for _, _, fragments in ROWS)


@pytest.mark.parametrize("number, command, fragments", ROWS, ids=[f"{n:02d} {c}" for n, c, _ in ROWS])
def test_bad_input_gets_exit_2_and_one_line_and_starts_nothing(number, command, fragments, results_root, monkeypatch,
                                                                capsys):
    """In-process, with everything past validation replaced by a stop (tests/no_real_run.py): a traceback
    fails the test, and so does reaching the runtime, the pre-flight, the lock or a new results folder."""
    no_real_run.install(monkeypatch.setattr)
    monkeypatch.chdir(REPO)
    before = snapshot(results_root)
    command_words = words(command)
    # The table's own --results-root, where a row has one, comes after this one and wins.
    argv = (command_words[:1] + ["--results-root", str(results_root)] + command_words[1:]
            if command_words[0] in ("run", "capacity") else command_words)
    status = exit_status(argv)
    out, err = capsys.readouterr()
    lines = (out + err).strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), out + err
    assert [f for f in fragments if f not in lines[0]] == [], lines[0]
    assert snapshot(results_root) == before


@pytest.mark.parametrize("run_args, fragment", [
    (["--tools", "bombardier,bombardier"], "bombardier is named twice"),
    (["--scenarios", "tests/fixtures/bad-input/duplicate-key.yaml"], "key 'vus' is given twice"),
    (["--resume", "tests/fixtures/bad-input/resume-list"], "holds a list, not a mapping"),
    (["--capture"], "leave out --capture"),
    (["--duration", "ten"], "argument --duration: must be a duration such as 300, 300s, 5m or 1h"),
])
def test_the_lab_refuses_bad_run_arguments_before_it_makes_its_hosts(run_args, fragment, monkeypatch, capsys):
    """make bench-lab: `python -m harness.lab -- RUN ARGS` made its namespaces, sshd and engines first, and only
    then ran the harness that refused the arguments."""
    from harness import lab
    no_real_run.install(monkeypatch.setattr)
    monkeypatch.chdir(REPO)
    status = exit_status_of(lambda: lab.main(["--generators", "1", "--", *run_args]))
    out, err = capsys.readouterr()
    lines = (out + err).strip().splitlines()
    assert status == 2 and len(lines) == 1 and fragment in lines[0], out + err


GUARDED_PY = f"{sys.executable} {REPO / 'tests' / 'guarded_python.py'}"
MAKE_BAD_INPUT = {   # a bad input each bench target passes to the harness (before: exit 1, a traceback)
    "bench-quick": ["TOOLS=bombardier,bombardier"],
    "bench-all": ["RESUME=tests/fixtures/bad-input/resume-empty"],
    "bench-capacity": ["STEP_DURATION=100000"],
}


def make(target: str, results_root: Path, report_log: Path, *variables: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The target's recipe as typed, with `deps` taken as made (-o) and PY and LTH the guarded interpreter."""
    clean = {k: v for k, v in os.environ.items() if k not in MAKE_ENVIRONMENT}
    return subprocess.run(["make", "--no-print-directory", "-o", "deps", target, f"PY={GUARDED_PY}",
                           f"LTH={GUARDED_PY} lth", f"RESULTS_ROOT={results_root}", *variables], cwd=REPO,
                          capture_output=True, text=True,
                          timeout=120, env={**clean, "LTH_TEST_REPORT_LOG": str(report_log), **(env or {})})


@pytest.mark.parametrize("target", sorted(MAKE_BAD_INPUT))
def test_make_writes_no_report_after_bad_input(target, results_root, tmp_path):
    report_log = tmp_path / "report.log"
    result = make(target, results_root, report_log, *MAKE_BAD_INPUT[target])
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error: ")]
    assert result.returncode == 2 and len(errors) == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and not report_log.exists()
    # The control: an exit 1 (a run that failed, or before, a traceback) gets the report of latest.
    failed = make(target, results_root, report_log, *MAKE_BAD_INPUT[target], env={"LTH_TEST_HARNESS_EXIT": "1"})
    assert failed.returncode == 2 and report_log.read_text().split()[-1].endswith(
        "resume-empty" if target == "bench-all" else f"{results_root}/latest")


def test_make_bench_compare_after_bad_input_is_one_line_and_no_folder(results_root, tmp_path):
    """make bench-compare (lth host-vs-docker): a bad input is said before the first step, in either runtime."""
    before = sorted(results_root.iterdir())
    result = make("bench-compare", results_root, tmp_path / "report.log", "TOOLS=bombardier,bombardier")
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error: ")]
    assert result.returncode == 2 and len(errors) == 1 and "bombardier" in errors[0], result.stdout + result.stderr
    assert sorted(results_root.iterdir()) == before and "Traceback" not in result.stderr


# --- the scenario loader, fuzzed -----------------------------------------------------------------------
FIELDS = ["id", "vus", "rtt_ms", "duration_s", "rate_rps", "closed_model_tools", "stall_ms", "stall_at_s", "target",
          "keepalive", "tls", "backend_delay_ms", "defaults", "scenarios", "rps", "", "<<"]
# Any character a UTF-8 file can hold (no surrogates); an explicit alphabet also spares Hypothesis its
# codec tables (seconds on a first run).
characters = st.characters(exclude_categories=("Cs",))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(characters, max_size=12),
                    st.sampled_from(["50", ".nan", "0..1000", "runs.csv", "latest", "nginx", "unsupported", "run",
                                     "2024-13-45", "1e999", "-0"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=3), max_leaves=6)
scenario = st.dictionaries(st.sampled_from(FIELDS[:12]), values, max_size=8)
documents = st.one_of(
    st.builds(lambda items, defaults: {"scenarios": items, **({"defaults": defaults} if defaults else {})},
              st.lists(scenario, max_size=4),
              st.none() | st.dictionaries(st.sampled_from(["duration_s", "x"]), values)),
    st.dictionaries(st.sampled_from(FIELDS), values, max_size=3),
    values,
)
# Text that is YAML-ish but not made by a YAML writer: anchors, tags, keys twice, flow and block mixed.
yaml_bits = st.sampled_from(["scenarios:", "\n  - ", "{", "}", "[", "]", ", ", ": ", "id: a", "vus: 2", "rtt_ms: 1",
                             "duration_s: 5", "&a ", "*a", "!!str ", "!!python/object:os.system ", "<<: ", "? ",
                             "\t", "'", '"', "#", "---\n", "...\n", "\n", " ", "%YAML 1.1\n", "\ufeff", "\x00", "\xe9"])
raw_text = st.one_of(st.text(characters, max_size=80), st.lists(yaml_bits, max_size=30).map("".join))


def loads_or_refuses(path: Path) -> None:
    try:
        load_file(path)
    except HarnessError as exc:
        assert "\n" not in str(exc), str(exc)


@settings(max_examples=int(os.environ.get("LTH_FUZZ_EXAMPLES", "300")), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=documents, as_text=raw_text, pick_text=st.booleans())
def test_the_scenario_loader_fuzzed(tmp_path, document, as_text, pick_text):
    """300 generated files: scenario-like mappings with random values (written by PyYAML), and random
    YAML-ish text. Any exception but the loader's own one-line HarnessError fails."""
    path = tmp_path / "fuzzed.yaml"
    if pick_text:
        path.write_text(as_text)
    else:
        path.write_text(yaml.safe_dump(document, allow_unicode=True))
    loads_or_refuses(path)
