"""The overhead benchmark's arithmetic and its by-hand side, without root or load (harness/suite/overhead_check.py;
its run end to end: tests/test_overhead_e2e.py)."""
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cpus import CpuSplit
from harness.store.figures import Metrics
from harness.suite import overhead_check as oc
from harness.tools.output import RunSpec, ToolOutput

# issue 53's pairs measured by hand on this machine (harness/by-hand, wrk, 10 s)
HOST = [0.937, 0.971, 0.969, 0.957, 0.725]
DOCKER = [1.009, 0.994, 0.958, 1.007, 0.962]


def pairs_of(ratios: list[float]) -> list[oc.Pair]:
    return [oc.Pair(i, oc.pair_order(i)[0], r * 100_000, 100_000.0) for i, r in enumerate(ratios, start=1)]


def test_the_order_flips_every_pair():
    assert [oc.pair_order(i) for i in range(1, 5)] == [(oc.HARNESS, oc.BY_HAND), (oc.BY_HAND, oc.HARNESS)] * 2


def test_five_pairs_give_their_range_as_the_interval_of_the_median():
    # 5 draws: the median is the lowest value with probability 5.8% (> 2.5%), so the interval is the range
    assert oc.median_interval(HOST) == (0.725, 0.971)
    assert oc.median_interval(DOCKER) == (0.958, 1.009)


def test_more_pairs_give_the_exact_bootstraps_order_statistics():
    # 11 draws: the median is at most the k-th value with P(Bin(11, k/11) >= 6): k=2 0.7%, k=3 5.1%, k=8 94.9%,
    # k=9 99.3%: the 2.5% and 97.5% points are the 3rd and 9th ratios
    ratios = [0.95 + i / 200 for i in range(11)]   # 0.950 .. 1.000, median 0.975
    low, high = oc.median_interval(ratios)
    assert (low, high) == pytest.approx((ratios[2], ratios[8]))
    assert oc.median_interval(ratios) == (low, high)   # seeded: the same ratios give the same interval


def test_identical_ratios_have_no_width_and_two_pairs_no_interval():
    assert oc.median_interval([0.99] * 6) == (0.99, 0.99)
    assert oc.median_interval([0.99, 1.01]) is None


def test_the_summary_line():
    assert oc.Summary.of("host", "wrk", pairs_of(HOST)).line() == \
        "host wrk: harness/by-hand 0.957 [0.725, 0.971] over 5 pairs"
    assert oc.Summary.of("docker", "oha", pairs_of(DOCKER)).line() == \
        "docker oha: harness/by-hand 0.994 [0.958, 1.009] over 5 pairs"


def test_a_failed_side_leaves_its_pair_out_and_is_counted():
    pairs = [*pairs_of([0.98, 0.99, 1.0]), oc.Pair(4, oc.BY_HAND, None, 100_000.0, errors=["harness: failed: x"])]
    assert pairs[3].ratio is None
    summary = oc.Summary.of("host", "wrk", pairs)
    assert (summary.median, summary.failed) == (0.99, 1)
    assert summary.line() == "host wrk: harness/by-hand 0.990 [0.980, 1.000] over 3 pairs (1 failed)"
    assert oc.Summary.of("host", "wrk", pairs_of([0.98])).line() == \
        "host wrk: harness/by-hand 0.980 over 1 pair (no interval below 3)"
    assert oc.Summary.of("host", "wrk", pairs[3:]).line() == \
        "host wrk: harness/by-hand not measured: every pair failed (1 failed)"


def test_by_hand_on_the_host_is_the_command_pinned_to_the_tools_cpus():
    runtime = SimpleNamespace(name="host", split=CpuSplit((0, 1, 2, 3), target=(0, 1), tool=(2, 3)))
    assert oc.by_hand_prefix(runtime, Path("/r")) == ["taskset", "-c", "2-3"]


class PrintsItsRate:
    """A tool whose command prints a rate and whose parser reads it back: the by-hand side without load."""

    def command(self, spec: RunSpec) -> list[str]:
        return [sys.executable, "-c", f"print({spec.vus} * 1000)"]

    def parse(self, output: ToolOutput) -> Metrics:
        return Metrics(rps=float(output.stdout))


def test_by_hand_runs_the_adapters_command_and_reads_it_with_the_adapters_parser(tmp_path):
    spec = RunSpec(url="http://198.18.0.2/style.css", vus=20, duration_s=1, out_dir=tmp_path / "run", cpus=1)
    hand = oc.run_by_hand(["env"], PrintsItsRate(), spec)
    assert hand.rps == 20_000 and hand.error is None
    assert hand.argv[:2] == ["env", sys.executable]
    assert (spec.out_dir / "stdout.txt").read_text() == "20000\n"


def test_by_hand_says_why_when_the_parser_finds_nothing(tmp_path):
    spec = RunSpec(url="http://198.18.0.2/style.css", vus=20, duration_s=1, out_dir=tmp_path / "run", cpus=1)
    hand = oc.run_by_hand(["false"], PrintsItsRate(), spec)
    assert hand.rps is None and hand.error.startswith("by hand: exit 1, ValueError")


def test_by_hand_says_so_when_the_command_is_missing(tmp_path):
    spec = RunSpec(url="http://198.18.0.2/style.css", vus=20, duration_s=1, out_dir=tmp_path / "run", cpus=1)
    hand = oc.run_by_hand(["/nonexistent/taskset"], PrintsItsRate(), spec)
    assert hand.rps is None and "No such file" in hand.error


def test_an_unknown_tool_is_refused_before_any_folder_is_made(tmp_path, capsys):
    assert oc.main(["--tools", "no-such-tool", "--results-root", str(tmp_path)]) == 2
    assert "error:" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["--pairs", "0"], ["--duration", "0"], ["--runtime", "vm"]])
def test_bad_arguments_are_refused(argv):
    with pytest.raises(SystemExit):
        oc.parse_args(argv)
