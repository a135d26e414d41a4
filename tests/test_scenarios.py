from pathlib import Path

import pytest

from harness import REPO_ROOT
from harness.errors import HarnessError
from harness.scenarios import load_file, select

SHOOTOUT = REPO_ROOT / "scenarios" / "shootout.yaml"
QUICK = REPO_ROOT / "scenarios" / "quick.yaml"


def test_shootout_holds_the_studys_seven_scenarios():
    scenarios = load_file(SHOOTOUT)
    assert [s.id for s in scenarios] == ["vu20-rtt0.1", "vu20-rtt10", "vu50-rtt50", "vu100-rtt50",
                                         "vu200-rtt50", "vu500-rtt50", "vu1000-rtt50"]
    assert [s.vus for s in scenarios] == [20, 20, 50, 100, 200, 500, 1000]
    assert [s.rtt_ms for s in scenarios] == [0.1, 10, 50, 50, 50, 50, 50]
    assert {s.duration_s for s in scenarios} == {300}


def test_quick_is_two_short_scenarios():
    scenarios = load_file(QUICK)
    assert [(s.id, s.duration_s) for s in scenarios] == [("vu20-rtt0.1", 10), ("vu100-rtt50", 10)]


def test_selector_picks_ids_in_order_and_overrides_duration():
    scenarios = select(f"{SHOOTOUT}:vu50-rtt50,vu20-rtt0.1", duration_override=5)
    assert [(s.id, s.duration_s) for s in scenarios] == [("vu50-rtt50", 5), ("vu20-rtt0.1", 5)]


def test_only_rtts_above_native_need_shaping():
    by_id = {s.id: s for s in load_file(SHOOTOUT)}
    assert not by_id["vu20-rtt0.1"].needs_shaping
    assert by_id["vu20-rtt10"].needs_shaping


def test_unknown_id_names_the_file_and_the_allowed_ids():
    with pytest.raises(HarnessError) as err:
        select(f"{QUICK}:vu20-rtt0.1,nope")
    message = str(err.value)
    assert "quick.yaml" in message and "nope" in message and "vu100-rtt50" in message


BAD_FILES = {
    "malformed": ("scenarios: [ {id: a, vus: 1", "malformed YAML"),
    "not-a-mapping": ("- 1\n- 2\n", "expected a mapping"),
    "no-scenarios": ("defaults: {duration_s: 5}\n", "scenarios"),
    "zero-vus": ("scenarios:\n  - {id: a, vus: 0, rtt_ms: 1, duration_s: 5}\n", "scenarios[0].vus"),
    "absurd-vus": ("scenarios:\n  - {id: a, vus: 5000000, rtt_ms: 1, duration_s: 5}\n", "scenarios[0].vus"),
    "text-vus": ("scenarios:\n  - {id: a, vus: many, rtt_ms: 1, duration_s: 5}\n", "scenarios[0].vus"),
    "text-duration": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: soon}\n", "scenarios[0].duration_s"),
    "negative-rtt": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: -3, duration_s: 5}\n", "scenarios[0].rtt_ms"),
    "missing-duration": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1}\n", "scenarios[0].duration_s"),
    "unknown-field": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, rps: 9}\n", "scenarios[0].rps"),
    "text-rate": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, rate_rps: fast}\n", "scenarios[0].rate_rps"),
    "zero-rate": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, rate_rps: 0}\n", "scenarios[0].rate_rps"),
    "stall-without-time": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, rate_rps: 9, stall_ms: 500}\n",
                           "stall_ms and stall_at_s go together"),
    "stall-past-the-end": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, stall_ms: 1000, stall_at_s: 4.5}\n",
                           "must end before the run does"),
    "closed-tools-without-rate": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, closed_model_tools: run}\n",
                                  "closed_model_tools only applies to a rate scenario"),
    "closed-tools-unknown": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, rate_rps: 9, closed_model_tools: skip}\n",
                             "scenarios[0].closed_model_tools"),
    "duplicate-key": ("scenarios:\n  - id: a\n    vus: 2\n    rtt_ms: 1\n    vus: 20\n    duration_s: 5\n",
                      "malformed YAML at line 5: key 'vus' is given twice: keep one"),
    "duplicate-top-key": ("scenarios: []\nscenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5}\n",
                          "key 'scenarios' is given twice"),
    "text-rtt": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: '50', duration_s: 5}\n",
                 "scenarios[0].rtt_ms: Input should be a valid number (got '50')"),
    "nan-rtt": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: .nan, duration_s: 5}\n",
                "scenarios[0].rtt_ms: Input should be a finite number (got nan)"),
    "inf-rtt": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: .inf, duration_s: 5}\n",
                "scenarios[0].rtt_ms: Input should be a finite number (got inf)"),
    "inf-stall-time": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, stall_ms: 9, stall_at_s: .inf}\n",
                       "scenarios[0].stall_at_s: Input should be a finite number"),
    "nan-delay": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5, backend_delay_ms: .nan}\n",
                  "backend_delay_ms 'nan': need finite milliseconds"),
    "id-runs-csv": ("scenarios:\n  - {id: runs.csv, vus: 2, rtt_ms: 1, duration_s: 5}\n",
                    "scenario id 'runs.csv' is a name the results folder uses for its own files"),
    "id-environment-json": ("scenarios:\n  - {id: environment.json, vus: 2, rtt_ms: 1, duration_s: 5}\n",
                            "scenario id 'environment.json' is a name the results folder uses"),
    "id-latest": ("scenarios:\n  - {id: Latest, vus: 2, rtt_ms: 1, duration_s: 5}\n", "scenario id 'Latest' is a name"),
    "empty": ("", "the file is empty: it needs 'scenarios:'"),
    "comments-only": ("# nothing yet\n", "the file is empty"),
    "impossible-date": ("scenarios:\n  - {id: 2024-13-45, vus: 2, rtt_ms: 1, duration_s: 5}\n",
                        "malformed YAML: month must be in 1..12 (quote the value if it is text)"),
    "duplicate-id": ("scenarios:\n  - {id: a, vus: 2, rtt_ms: 1, duration_s: 5}\n"
                     "  - {id: a, vus: 3, rtt_ms: 1, duration_s: 5}\n", "duplicate scenario id"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_gets_one_line_naming_file_and_field(tmp_path: Path, name: str):
    text, expected = BAD_FILES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    with pytest.raises(HarnessError) as err:
        load_file(path)
    message = str(err.value)
    assert str(path) in message
    assert expected in message
    assert "\n" not in message


def test_missing_file_says_so(tmp_path: Path):
    with pytest.raises(HarnessError, match="does not exist"):
        load_file(tmp_path / "absent.yaml")


def test_a_directory_or_a_file_not_in_utf8_says_so(tmp_path: Path):
    with pytest.raises(HarnessError, match=f"scenario file {tmp_path} is a directory: pass a YAML file in it"):
        load_file(tmp_path)
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("scenarios:\n  - {id: caf\xe9, vus: 2, rtt_ms: 1, duration_s: 5}\n".encode("latin-1"))
    with pytest.raises(HarnessError, match=r"latin1.yaml: not UTF-8 text \(byte 0xe9 at offset 23\): save it as UTF-8"):
        load_file(latin1)


def test_a_merge_key_may_still_be_overridden(tmp_path: Path):
    """Only a key written twice is refused: `<<: *base` then `vus:` overrides the merged value on purpose."""
    path = tmp_path / "merge.yaml"
    path.write_text("base: &base {vus: 2, rtt_ms: 1, duration_s: 5}\n"
                    "scenarios:\n  - {<<: *base, id: a, vus: 4}\n")
    with pytest.raises(HarnessError, match="base: unknown field"):    # the anchor's holder is not a field
        load_file(path)
    path.write_text("scenarios:\n  - &a {id: a, vus: 2, rtt_ms: 1, duration_s: 5}\n  - {<<: *a, id: b, vus: 4}\n")
    assert [(s.id, s.vus) for s in load_file(path)] == [("a", 2), ("b", 4)]


@pytest.mark.parametrize("selector, message", [
    (f"{QUICK}:vu20-rtt0.1,vu20-rtt0.1", "scenario vu20-rtt0.1 is named twice; name each once"),
    (f"{QUICK}:,", "names no scenario id after the ':'"),
])
def test_a_selection_names_each_scenario_once(selector, message):
    with pytest.raises(HarnessError, match=message):
        select(selector)


OPEN_MODEL = REPO_ROOT / "scenarios" / "open-model.yaml"


def test_open_model_has_rate_runs_at_both_rtts_with_and_without_the_stall():
    scenarios = load_file(OPEN_MODEL)
    assert {(s.rtt_ms, s.stall_ms) for s in scenarios} == {(0.1, None), (0.1, 1000), (10, None), (10, 1000)}
    assert {s.rate_rps for s in scenarios} == {1000}
    # the stall at the 50-connection budget every tool gets, and again with 2,000 for open-model tools only
    budgets = {(s.rtt_ms, s.vus, s.closed_model_tools) for s in scenarios if s.stall_ms}
    assert budgets == {(0.1, 50, "run"), (10, 50, "run"), (0.1, 2000, "unsupported"), (10, 2000, "unsupported")}


def test_a_duration_override_that_cuts_the_stall_is_refused():
    with pytest.raises(HarnessError, match="does not fit scenario rate1000-rtt0.1-stall1s.*must end before"):
        select(f"{OPEN_MODEL}:rate1000-rtt0.1-stall1s", duration_override=5)
