"""`compare A B --fail-on slower` (issue 51): a gate CI can use, on real results (make bench-quick REPEAT=3 in both
runtimes: Docker measurably slower than the host for most tools at 20 VUs and 0.1 ms)."""
import pytest

from analysis import load_results
from analysis.change import compare
from analysis.compare import GATE_FAILED, main, slower_lines
from conftest import REPO

QUICK3 = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*"))
pytestmark = pytest.mark.skipif(not QUICK3, reason="tests/fixtures/scorecard not recorded")


def test_b_measurably_slower_fails_the_gate_and_says_where(tmp_path, capsys):
    host, docker = (next(f for f in QUICK3 if f.name.endswith(s)) for s in ("-host", "-docker"))
    assert main([str(host), str(docker), "--out", str(tmp_path), "--fail-on", "slower"]) == GATE_FAILED
    said = capsys.readouterr().err
    assert said.startswith("compare: B is measurably slower than A (") and "wrk vu20-rtt0.1 rps -" in said
    assert (tmp_path / "compare.csv").is_file()       # the comparison is written either way


def test_without_a_slower_verdict_the_gate_passes_and_without_the_option_nothing_gates():
    host, docker = (load_results(next(f for f in QUICK3 if f.name.endswith(s))) for s in ("-host", "-docker"))
    assert slower_lines(compare(docker, host)) == []          # the host against Docker: nothing slower
    slower = slower_lines(compare(host, docker))
    assert len(slower) > 10 and all(" rps -" in s or " lat_p" in s for s in slower)
