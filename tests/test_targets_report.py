"""The report's target section on real results (issue 23): `make bench-all SCENARIOS=scenarios/targets.yaml
DURATION=3` on this machine, host (every tool) and Docker, kept as tests/fixtures/targets (runs.csv and
environment.json). Each figure is recomputed here from runs.csv with the csv module, apart from
analysis/targets.py's pandas."""
import csv
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from statistics import median

import pytest

from analysis.load import load_results
from analysis.report import build
from analysis.targets import cost_table, proxy_table, slow_backend_table

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "targets").glob("*-*"))
pytestmark = pytest.mark.skipif(not FIXTURES, reason="tests/fixtures/targets not recorded yet")


def rows() -> list[dict]:
    return [r for folder in FIXTURES for r in csv.DictReader((folder / "runs.csv").open())]


def ok_rps(runtime: str, tool: str, scenario: str) -> float | None:
    found = [float(r["rps"]) for r in rows() if (r["runtime"], r["tool"], r["scenario"], r["status"])
             == (runtime, tool, scenario, "ok")]
    return median(found) if found else None


def test_keep_alive_off_and_tls_are_each_tools_change_against_the_plain_setup():
    table = cost_table(load_results(*FIXTURES))
    asked = {(r["runtime"], r["tool"], r["scenario"]) for r in rows()
             if r["scenario"] in ("ka-off-vu20-rtt0.1", "tls-vu20-rtt0.1", "tls-vu100-rtt50")}
    assert {(r["runtime"], r["tool"], r["scenario"]) for r in table} == asked
    for row in table:
        now = ok_rps(row["runtime"], row["tool"], row["scenario"])
        if now is None:                                    # unsupported (or failed) says why
            assert row["result"].split(":")[0] in ("unsupported", "failed", "timeout") and len(row["result"]) > 20
            continue
        plain = ok_rps(row["runtime"], row["tool"], "plain-" + row["scenario"].split("-", 1)[1].replace("off-", ""))
        assert row["RPS change"] == f"{now / plain - 1:+.0%}", row
        if row["change"] == "keep-alive off":             # one connection per request, as Nginx counted them
            served = next(r for r in rows() if (r["runtime"], r["tool"], r["scenario"], r["status"])
                          == (row["runtime"], row["tool"], row["scenario"], "ok"))
            per_connection = int(served["server_requests"]) / int(served["server_connections"])
            assert 0.95 <= per_connection <= 1.05 and row["requests per connection"].startswith(f"{per_connection:.2f}")


def test_the_proxy_table_compares_each_proxy_with_nginx_directly_for_the_reference_tool():
    table = proxy_table(load_results(*FIXTURES))
    for runtime in {r["runtime"] for r in table}:
        mine = [r for r in table if r["runtime"] == runtime]
        tools = {r["tool"] for r in rows() if r["runtime"] == runtime}
        reference = max(tools, key=lambda t: max(ok_rps(runtime, t, f"direct-vu{v}") or 0 for v in (1, 16, 32, 64)))
        assert {r["tool"] for r in mine} == {reference}
        assert {(r["target"], r["VUs"]) for r in mine} == {(t, v) for t in ("nginx (direct)", "nginx-proxy", "haproxy", "caddy")
                                                          for v in (1, 16, 32, 64)}
        for row in (r for r in mine if r["target"] != "nginx (direct)"):
            source = next(r for r in rows() if (r["runtime"], r["tool"], r["scenario"])
                          == (runtime, reference, f"{row['target']}-vu{row['VUs']}"))
            rps, proxy_cpu = float(source["rps"]), float(source["proxy_cpu_pct"])
            assert row["RPS per proxy core"] == f"{rps / (proxy_cpu / 100):,.0f}", row
            assert float(row["proxy CPU per 1k RPS"]) == pytest.approx(proxy_cpu / 100 / (rps / 1000), abs=0.0006)
            direct_rps = ok_rps(runtime, reference, f"direct-vu{row['VUs']}")
            assert row["vs direct"] == f"{rps / direct_rps - 1:+.0%}", row


def test_held_means_every_connection_open_at_the_rate_the_delay_allows():
    table = slow_backend_table(load_results(*FIXTURES))
    assert {(r["runtime"], r["tool"]) for r in table} == {(r["runtime"], r["tool"]) for r in rows()
                                                         if r["scenario"] == "delay0-1000-vu1000"}
    for row in table:
        source = next(r for r in rows() if (r["runtime"], r["tool"], r["scenario"])
                      == (row["runtime"], row["tool"], "delay0-1000-vu1000"))
        if source["status"] != "ok":
            assert row["verdict"].startswith(source["status"])
            continue
        connections, errors = int(source["server_connections"]), int(float(source["errors"] or 0))
        kept = errors == 0 and 950 <= connections <= 1000 / 0.95          # every VU's connection, held
        held = kept and float(source["rps"]) >= 0.9 * 1000 / 0.5001
        assert row["verdict"].startswith("held 1,000 connections") == kept, row
        assert (row["verdict"] == "held 1,000 connections") == held, row


def some_tools(tools: set[str], into: Path, scenarios: Callable[[str], bool] = lambda scenario: True) -> list[Path]:
    """FIXTURES with only ``tools``' rows (and ``scenarios``'): the report of all 19 tools took 63 s of the unit
    tier, of three 30 s (its charts' panels, one per scenario, are most of it); its tables and scorecard are the
    same code."""
    copies = []
    for folder in FIXTURES:
        (into / folder.name).mkdir(parents=True)
        shutil.copy(folder / "environment.json", into / folder.name)
        with (folder / "runs.csv").open(newline="") as source, (into / folder.name / "runs.csv").open("w", newline="") as kept:
            reader = csv.DictReader(source)
            writer = csv.DictWriter(kept, reader.fieldnames)
            writer.writeheader()
            writer.writerows(r for r in reader if r["tool"] in tools and scenarios(r["scenario"]))
        copies.append(into / folder.name)
    return copies


def one_proxy_level(scenario: str) -> bool:
    """Every setup, the proxies at one VU level: 10 scenarios of 22, the chart panels halved (the proxy table's
    arithmetic over the VU levels is test_the_proxy_table_compares_each_proxy_...'s)."""
    return not re.search(r"-vu(1|32|64)$", scenario)


def test_the_report_shows_the_three_tables_and_the_scorecard_columns(tmp_path):
    folders = some_tools({"wrk", "h2load", "ab"}, tmp_path / "results", one_proxy_level)
    assert len(load_results(*folders)["scenario"].unique()) == 10
    index = build(folders, tmp_path / "report")
    html = index.read_text()
    for table in ("targets-cost-table", "targets-proxy-table", "targets-slow-table"):
        assert f'id="{table}"' in html
    # the report's scorecard.csv (scorecard.write_csv: each cell's text and source, the sentence)
    card = {r["tool"]: r for r in csv.DictReader((index.parent / "scorecard.csv").open(newline=""))}
    assert set(card) == set(load_results(*folders)["label"])
    assert {label.split()[0] for label in card} == {"wrk", "h2load", "ab"}
    h2load = next(r for label, r in card.items() if label.startswith("h2load"))
    assert h2load["keepalive_off"] == "no" and "h2load 1.52.0 has no option" in h2load["keepalive_off_source"]
    wrk = next(r for label, r in card.items() if label.startswith("wrk"))
    assert wrk["keepalive_off"].startswith("yes: RPS ") and "keep-alive off costs it" in wrk["sentence"]
