"""The study's claims, checked (issue 48): each finding of the 2017 shootout (analysis/claims.yaml) judged on
this run's rows: holds, differs, or not measured by this suite (and the command that measures it).

A rule is a function of this module named in the YAML; it returns the run's figure and a verdict, or why it
cannot judge. Where a claim differs, ``why_here`` says what the harness knows of the runs it stood on (a
saturated target or shaper, contended CPUs, Docker's network, the cores), so a reader can tell a finding that
does not hold from one this machine cannot show.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from analysis.load import closed_model
from analysis.memory import per_vu_slopes
from analysis.numbers import number
from harness.store.safe import write_text_inside

CLAIMS_FILE = Path(__file__).resolve().parent / "claims.yaml"
OK = "ok"
HOLDS, DIFFERS, NOT_MEASURED = "holds", "differs", "not measured"


@dataclass(frozen=True)
class Verdict:
    verdict: str          # HOLDS, DIFFERS or NOT_MEASURED
    figure: str           # this run's figure, or why there is none
    rule: str             # the exact rule used
    runs: pd.DataFrame | None = None    # the rows it stood on (for why_here)


@dataclass(frozen=True)
class Checked:
    id: str
    claim: str
    where: str
    rule: str
    figure: str
    verdict: str
    why: str              # where it differs: what the harness knows; where not measured: the command
    command: str


def load_claims(path: Path = CLAIMS_FILE) -> dict:
    return yaml.safe_load(path.read_text())


def check(df: pd.DataFrame, path: Path = CLAIMS_FILE) -> list[Checked]:
    """Every claim of ``path`` judged on ``df`` (the report's loaded rows, capacity steps left out)."""
    spec = load_claims(path)
    study = list(spec["study_tools"])
    ok = closed_model(df[df["status"] == OK])
    # the study's figures are bare metal: with both runtimes, every claim but Docker's cost is judged on the host's
    ok = ok[ok["runtime"] == "host"] if ok["runtime"].nunique() > 1 else ok
    checked = []
    for claim in spec["claims"]:
        found = RULES[claim["rule"]](df, ok, study, **claim["params"])
        why = (why_here(found.runs, df, spec.get("study_versions", {})) if found.verdict == DIFFERS else
               f"run {claim['command']}" if found.verdict == NOT_MEASURED else "")
        checked.append(Checked(claim["id"], claim["claim"], claim["where"], found.rule, found.figure, found.verdict,
                               why, claim["command"]))
    return checked


def write_csv(checked: list[Checked], path: Path) -> Path:
    """claims.csv beside the report: every claim with this run's figure and verdict."""
    frame = pd.DataFrame([c.__dict__ for c in checked], columns=[f for f in Checked.__dataclass_fields__])
    write_text_inside(path.parent.parent, path, frame.to_csv(index=False))
    return path


def _present(ok: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The runs of one scenario by tool id (not label: the study's tool, whatever the runtime)."""
    return ok[ok["scenario"] == scenario]


def _missing(scenario: str, tools: list[str], runs: pd.DataFrame, ok: pd.DataFrame) -> str:
    """Why ``runs`` (``ok``'s rows a rule kept) cannot judge: which of ``tools`` has no ok run of ``scenario``,
    and which tools did run it, so a reader sees the scenario was run and what is missing from it."""
    absent = [t for t in tools if t not in set(_present(runs, scenario)["tool"])]
    if not absent:
        return ""
    ran = sorted(set(_present(ok, scenario)["tool"]))
    if not ran:
        return f"no ok run of {scenario} in these results"
    return f"no ok run of {', '.join(absent)} in {scenario} (these results hold {', '.join(ran)} there)"


def rank(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], scenario: str, metric: str, order: str,
         tools: list[str], ranks: list[int]) -> Verdict:
    first, last = ranks
    rule = (f"median {metric} per tool in {scenario}, ranked among the study's tools present "
            f"({'most' if order == 'high' else 'least'} first); {', '.join(tools)} within ranks "
            f"{_rank_text(first)}-{_rank_text(last)}")
    runs = _present(ok, scenario)
    runs = runs[runs["tool"].isin(study) & runs[metric].notna()]
    if missing := _missing(scenario, tools, runs, ok):
        return Verdict(NOT_MEASURED, missing, rule)
    medians = runs.groupby("tool")[metric].median().sort_values(ascending=order != "high")
    if len(medians) < len(tools) + 1:
        return Verdict(NOT_MEASURED, f"only {len(medians)} of the study's tools ran {scenario}", rule)
    position = {tool: i + 1 for i, tool in enumerate(medians.index)}
    n = len(medians)
    low, high = (r if r > 0 else n + 1 + r for r in (first, last))
    holds = all(low <= position[t] <= high for t in tools)
    unit = " MiB" if metric.startswith("mem") else " rps" if metric == "rps" else ""
    figure = "; ".join(f"{position[t]}. {t} {number(medians[t])}{unit}" for t in tools)
    leaders = ", ".join(f"{t} {number(v)}" for t, v in medians.head(3).items())
    return Verdict(HOLDS if holds else DIFFERS, f"{figure} (of {n}; {'top' if order == 'high' else 'least'}: "
                   f"{leaders}; {_runs_per_tool(runs)})", rule, runs)


def _rank_text(r: int) -> str:
    return str(r) if r > 0 else ("last" if r == -1 else f"last{r + 1}")


def _runs_per_tool(runs: pd.DataFrame) -> str:
    n = runs.groupby("tool").size()
    return f"{n.min()} run{'s' if n.min() > 1 else ''} per tool" + ("" if n.min() >= 3 else ": no interval")


def _rtt(runs: pd.DataFrame) -> pd.Series:
    measured = runs["rtt_measured_ms"] if "rtt_measured_ms" in runs else pd.Series(float("nan"), index=runs.index)
    return measured.fillna(runs["rtt_target_ms"])


def ceiling(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], scenario: str, at_least: float,
            except_at_most: float, **named) -> Verdict:
    others_excepted = named["except"]
    rule = (f"rps / (VUs / measured RTT) in {scenario}: every study tool but {', '.join(others_excepted)} at "
            f">= {at_least:.0%}, {', '.join(others_excepted)} at <= {except_at_most:.0%}")
    runs = _present(ok, scenario)
    runs = runs[runs["tool"].isin(study)]
    if missing := _missing(scenario, others_excepted, runs, ok):
        return Verdict(NOT_MEASURED, missing, rule)
    share = (runs["rps"] / (runs["vus"] * 1000 / _rtt(runs))).groupby(runs["tool"]).median()
    rest = share.drop(others_excepted)
    if rest.empty:
        return Verdict(NOT_MEASURED, f"no other study tool ran {scenario}", rule)
    holds = (rest >= at_least).all() and (share[others_excepted] <= except_at_most).all()
    lowest = rest.idxmin()
    figure = (", ".join(f"{t} {share[t]:.0%}" for t in others_excepted) +
              f"; the others {rest.min():.0%} ({lowest}) to {rest.max():.0%} of the ceiling")
    return Verdict(HOLDS if holds else DIFFERS, figure, rule, runs)


def added(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], scenario: str, tool: str,
          at_least_ms: float | None = None, at_most_ms: float | None = None) -> Verdict:
    bound = f">= {at_least_ms:g} ms" if at_least_ms is not None else f"<= {at_most_ms:g} ms"
    rule = f"{tool}'s mean latency (p50 where it reports no mean) minus the measured RTT in {scenario}, median: {bound}"
    found = _tool_latency(ok, scenario, tool)
    if isinstance(found, str):
        return Verdict(NOT_MEASURED, found, rule)
    runs, latency, which = found
    extra = float((latency - _rtt(runs).loc[latency.index]).median())
    holds = extra >= at_least_ms if at_least_ms is not None else extra <= at_most_ms
    return Verdict(HOLDS if holds else DIFFERS, f"{extra:+.3g} ms over the RTT ({which} {number(latency.median())} ms, "
                   f"RTT {number(_rtt(runs).median())} ms)", rule, runs)


def _tool_latency(ok: pd.DataFrame, scenario: str, tool: str) -> tuple[pd.DataFrame, pd.Series, str] | str:
    """One tool's runs of a scenario and their latency (mean, else p50), or why there is none."""
    runs = _present(ok, scenario)
    runs = runs[runs["tool"] == tool]
    if missing := _missing(scenario, [tool], runs, ok):
        return missing
    latency, which = _latency(runs)
    return (runs, latency, which) if len(latency) else f"{tool} reported no latency in {scenario}"


def _latency(runs: pd.DataFrame) -> tuple[pd.Series, str]:
    mean = runs["lat_mean_ms"].dropna() if "lat_mean_ms" in runs else pd.Series(dtype=float)
    return (mean, "mean") if len(mean) else (runs["lat_p50_ms"].dropna(), "p50")


def rtt_multiple(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], scenario: str, tool: str,
                 within: list[float]) -> Verdict:
    low, high = within
    rule = f"{tool}'s mean latency / the measured RTT in {scenario}, median: within {low:g}-{high:g}"
    found = _tool_latency(ok, scenario, tool)
    if isinstance(found, str):
        return Verdict(NOT_MEASURED, found, rule)
    runs, latency, which = found
    multiple = float((latency / _rtt(runs).loc[latency.index]).median())
    return Verdict(HOLDS if low <= multiple <= high else DIFFERS,
                   f"{multiple:.2f} x the RTT ({which} {number(latency.median())} ms)", rule, runs)


def breaks_above(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], tool: str, lower: str,
                 higher: str) -> Verdict:
    rule = f"{tool}'s median rps in {higher} below its rps in {lower}, or a run of {higher} not ok"
    closed = closed_model(df)
    mine = closed[closed["tool"] == tool]
    at_high = mine[mine["scenario"] == higher]
    failed = at_high[at_high["status"] != OK]
    if len(failed):
        return Verdict(HOLDS, f"{len(failed)} of {len(at_high)} runs of {higher} {failed['status'].iloc[0]}", rule)
    if missing := _missing(lower, [tool], ok, ok) or _missing(higher, [tool], ok, ok):
        return Verdict(NOT_MEASURED, missing, rule)
    rps = {s: ok[(ok["scenario"] == s) & (ok["tool"] == tool)]["rps"].median() for s in (lower, higher)}
    return Verdict(HOLDS if rps[higher] < rps[lower] else DIFFERS,
                   f"{number(rps[lower])} rps at {lower}, {number(rps[higher])} at {higher}", rule,
                   ok[ok["tool"] == tool])


def runtime_ratio(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], scenario: str, within: list[float]) -> Verdict:
    low, high = within
    rule = (f"Docker / host median rps per study tool run in both runtimes in {scenario}, median over the tools: "
            f"within {low:g}-{high:g}")
    both = closed_model(df[df["status"] == OK])
    runs = both[(both["scenario"] == scenario) & both["tool"].isin(study)]
    medians = runs.groupby(["tool", "runtime"])["rps"].median().unstack()
    if not {"docker", "host"} <= set(medians.columns):
        return Verdict(NOT_MEASURED, "these results hold one runtime: the claim needs both (host and docker)", rule)
    ratios = (medians["docker"] / medians["host"]).dropna()
    if ratios.empty:
        return Verdict(NOT_MEASURED, f"no study tool ran {scenario} in both runtimes", rule)
    median = float(ratios.median())
    figure = f"{median:.2f} over {len(ratios)} tools ({', '.join(f'{t} {r:.2f}' for t, r in ratios.items())})"
    return Verdict(HOLDS if low <= median <= high else DIFFERS, figure, rule, runs)


def mem_per_vu(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], tool: str) -> Verdict:
    rule = (f"memory per VU (slope of average RSS over three VU levels or more at one RTT) of the study's tools: "
            f"{tool}'s the steepest (no tool's 95% interval wholly above its own)")
    slopes = {label: s for label, s in per_vu_slopes(ok[ok["tool"].isin(study)]).items() if s.kib_per_vu is not None}
    by_tool = {ok.loc[ok["label"] == label, "tool"].iloc[0]: s for label, s in slopes.items()}
    if tool not in by_tool:
        return Verdict(NOT_MEASURED, f"no slope for {tool}: needs three VU levels at one RTT", rule)
    mine = by_tool[tool]
    # apart only where another tool's interval lies wholly above this one's (without intervals: the medians)
    above = [t for t, s in by_tool.items() if t != tool and
             ((s.low if s.low is not None else s.kib_per_vu) > (mine.high if mine.high is not None else mine.kib_per_vu))]
    figure = "; ".join(f"{t} {by_tool[t].short} KiB/VU" for t in sorted(by_tool, key=lambda t: -by_tool[t].kib_per_vu))
    tied = [t for t, s in by_tool.items() if s.kib_per_vu > mine.kib_per_vu and t not in above]
    if tied and not above:
        figure = f"{tool} tied at the top with {', '.join(sorted(tied))} (intervals overlap): " + figure
    return Verdict(DIFFERS if above else HOLDS, figure, rule, ok[ok["tool"].isin(by_tool)])


def constant_vus(df: pd.DataFrame, ok: pd.DataFrame, study: list[str], tool: str, over: float) -> Verdict:
    rule = (f"connections Nginx accepted during {tool}'s closed-model runs / VUs: the claim holds when any run "
            f"opened more than {over:g} x VUs")
    runs = ok[(ok["tool"] == tool) & ok["server_connections"].notna()] if "server_connections" in ok else ok.iloc[:0]
    if runs.empty:
        return Verdict(NOT_MEASURED, f"no ok closed-model run of {tool} with Nginx's connection count", rule)
    share = runs["server_connections"] / runs["vus"]
    worst = runs.loc[share.idxmax()]
    figure = (f"at most {share.max():.2f} connections per VU ({worst['scenario']}: {worst['server_connections']:.0f} "
              f"for {worst['vus']:.0f} VUs)")
    if share.max() > over:
        return Verdict(HOLDS, figure, rule, runs)
    return Verdict(DIFFERS, figure + f"; the harness drives it at a fixed worker count (-rate=0 -max-workers=VUs)",
                   rule, runs)


RULES: dict[str, Callable[..., Verdict]] = {"rank": rank, "ceiling": ceiling, "added": added,
                                            "rtt_multiple": rtt_multiple, "breaks_above": breaks_above,
                                            "runtime_ratio": runtime_ratio, "mem_per_vu": mem_per_vu,
                                            "constant_vus": constant_vus}

# What a limited_by code says about a figure compared with the study's (harness/store/limits.py SIDES).
LIMITS = {"target": "Nginx's CPUs saturated: the target, not the tools, set the pace (the study's server had 4 cores)",
          "tool and target": "both sides' CPUs saturated",
          "shaper": "the shaped path (Toxiproxy: this kernel has no netem) capped the rate",
          "shared CPUs": "tool and target shared every CPU",
          "other processes": "other processes took the CPUs"}


def why_here(runs: pd.DataFrame | None, df: pd.DataFrame, study_versions: dict | None = None) -> str:
    """What the harness knows of the runs a differing claim stood on."""
    if runs is None or runs.empty:
        return ""
    said = []
    tools = runs["tool"].unique()
    if len(tools) == 1 and "tool_version" in runs and (study_versions or {}).get(tools[0]):
        here = ", ".join(sorted({str(v) for v in runs["tool_version"].dropna()})) or "unknown"
        said.append(f"{tools[0]} {here} here (the study: {study_versions[tools[0]]})")
    if "limited_by" in runs:
        for code, n in runs["limited_by"].value_counts().items():
            if code in LIMITS:
                said.append(f"{n} of {len(runs)} runs: {LIMITS[code]}")
    contended = int(runs["contended"].fillna(False).astype(bool).sum()) if "contended" in runs else 0
    if contended:
        said.append(f"{contended} of {len(runs)} runs contended")
    if (runs["runtime"] == "docker").any():
        said.append("Docker's network (the study's figures are bare metal)")
    cores = df["env_cores"].dropna().unique() if "env_cores" in df else []
    if len(cores) and all(float(c) <= 2 for c in cores):
        said.append(f"{int(float(cores[0]))} cores shared by tool and target (the study: two 4-core machines)")
    fewest = int(runs.groupby("tool").size().min()) if len(runs) else 0
    if 0 < fewest < 3:
        said.append(f"{fewest} run{'s' if fewest > 1 else ''} per tool: no interval (REPEAT=3)")
    return "; ".join(said)
