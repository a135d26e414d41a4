"""Several generators (harness/row/merge.py): the VUs split, and one row merged from the parts of a
real two-generator wrk run (tests/fixtures/multigen/): counts summed, percentiles over the union."""
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from harness.row.merge import merged_figures
from harness.runtimes.generator import ProcessTable
from harness.store.figures import Figures
from harness.runtimes.together import split_evenly
from harness.tools.output import LatencyHistogram, RunSpec, ToolOutput
from harness.tools.registry import discover

PARTS = [FIXTURES / "multigen" / f"wrk-generator-{i}.stdout" for i in (1, 2)]


@pytest.mark.parametrize("vus, parts, expected", [(20, 2, [10, 10]), (20, 3, [7, 7, 6]), (1000, 4, [250] * 4),
                                                  (3, 2, [2, 1])])
def test_vus_are_split_as_evenly_as_whole_numbers_allow(vus, parts, expected):
    assert split_evenly(vus, parts) == expected and sum(split_evenly(vus, parts)) == vus


def wrk_part(path: Path) -> tuple[Figures, LatencyHistogram]:
    wrk = discover()["wrk"]
    output = ToolOutput(RunSpec(url="http://198.18.2.4/style.css", vus=10, duration_s=3, out_dir=path.parent, cpus=2),
                        path.read_text(), "", 0)
    return wrk.parse(output), wrk.latency_histogram(output)


def expand(histogram: LatencyHistogram) -> np.ndarray:
    return np.repeat(np.array(list(histogram.counts)), list(histogram.counts.values()))


def test_two_wrk_parts_merge_into_the_union_of_their_requests():
    (one, first), (two, second) = wrk_part(PARTS[0]), wrk_part(PARTS[1])
    merged, how = merged_figures([one, two], [first, second])
    assert merged.requests == one.requests + two.requests == 77421
    assert merged.rps == pytest.approx(one.rps + two.rps)
    every = np.concatenate([expand(first), expand(second)])
    assert every.size == merged.requests           # the dumps were complete: every request is in them
    for p in (50, 75, 90, 95, 99):
        assert getattr(merged, f"lat_p{p}_ms") == pytest.approx(np.percentile(every, p, method="inverted_cdf"))
    assert merged.lat_mean_ms == pytest.approx(every.mean())
    assert merged.lat_min_ms == min(one.lat_min_ms, two.lat_min_ms)
    assert merged.lat_max_ms == max(one.lat_max_ms, two.lat_max_ms)
    # The union's p99 is not the average of the parts' (which is what must never be reported).
    assert merged.lat_p99_ms != pytest.approx((one.lat_p99_ms + two.lat_p99_ms) / 2)
    assert "merged HdrHistogram logs" in how


def test_without_histograms_only_exact_figures_are_merged():
    (one, _), (two, _) = wrk_part(PARTS[0]), wrk_part(PARTS[1])
    merged, how = merged_figures([one, two], [None, None])
    assert merged.requests == 77421 and merged.lat_p50_ms is None and merged.lat_p99_ms is None
    assert merged.lat_mean_ms == pytest.approx((one.lat_mean_ms * one.requests + two.lat_mean_ms * two.requests)
                                               / merged.requests)
    assert "percentiles stay empty" in how


def test_a_part_without_a_count_leaves_the_merged_count_empty():
    merged, _ = merged_figures([Figures(requests=10, rps=5.0), Figures(requests=None, rps=4.0)], [None, None])
    assert merged.requests is None and merged.rps == 9.0


def table(rows: dict[int, tuple[int, int, str]]) -> ProcessTable:
    processes = ProcessTable(host=None)
    processes._table = rows
    return processes


def test_the_remote_process_table_gives_the_tools_tree_and_its_named_part():
    processes = table({1: (0, 10, "sshd"), 100: (1, 1000, "sh"), 101: (100, 2048, "java"), 102: (101, 10, "jcmd"),
                       200: (1, 500, "other")})
    assert processes.tree(100) == {100, 101, 102}
    assert processes.tree(100, "java") == {101, 102}     # the wrapper shell is not the tool
    assert processes.rss_mb({101, 102}) == pytest.approx(2058 / 1024)
    assert processes.rss_mb({999}) is None
