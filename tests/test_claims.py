"""The study's claims (analysis/claims.yaml, analysis/claims.py; issue 48): the data file checked against the code,
each rule on real rows and on rows whose verdict is known."""
import inspect
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from analysis import claims, load_results
from analysis.charts import with_limits
from conftest import REPO
from harness.scenarios import load_file
from harness.tools.registry import discover

QUICK3 = sorted((REPO / "tests" / "fixtures" / "scorecard").glob("*"))  # make bench-quick REPEAT=3, both runtimes
SHOOTOUT = {s.id for s in load_file(REPO / "scenarios" / "shootout.yaml")}


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9-]*):", (REPO / "Makefile").read_text(), re.M))


def problems(spec: dict) -> list[str]:
    """What in a claims file does not match the code: a rule, a parameter, a tool, a scenario or a command."""
    found, tools, targets = [], set(discover()), make_targets()
    found += [f"study tool {t}: no adapter" for t in spec["study_tools"] if t not in tools]
    for claim in spec["claims"]:
        where = claim.get("id", "?")
        missing = {"id", "claim", "where", "rule", "params", "command"} - set(claim)
        if missing:
            found.append(f"{where}: no {', '.join(sorted(missing))}")
            continue
        rule = claims.RULES.get(claim["rule"])
        if rule is None:
            found.append(f"{where}: no rule {claim['rule']}")
            continue
        try:
            inspect.signature(rule).bind(None, None, None, **claim["params"])
        except TypeError as exc:
            found.append(f"{where}: params {exc}")
        params = claim["params"]
        named = [params[k] for k in ("tool",) if k in params] + list(params.get("tools", [])) + list(params.get("except", []))
        found += [f"{where}: tool {t}: no adapter" for t in named if t not in tools]
        scenarios = [params[k] for k in ("scenario", "lower", "higher") if k in params]
        found += [f"{where}: scenario {s} not in scenarios/shootout.yaml" for s in scenarios if s not in SHOOTOUT]
        command = claim["command"].split()
        if command[:1] != ["make"] or command[1] not in targets:
            found.append(f"{where}: command {claim['command']!r} is no Make target")
    return found


def test_the_claims_file_matches_the_code():
    spec = claims.load_claims()
    assert problems(spec) == []
    assert len({c["id"] for c in spec["claims"]}) == len(spec["claims"]) >= 12


@pytest.mark.parametrize("plant, expected", [
    (lambda c: c.update(rule="rnak"), "no rule rnak"),
    (lambda c: c["params"].update(tools=["wrkk"]), "tool wrkk: no adapter"),
    (lambda c: c["params"].update(scenario="vu30-rtt0.1"), "scenario vu30-rtt0.1 not in"),
    (lambda c: c["params"].update(colour="red"), "params"),
    (lambda c: c.update(command="make bench-everything"), "is no Make target"),
])
def test_a_planted_mismatch_is_caught(plant, expected):
    spec = yaml.safe_load(claims.CLAIMS_FILE.read_text())
    plant(spec["claims"][0])
    assert any(expected in p for p in problems(spec)), problems(spec)


@pytest.mark.skipif(not QUICK3, reason="tests/fixtures/scorecard not recorded")
def test_the_quick_runs_judge_what_they_hold_and_name_the_command_for_the_rest():
    """make bench-quick REPEAT=3 in both runtimes: 20 VUs at 0.1 ms and 100 VUs at 50 ms, nothing at 10 ms."""
    checked = {c.id: c for c in claims.check(with_limits(load_results(*QUICK3)))}
    assert set(checked) == {c["id"] for c in claims.load_claims()["claims"]}
    assert checked["wrk-most-rps"].verdict == claims.HOLDS and checked["wrk-most-rps"].figure.startswith("1. wrk ")
    assert checked["artillery-locust-lowest"].verdict == claims.HOLDS
    for unmeasured in ("ceiling-at-10ms", "wrk-adds-little", "siege-breaks-at-1000", "memory-per-vu"):
        assert checked[unmeasured].verdict == claims.NOT_MEASURED, checked[unmeasured]
        assert checked[unmeasured].why.startswith("run make ")
    # both runtimes: Docker's cost is measured, with each tool's ratio
    assert checked["docker-costs-40pct"].verdict in (claims.HOLDS, claims.DIFFERS)
    assert "wrk 0." in checked["docker-costs-40pct"].figure
    # Locust here adds little at 100 VUs: differs, and the report says what the harness knows
    assert checked["locust-adds-latency"].verdict == claims.DIFFERS and "cores" in checked["locust-adds-latency"].why


def rows(*specs: tuple[str, str, float, float, dict]) -> pd.DataFrame:
    """Ok closed-model rows: (tool, scenario, vus, rtt, other columns)."""
    return pd.DataFrame([{"tool": tool, "label": tool, "scenario": scenario, "vus": vus, "rtt_target_ms": rtt,
                          "rtt_measured_ms": rtt, "status": "ok", "runtime": "host", "target": "nginx",
                          "keepalive": "True", "tls": "False", "protocol": "http/1.1", "backend_delay_ms": None,
                          "rate_target_rps": float("nan"), "stall_ms": float("nan"), "limited_by": "tool",
                          "contended": False, **other}
                         for tool, scenario, vus, rtt, other in specs])


def judge(df: pd.DataFrame, rule: str, **params) -> claims.Verdict:
    from analysis.load import closed_model
    return claims.RULES[rule](df, closed_model(df[df["status"] == "ok"]), ["wrk", "ab", "siege", "locust", "jmeter"], **params)


def test_the_ceiling_rule_at_10ms():
    df = rows(("wrk", "s", 20, 10, {"rps": 1950}), ("ab", "s", 20, 10, {"rps": 1900}),
              ("siege", "s", 20, 10, {"rps": 990}))
    assert judge(df, "ceiling", scenario="s", at_least=0.8, except_at_most=0.6, **{"except": ["siege"]}).verdict == claims.HOLDS
    df.loc[df["tool"] == "siege", "rps"] = 1900
    found = judge(df, "ceiling", scenario="s", at_least=0.8, except_at_most=0.6, **{"except": ["siege"]})
    assert found.verdict == claims.DIFFERS and found.figure.startswith("siege 95%")


def test_added_latency_uses_the_mean_and_the_measured_rtt():
    df = rows(("locust", "s", 100, 50, {"lat_mean_ms": 180.0, "lat_p50_ms": 60.0, "rtt_measured_ms": 50.5}))
    found = judge(df, "added", scenario="s", tool="locust", at_least_ms=50)
    assert found.verdict == claims.HOLDS and found.figure.startswith("+130 ms over the RTT (mean 180")
    assert judge(df, "added", scenario="s", tool="locust", at_most_ms=1).verdict == claims.DIFFERS


def test_siege_twice_the_rtt_and_breaking_above():
    df = rows(("siege", "a", 500, 50, {"lat_mean_ms": 100.0, "rps": 9000}),
              ("siege", "b", 1000, 50, {"lat_mean_ms": 300.0, "rps": 7000}))
    assert judge(df, "rtt_multiple", scenario="a", tool="siege", within=[1.7, 2.3]).figure.startswith("2.00 x")
    assert judge(df, "breaks_above", tool="siege", lower="a", higher="b").verdict == claims.HOLDS
    df.loc[df["scenario"] == "b", "rps"] = 12000
    assert judge(df, "breaks_above", tool="siege", lower="a", higher="b").verdict == claims.DIFFERS
    df.loc[df["scenario"] == "b", "status"] = "failed"
    assert judge(df, "breaks_above", tool="siege", lower="a", higher="b").verdict == claims.HOLDS


def test_ranks_count_from_the_end_and_a_missing_tool_is_not_measured():
    df = rows(*[(t, "s", 20, 0.1, {"rps": r}) for t, r in (("wrk", 100), ("ab", 90), ("siege", 40), ("locust", 10))])
    assert judge(df, "rank", scenario="s", metric="rps", order="high", tools=["locust"], ranks=[-1, -1]).verdict == claims.HOLDS
    assert judge(df, "rank", scenario="s", metric="rps", order="high", tools=["ab"], ranks=[1, 1]).verdict == claims.DIFFERS
    missing = judge(df[df["tool"] != "ab"], "rank", scenario="s", metric="rps", order="high", tools=["ab"], ranks=[2, 4])
    assert missing.verdict == claims.NOT_MEASURED
    assert missing.figure == "no ok run of ab in s (these results hold locust, siege, wrk there)"


def test_a_scenario_run_only_by_tools_outside_the_study_names_the_study_tool_missing():
    """A report of one oha run of vu20-rtt0.1 said "no ok run of vu20-rtt0.1 in these results": the rule had kept
    the study's tools only, and the message read the emptied frame as a scenario never run."""
    df = rows(("oha", "vu20-rtt0.1", 20, 0.1, {"rps": 50000.0, "lat_mean_ms": 0.4}))
    for rule, params in (("rank", dict(metric="rps", order="high", tools=["wrk"], ranks=[1, 1])),
                         ("ceiling", dict(at_least=0.5, except_at_most=0.1, **{"except": ["locust"]})),
                         ("added", dict(tool="wrk", at_most_ms=1.0))):
        found = judge(df, rule, scenario="vu20-rtt0.1", **params)
        assert found.verdict == claims.NOT_MEASURED
        assert found.figure.startswith("no ok run of ") and "(these results hold oha there)" in found.figure, found
    empty = judge(df, "rank", scenario="vu50-rtt50", metric="rps", order="high", tools=["wrk"], ranks=[1, 1])
    assert empty.figure == "no ok run of vu50-rtt50 in these results"


def test_the_runtime_ratio_needs_both_runtimes():
    df = rows(("wrk", "s", 20, 0.1, {"rps": 100.0}), ("wrk", "s", 20, 0.1, {"rps": 60.0, "runtime": "docker"}))
    assert judge(df, "runtime_ratio", scenario="s", within=[0.5, 0.7]).verdict == claims.HOLDS
    assert judge(df[df["runtime"] == "host"], "runtime_ratio", scenario="s", within=[0.5, 0.7]).verdict == claims.NOT_MEASURED


def test_vegetas_connections_against_its_vus():
    df = rows(("vegeta", "s", 20, 0.1, {"server_connections": 20.0}))
    found = judge(df, "constant_vus", tool="vegeta", over=1.1)
    assert found.verdict == claims.DIFFERS and "20 for 20 VUs" in found.figure
    df["server_connections"] = 57.0
    assert judge(df, "constant_vus", tool="vegeta", over=1.1).verdict == claims.HOLDS


def test_why_a_claim_differs_names_the_saturated_target_and_the_contended_runs():
    df = rows(("wrk", "s", 20, 0.1, {"limited_by": "target", "contended": True}), ("ab", "s", 20, 0.1, {}))
    df["env_cores"] = 2
    said = claims.why_here(df, df)
    assert "1 of 2 runs: Nginx's CPUs saturated" in said and "1 of 2 runs contended" in said and "2 cores" in said


def test_the_steepest_memory_per_vu_is_judged_by_intervals():
    levels = (50, 100, 200, 500, 1000)
    specs = [("jmeter", f"vu{v}", v, 50, {"mem_avg_mb": 100 + v * 0.3 + n}) for v, n in zip(levels, (20, -30, 40, -20, 10))]
    specs += [("siege", f"vu{v}", v, 50, {"mem_avg_mb": 5 + v * 0.32}) for v in levels]          # steeper, tighter
    specs += [("wrk", f"vu{v}", v, 50, {"mem_avg_mb": 5 + v * 0.01 + n}) for v, n in zip(levels, (0.1, -0.1, 0, 0.1, 0))]
    df = rows(*specs)
    found = judge(df, "mem_per_vu", tool="jmeter")
    assert found.verdict == claims.HOLDS and found.figure.startswith("jmeter tied at the top with siege")
    df.loc[df["tool"] == "siege", "mem_avg_mb"] = [5 + v * 0.6 for v in levels]                   # wholly above
    assert judge(df, "mem_per_vu", tool="jmeter").verdict == claims.DIFFERS
    assert judge(df[df["vus"] <= 100], "mem_per_vu", tool="jmeter").verdict == claims.NOT_MEASURED
