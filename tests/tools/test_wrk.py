"""wrk adapter: undoing wrk 4.1.0's coordinated-omission correction.

The inversion is checked on synthetic histograms (the forward correction, written after wrk's
stats_correct(), then the inversion must restore them exactly) and on real runs
(tests/fixtures/wrk/vu20-<runtime>/: report.lua's dump of the corrected histogram, next to the
figures wrk itself computed from it).
"""
import json
import math
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.tools.output import ParseError, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, cases, command_spec, with_stdout

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "wrk"
CASES = cases("wrk")
WRK = discover()["wrk"]
module = SimpleNamespace(**type(WRK).parse.__globals__)   # the adapter file's functions


def test_command_holds_vus_connections_for_the_duration(tmp_path):
    assert WRK.command(command_spec(tmp_path)) == [
        "wrk", "-t2", "-c20", "-d5s", "--timeout", "10s", "-s", str(WRK.folder / "report.lua"),
        "http://198.18.0.2:80/style.css"]


def test_keepalive_off_sends_connection_close_and_tls_needs_only_the_url(tmp_path):
    plain = WRK.command(command_spec(tmp_path))
    # wrk reconnects after a response that does not keep the connection alive.
    assert WRK.command(command_spec(tmp_path, keepalive=False)) == [*plain[:6], "-H", "Connection: close", *plain[6:]]
    assert WRK.command(command_spec(tmp_path, url=TLS_URL)) == [*plain[:-1], TLS_URL]   # wrk does not verify


def load(case: str) -> tuple[ToolOutput, dict]:
    return captured_run(FIXTURES / case)


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
        rank, total = math.floor(p / 100 * count + 0.5 + 0.5), 0     # C round(): half away from zero
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


def wrk_json(output: ToolOutput) -> dict:
    return json.loads(next(l for l in output.stdout.splitlines() if l.startswith("LTH_JSON "))[9:])


def dumped(output: ToolOutput) -> dict[int, int]:
    histogram, complete = module.read_histogram(next(l for l in output.stdout.splitlines() if l.startswith("LTH_HIST")))
    assert complete
    return histogram


@pytest.mark.parametrize("case", CASES)
def test_the_recovered_histogram_reproduces_wrks_own_figures_and_counts_every_request(case):
    output, meta = load(case)
    data = wrk_json(output)
    interval = module.correction_interval_us(data["duration_us"], data["requests"], output.spec.vus)
    corrected = dumped(output)
    raw = module.uncorrect(corrected, interval)
    assert interval > 0 and min(raw) == data["latency_us"]["min"] == min(corrected)
    # One measured latency per request: the correction only added counts.
    assert sum(raw.values()) == data["requests"] < sum(corrected.values())
    # Re-applying wrk's correction to the raw histogram gives back what wrk printed and computed:
    # the dumped buckets, and (with the buckets below the minimum it adds too) its own mean and percentiles.
    full = wrk_stats_correct(raw, interval)
    assert {us: c for us, c in full.items() if us >= min(raw)} == corrected
    own = wrk_own_figures(full, min(raw))
    assert own["mean"] == pytest.approx(data["latency_us"]["mean"], abs=1e-3)
    assert {p: own[p] for p in ("p50", "p75", "p90", "p95", "p99")} == \
        {p: data["latency_us"][p] for p in ("p50", "p75", "p90", "p95", "p99")}


@pytest.mark.parametrize("case", CASES)
def test_parser_reports_the_raw_latencies_within_littles_bound(case):
    output, meta = load(case)
    data, row, metrics = wrk_json(output), meta["row"], WRK.parse(output)
    assert metrics.requests == data["requests"] == int(re.search(r"(\d+) requests in", output.stdout).group(1))
    assert metrics.rps == pytest.approx(float(re.search(r"Requests/sec:\s+([\d.]+)", output.stdout).group(1)), rel=1e-3)
    assert metrics.errors == 0
    # VUs x duration / requests bounds the mean latency from above (each connection also spends
    # time between a response and its next request); wrk's corrected mean exceeds the bound.
    bound_ms = output.spec.vus * data["duration_us"] / 1000 / data["requests"]
    assert 0.8 * bound_ms < metrics.lat_mean_ms <= bound_ms < data["latency_us"]["mean"] / 1000
    values = [metrics.lat_min_ms, metrics.lat_p50_ms, metrics.lat_p75_ms, metrics.lat_p90_ms, metrics.lat_p95_ms,
              metrics.lat_p99_ms, metrics.lat_max_ms]
    assert values == sorted(values) and metrics.lat_max_ms == data["latency_us"]["max"] / 1000
    assert metrics.lat_p99_ms <= data["latency_us"]["p99"] / 1000
    assert "coordinated-omission corrected" in metrics.notes[0] and len(metrics.notes) == 1
    assert not WRK.co_corrected and WRK.timing_resolution_ms == 0.001
    for name in ("requests", "rps", "lat_mean_ms", "lat_p50_ms", "lat_p99_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_wrk_without_summary_line_is_a_parse_error():
    output, _ = load(CASES[0])
    with pytest.raises(ParseError):
        WRK.parse(with_stdout(output, output.stdout.split("LTH_JSON")[0]))


def test_missing_histogram_line_is_a_parse_error():
    output, _ = load(CASES[0])
    cut = ToolOutput(output.spec, output.stdout.split("LTH_HIST")[0], "", 0)
    with pytest.raises(ParseError, match="LTH_HIST"):
        WRK.parse(cut)


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
def test_a_cut_dump_gives_the_percentiles_it_covers_and_leaves_the_rest_empty(keep):
    """report.lua stops dumping after its CPU budget: the real fixture's dump cut to its lowest buckets."""
    output, _ = load("vu20-host")
    full = WRK.parse(output)
    lines = output.stdout.splitlines()
    index = next(i for i, l in enumerate(lines) if l.startswith("LTH_HIST"))
    pairs = lines[index].split()[2:]
    lines[index] = " ".join(["LTH_HIST", "cut", *pairs[:max(1, int(len(pairs) * keep))]])
    cut = WRK.parse(ToolOutput(output.spec, "\n".join(lines) + "\n", "", 0))
    assert cut.lat_mean_ms is None and cut.lat_min_ms == full.lat_min_ms and cut.lat_max_ms == full.lat_max_ms
    assert "cut its histogram dump" in cut.notes[1]
    for p in (50, 75, 90, 95, 99):
        value = getattr(cut, f"lat_p{p}_ms")
        assert value is None or value == getattr(full, f"lat_p{p}_ms"), p
    known = [p for p in (50, 75, 90, 95, 99) if getattr(cut, f"lat_p{p}_ms") is not None]
    assert known == [50, 75, 90, 95, 99][:len(known)]          # the lowest percentiles first
    if keep == 0.999:
        assert 50 in known
