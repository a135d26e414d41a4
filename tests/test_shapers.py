"""analysis/shapers.py on two real folders from the netem VM (tests/fixtures/shapers: wrk and ab at
vu20-rtt10 and vu100-rtt50, runs.csv as written, meta.json trimmed to its shaping record)."""
import csv
import json
import shutil

from analysis.shapers import markdown, side_by_side
from conftest import FIXTURES

SHAPERS = FIXTURES / "shapers"


def raw(side: str) -> dict[tuple[str, str], dict]:
    return {(r["scenario"], r["tool"]): r for r in csv.DictReader((SHAPERS / side / "runs.csv").open())}


def last_connect(side: str, run_dir: str) -> float:
    return json.loads((SHAPERS / side / run_dir / "meta.json").read_text())["shaping"]["probes"][-1]["connect_ms"]


def test_each_figure_is_netem_then_toxiproxy_from_the_runs_own_files():
    table, netem, toxiproxy = side_by_side(SHAPERS / "netem", SHAPERS / "toxiproxy"), raw("netem"), raw("toxiproxy")
    assert set(table.index) == set(netem) == set(toxiproxy)
    for key, row in table.iterrows():
        p50 = [float(side[key]["lat_p50_ms"]) for side in (netem, toxiproxy)]
        assert [float(x) for x in row["p50 ms"].split(" / ")] == [float(f"{v:.1f}") if v < 100 else round(v) for v in p50]
        connects = [last_connect(s, d[key]["run_dir"]) for s, d in (("netem", netem), ("toxiproxy", toxiproxy))]
        assert row["handshake ms"] == " / ".join(f"{c:.1f}" for c in connects)
        assert row["limited by"] == " / ".join(side[key]["limited_by"].split(" (")[0] for side in (netem, toxiproxy))
    # netem delays the handshake by the RTT; Toxiproxy accepts it itself
    for (scenario, _), row in table.iterrows():
        netem_ms, toxiproxy_ms = (float(x) for x in row["handshake ms"].split(" / "))
        assert netem_ms > 0.8 * float(scenario.split("rtt")[1]) > toxiproxy_ms


def test_a_run_failed_or_missing_on_one_side_is_left_out(tmp_path):
    for side in ("netem", "toxiproxy"):
        shutil.copytree(SHAPERS / side, tmp_path / side)
    rows = list(csv.DictReader((tmp_path / "toxiproxy" / "runs.csv").open()))
    rows[0]["status"], rows[0]["error"] = "failed", "exit status 1"
    with (tmp_path / "toxiproxy" / "runs.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[:-1])                               # and the last run never ran
    table = side_by_side(tmp_path / "netem", tmp_path / "toxiproxy")
    assert set(table.index) == {(r["scenario"], r["tool"]) for r in rows[1:-1]}
    assert markdown(table).startswith("figures: netem / Toxiproxy")
