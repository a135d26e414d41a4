"""The parser contract (issue 54), as the harness calls every parser (ToolAdapter.parsed): whatever the bytes of
a tool's output, metrics or a ParseError, never another exception; and metrics whose figures break an invariant
(a negative latency, percentiles out of order, a non-finite duration) a ParseError that says which, so the run is
a failed row saying why. On real captured outputs (tests/fixtures/<tool>/); the fuzzer is tests/test_fuzz.py."""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES, captured_run
from harness.store.figures import Metrics, figure_problems
from harness.tools.output import ParseError
from harness.tools.registry import discover

ADAPTERS = discover()


def copied(tmp_path: Path, tool: str, case: str) -> Path:
    return Path(shutil.copytree(FIXTURES / tool / case, tmp_path / case))


def test_a_json_output_that_is_not_utf8_is_a_parse_error(tmp_path):
    """ToolOutput.json caught only JSONDecodeError: a summary cut mid-character gave UnicodeDecodeError."""
    folder = copied(tmp_path, "k6", "vu20-host")
    summary = folder / "k6-summary.json"
    summary.write_bytes(summary.read_bytes()[:100] + b"\xc3")
    output, _ = captured_run(folder)
    with pytest.raises(ParseError, match="k6-summary.json is not JSON: UnicodeDecodeError"):
        ADAPTERS["k6"].parsed(output)


def test_a_jtl_row_cut_short_is_a_parse_error_naming_the_line(tmp_path):
    """JMeter's success column was read outside the parser's try: a row cut after its elapsed time, IndexError."""
    folder = copied(tmp_path, "jmeter", "vu20-host")
    jtl = folder / "jmeter.jtl"
    lines = jtl.read_text().splitlines()
    jtl.write_text("\n".join(lines[:5]) + "\n" + ",".join(lines[5].split(",")[:3]) + "\n")
    output, _ = captured_run(folder)
    with pytest.raises(ParseError, match=r"jmeter.jtl line 6: unreadable sample"):
        ADAPTERS["jmeter"].parsed(output)


def test_an_ab_percentile_file_cut_short_is_a_parse_error(tmp_path):
    folder = copied(tmp_path, "ab", "vu20-host")
    percentiles = folder / "ab-percentiles.csv"
    percentiles.write_bytes(percentiles.read_bytes()[:309])
    output, _ = captured_run(folder)
    with pytest.raises(ParseError, match="ab-percentiles.csv"):
        ADAPTERS["ab"].parsed(output)


def test_any_other_failure_of_a_parser_is_a_parse_error_naming_where(tmp_path, monkeypatch):
    """A parser's own unexpected exception (an int() of a mangled count) is a ParseError naming the file and line."""
    adapter = ADAPTERS["wrk"]
    output, _ = captured_run(FIXTURES / "wrk" / "vu20-host")
    monkeypatch.setattr(type(adapter), "parse", lambda self, out: int("12x"))
    with pytest.raises(ParseError, match=r"wrk's output is not what its parser reads \(ValueError: .*12x.*at "
                                         r"tests/test_parse_contract.py:\d+\)"):
        adapter.parsed(output)


@pytest.mark.parametrize("change, said", [
    ({"lat_min_ms": -57.0}, "lat_min_ms -57 is below 0"),
    ({"lat_p90_ms": 500.0}, "lat_p90_ms 500 > lat_p95_ms"),
    ({"measured_s": math.inf}, "measured_s inf is not a finite number"),
    ({"measured_s": 0.0}, "measured_s 0 is not above 0"),
    ({"rps": math.nan}, "rps nan is not a finite number"),
    ({"lat_mean_ms": 1e6}, "lat_mean_ms 1e+06 lies outside"),
    ({"requests": -1}, "requests -1 is below 0"),
])
def test_figures_that_break_an_invariant_are_a_parse_error_saying_which(change, said, monkeypatch):
    """Gatling's parser, mutated, accepted lat_min_ms -57, percentiles out of order and measured_s inf."""
    adapter = ADAPTERS["gatling"]
    output, _ = captured_run(FIXTURES / "gatling" / "vu20-host")
    real = adapter.parsed(output)
    assert figure_problems(real) == []
    parse = type(adapter).parse
    monkeypatch.setattr(type(adapter), "parse", lambda self, out: replace(parse(self, out), **change))
    with pytest.raises(ParseError, match="gatling's figures break an invariant") as refused:
        adapter.parsed(output)
    assert said in str(refused.value)


def test_every_adapter_is_parsed_through_the_one_guard():
    """The derivation calls parsed(), which no adapter overrides: the guard and the invariants hold for all."""
    from harness.tools.adapter import ToolAdapter
    assert [name for name, a in ADAPTERS.items() if type(a).parsed is not ToolAdapter.parsed] == []
    assert isinstance(json.dumps(figure_problems(Metrics())), str)
