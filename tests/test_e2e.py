"""End to end through the CLI users call: real nginx, real wrk and ab. What a plain run of wrk and ab proves
(rows, raw files, the RTT, the shaper, in both runtimes) is asserted on the as-typed runs
(tests/test_as_typed.py); here what needs options of its own (--shaper netem refused, --repeat)."""
import csv

import pytest

from conftest import harness, require_root_tools
from harness.network.shaping import netem_available

pytestmark = pytest.mark.e2e
@pytest.mark.tools("wrk")
def test_forcing_netem_where_the_kernel_lacks_it_is_one_clear_line(tmp_path):
    require_root_tools("ip", "tc", "nginx")
    if netem_available()[0]:
        pytest.skip("this kernel has sch_netem: nothing to refuse")
    result = harness("run", "--runtime", "host", "--tools", "wrk", "--scenarios", "scenarios/shootout.yaml:vu20-rtt10",
                     "--shaper", "netem", "--duration", "1", "--results-root", str(tmp_path))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "lacks sch_netem" in line and "--shaper toxiproxy" in line
    assert not any(tmp_path.iterdir())


@pytest.mark.tools("wrk", "ab")
def test_repeats_are_interleaved_across_tools(tmp_path):
    require_root_tools("ip", "nginx", "wrk", "ab")
    result = harness("run", "--runtime", "host", "--tools", "wrk,ab", "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1",
                     "--duration", "1", "--repeat", "2", "--results-root", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    rows = list(csv.DictReader((tmp_path / "latest" / "runs.csv").open()))
    assert [(r["tool"], r["repeat"]) for r in rows] == [("wrk", "1"), ("ab", "1"), ("wrk", "2"), ("ab", "2")]
    assert len({r["run_dir"] for r in rows}) == 4
