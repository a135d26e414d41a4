"""The report's capacity section (analysis/capacity.py) on real results: `make bench-capacity
TOOLS=oha,k6,vegeta,wrk` (host) and `make bench-all SCENARIOS=scenarios/fidelity.yaml CAPTURE=1` (host),
kept in tests/fixtures/capacity."""
import json

from analysis.capacity import entries, latency_vs_rate
from analysis.report import build, load_results, with_limits
from conftest import REPO
from test_report import parse

FOLDERS = sorted((REPO / "tests" / "fixtures" / "capacity").iterdir())
SEARCH, FIDELITY = FOLDERS     # by their timestamps: the search ran first


def test_the_capacity_table_holds_each_search_and_the_reference(tmp_path):
    page = parse(build([SEARCH], tmp_path / "report"))
    header, *rows = page.tables["capacity-table"]
    by_tool = {r[0]: dict(zip(header, r)) for r in rows}
    stored = {e["tool"]: e for e in json.loads((SEARCH / "capacity.json").read_text())}
    assert set(by_tool) == set(stored) == {"oha", "k6", "vegeta", "wrk"}
    for tool in ("oha", "k6", "vegeta"):
        assert by_tool[tool]["max_rps"] == f"{stored[tool]['max_sustained_rps']:,}"
        assert by_tool[tool]["steps"] == str(stored[tool]["steps"]) and by_tool[tool]["limited_by"].startswith("slo")
        assert float(by_tool[tool]["tool_cores_per_1k"]) > 0
    assert by_tool["wrk"]["kind"] == "closed-loop reference"
    assert (tmp_path / "report" / "latency_vs_rate.png").is_file()
    # the steps are rates, not scenarios: no summary, scorecard or per-scenario chart is made of them
    assert "summary" not in page.tables and "scorecard" not in page.tables
    assert not (tmp_path / "report" / "rps.png").exists()


def test_the_fidelity_table_has_every_captured_rate_run(tmp_path):
    page = parse(build([FIDELITY], tmp_path / "report"))
    header, *rows = page.tables["fidelity"]
    assert {(r[0], r[1]) for r in rows} >= {("oha", "1,000"), ("oha", "5,000"), ("oha", "20,000"),
                                           ("vegeta", "20,000"), ("jmeter", "1,000")}
    verdicts = {(r[0], r[1]): r[header.index("verdict")] for r in rows}
    assert "poisson" in verdicts[("jmeter", "1,000")]
    assert (tmp_path / "report" / "fidelity.png").is_file()
    # artillery timed out at 5k and 20k: listed under the failed runs, not in the fidelity table
    assert ("artillery", "5,000") not in {(r[0], r[1]) for r in rows}
    assert any(r[0] == "timeout" and r[2] == "artillery" for r in page.tables["failed"][1:])


def test_the_latency_vs_rate_axes_are_labelled_in_plain_numbers():
    """A search spans about a decade: matplotlib's default labelled its ticks 6x10^2 and 4x10^-1."""
    fig = latency_vs_rate(with_limits(load_results(SEARCH)), entries([SEARCH]))
    fig.canvas.draw()
    labels = [t.get_text() for ax in fig.axes if ax.get_visible() for axis in (ax.xaxis, ax.yaxis)
              for t in axis.get_majorticklabels() + axis.get_minorticklabels() if t.get_text()]
    assert len(labels) > 10 and all(float(label) > 0 for label in labels), labels
