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
