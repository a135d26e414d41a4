"""wrk adapter: undoing wrk 4.1.0's coordinated-omission correction.

The inversion is checked on synthetic histograms (the forward correction, written after wrk's
stats_correct(), then the inversion must restore them exactly) and on real runs
(tests/fixtures/wrk/vu20-<runtime>/: report.lua's dump of the corrected histogram, next to the
figures wrk itself computed from it).
"""
import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.adapter import ParseError, RunSpec, ToolOutput
from harness.registry import discover

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "wrk"
CASES = sorted(p.name for p in FIXTURES.iterdir())
WRK = discover()["wrk"]
module = SimpleNamespace(**type(WRK).parse.__globals__)   # the adapter file's functions


def load(case: str) -> tuple[ToolOutput, dict]:
    folder = FIXTURES / case
    meta = json.loads((folder / "meta.json").read_text())
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=meta["row"]["vus"],
                   duration_s=meta["row"]["duration_s"], out_dir=folder, cpus=2)
    return ToolOutput(spec, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text(), 0), meta


def wrk_stats_correct(raw: dict[int, int], expected: int) -> dict[int, int]:
    """wrk 4.1.0's src/stats.c stats_correct(), over a dense array as wrk holds it."""
    top = max(raw)
    data = [raw.get(n, 0) for n in range(top + 1)]
    for n in range(expected * 2, top + 1):
        count, m = data[n], n - expected
        while count and m > expected:
            data[m] += count
            m -= expected
    return {n: c for n, c in enumerate(data) if c}


def wrk_own_figures(corrected: dict[int, int], raw_min: int) -> dict[str, float]:
    """wrk's stats_mean() and stats_percentile(): sums run from the RAW minimum, the count is the total."""
    count = sum(corrected.values())
    span = [(us, corrected.get(us, 0)) for us in range(raw_min, max(corrected) + 1)]
    figures = {"mean": sum(us * c for us, c in span) / count}
    for p in (50, 75, 90, 95, 99):
        rank, total = round(p / 100 * count + 0.5), 0
        for us, c in span:
            total += c
            if total >= rank:
                figures[f"p{p}"] = us
                break
    return figures


@pytest.mark.parametrize("seed", range(20))
def test_inverting_the_correction_restores_the_measured_histogram(seed):
    rng = random.Random(seed)
    raw = {}
    for _ in range(rng.randint(1, 400)):
        us = rng.choice([rng.randint(1, 300), rng.randint(1, 5_000)])
        raw[us] = raw.get(us, 0) + rng.randint(1, 50)
    for interval in (1, 2, 7, 37, 250, 3_000, 30_000):
        corrected = module.correct(raw, interval)
        assert corrected == wrk_stats_correct(raw, interval), interval
        assert module.uncorrect(corrected, interval) == raw, interval


def test_no_interval_means_no_correction_and_a_broken_histogram_is_a_parse_error():
    assert module.uncorrect({5: 2, 9: 1}, 0) == {5: 2, 9: 1}
    assert module.correction_interval_us(3_000_000, 19, 20) == 0
    assert module.correction_interval_us(3_000_638, 235_335, 20) == 3_000_638 // (235_335 // 20)
    with pytest.raises(ParseError, match="does not invert"):
        module.uncorrect({10: 1, 14: 5}, 4)       # C[10] < C[14]: impossible after wrk's correction
