"""The scorecard (issue 26): one row per tool answering "which tool should I trust?", first in the report
and in scorecard.csv.

Each cell is built from the loaded runs (analysis/load.py) and names its source: the scenario and the
runs it came from (``<column>_source``), or why it is empty (``<column>`` then holds the reason). The
sentence per tool is generated from the cells, never written by hand.
"""
from __future__ import annotations

import csv
import functools
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis import flows, memory
from analysis.charts import OK
from analysis.load import closed_model, default_setup
from analysis.numbers import number
from analysis.stall import stall_rows, verdict as stall_verdict
from analysis.uncertainty import CV_LIMIT, Estimate, estimate, rank
from harness.store.declarations import Declarations, declared_by
from harness.store.safe import write_text_inside
from harness.store.upgrade import folder_declarations

NO_REPEATS = "one run: no spread (REPEAT=3 or more)"
ALL_LEVELS_OK = "ok at every VU level tried"
STABLE_CV = 0.10          # at or below: "stable"; up to CV_LIMIT: "varies"; above: "unstable" (not measurable here)


@dataclass
class Cell:
    text: str                          # what the page shows
    value: float | None = None         # what the column sorts by (None: sorts last)
    source: str = ""                   # the runs it came from, or why it is empty
    facts: dict = field(default_factory=dict)   # what the sentence is built from
    short: str = ""                    # the compact table's text (empty: ``text``)
    contended: bool = False            # a run it came from was contended (other processes took CPU)

    @property
    def compact(self) -> str:
        shown = self.short or self.text
        return shown + (" †" if self.contended and self.value is not None else "")


COLUMNS: dict[str, str] = {
    "req_per_cpu_s": "requests per CPU-second of the tool, median and 95% interval over the runs, in the "
                     "closed-model scenario with the lowest RTT and most VUs (where every tool is pushed); rank 1 + "
                     "the tools wholly above it, \"=\" where intervals overlap",
    "added_ms": "the latency the tool adds to the network's: its p50 (its mean where it reports no p50) minus the "
                "RTT measured before the run, ms, "
                "median over the runs, in the shaped closed-model scenario with the highest RTT and fewest VUs (where "
                "no tool is pushed: the study's test of a tool's own delay, e.g. Locust +130 ms at 100 VUs)",
    "max_vus_ok": "where a tool failed below the highest VU level tried: the highest level up to which every "
                  "closed-model run was ok, and what happened above it",
    "p50_error_ms": "the tool's p50 minus the wire's p50 (--capture), ms: the largest of its scenarios' medians",
    "p99_error_ms": "the tool's p99 minus the wire's p99 (--capture), ms: the largest of its scenarios' medians",
    "stall": "the stall test (scenarios/open-model.yaml): what the tool saw of a 1 s freeze of Nginx, per "
             "connection budget (the scenario's VUs caps connections/users; open-model tools also run with 2,000)",
    "mem_per_vu_kb": "memory per VU: the least-squares slope of the tool's average RSS over three VU levels or more "
                     "at one RTT (its ok closed-model runs), KiB per VU, with its 95% interval from three runs "
                     "(analysis/memory.py); an interval holding 0: no growth per VU measurable",
    "rps_cv": "stability: the coefficient of variation of RPS over the runs, worst scenario (> "
              f"{CV_LIMIT:.0%}: not measurable here)",
    "open_model": "whether the tool can send at a fixed arrival rate here (yes), cannot (no), or can but the harness "
                  "does not drive it that way yet (not wired)",
    "keepalive_off": "whether the tool can open a new connection per request (its adapter's declaration; make "
                     "list-tools says why not), and its RPS change against keep-alive where scenarios/targets.yaml ran",
    "tls": "whether the tool can load an HTTPS target with a self-signed certificate, and its RPS change against "
           "plain HTTP where scenarios/targets.yaml ran",
    "h2": "whether the tool speaks HTTP/2 over TLS (its adapter's declaration; checked at the file server on every "
          "run), and its RPS change against HTTP/1.1 over TLS at the same VUs and RTT, one stream per connection, "
          "where scenarios/protocols.yaml ran",
    "h2c": "whether the tool speaks cleartext HTTP/2 with prior knowledge, and its RPS change against plain "
           "HTTP/1.1 at the same VUs and RTT, one stream per connection, where scenarios/protocols.yaml ran",
    "h3": "whether the tool speaks HTTP/3 (QUIC; its adapter's declaration, checked at the server on every run); "
          "measured against HTTP/1.1 over TLS in the report's HTTP/2 section, where scenarios/protocols.yaml ran",
    "login_flow": "whether the tool scripts the login flow (log in, carry the token, GET the API; its adapter's "
                  "declaration, the API's counts judging every run), and its requests per CPU-second running it "
                  "against its plain GET of the file at the same VUs and RTT, where scenarios/flows.yaml ran",
}
HEADERS = {"req_per_cpu_s": "req / CPU-s", "added_ms": "p50 − RTT ms", "max_vus_ok": "ok up to VUs", "p50_error_ms": "p50 − wire ms",
           "p99_error_ms": "p99 − wire ms", "stall": "stall test", "mem_per_vu_kb": "KiB / VU",
           "rps_cv": "RPS CV", "open_model": "open model", "keepalive_off": "keep-alive off", "tls": "TLS",
           "h2": "h2", "h2c": "h2c", "h3": "h3", "login_flow": "login flow"}
FEATURES = ("keepalive_off", "tls", "h2", "h2c", "h3")
# What this run measured, first in the compact table; what the adapters declare, in a matrix of its own.
MEASURED = ("req_per_cpu_s", "added_ms", "p50_error_ms", "p99_error_ms", "max_vus_ok", "mem_per_vu_kb", "rps_cv",
            "stall")
DECLARED = ("open_model", *FEATURES, "login_flow")
# Which way is better, for the compact table's colours: "high", "low" (values are sizes: |error| and the like).
BETTER = {"req_per_cpu_s": "high", "added_ms": "low", "p50_error_ms": "low", "p99_error_ms": "low",
          "max_vus_ok": "high", "mem_per_vu_kb": "low", "rps_cv": "low", "stall": "high"}


def _runs_source(runs: pd.DataFrame) -> str:
    """"<folder>/<run_dir> ×n": where the runs' raw files are."""
    dirs = sorted({f"{folder}/{run_dir}" for folder, run_dir in zip(runs["folder"], runs["run_dir"])
                   if isinstance(run_dir, str)})
    return "; ".join(dirs) + (f" ({len(runs)} runs)" if len(runs) > 1 else "")


def _contended(runs: pd.DataFrame) -> bool:
    return bool("contended" in runs and runs["contended"].fillna(False).astype(bool).any())


def reference_scenario(df: pd.DataFrame) -> str | None:
    closed = closed_model(df[df["status"] == OK])
    if closed.empty:
        return None
    order = closed.drop_duplicates("scenario").sort_values(["rtt_target_ms", "vus"], ascending=[True, False])
    return order["scenario"].iloc[0]


def throughput_cells(df: pd.DataFrame) -> dict[str, Cell]:
    scenario = reference_scenario(df)
    if scenario is None:
        return {}
    runs = df[(df["scenario"] == scenario) & (df["status"] == OK)]
    estimates = {label: estimate(list(group["req_per_cpu_s"])) for label, group in runs.groupby("label")}
    ranks = rank(estimates)
    cells = {}
    for label, found in estimates.items():
        group = runs[runs["label"] == label]
        if not found.usable:
            why = found.flag or "not reported: no tool CPU in the load window (or a folder older than the column)"
            cells[label] = Cell(why, None, _runs_source(group))
            continue
        source = f"{scenario}: {_runs_source(group)}"
        facts = {"median": found.median, "n": found.n, "scenario": scenario, "rank": None, "tied": [],
                 "low": found.low, "high": found.high}
        contended = _contended(group)
        if found.low is None:
            cells[label] = Cell(f"{number(found.median)} ({found.n} run{'s' if found.n > 1 else ''}: not ranked)",
                                found.median, source, facts, number(found.median), contended)
            continue
        position, tied = ranks[label]
        shared = "=" if any(ranks[t][0] == position for t in tied) else ""
        cells[label] = Cell(f"{number(found.median)} ({number(found.low)}–{number(found.high)}) rank {shared}{position}",
                            found.median, source, {**facts, "rank": position, "tied": tied},
                            f"{number(found.median)} ({number(found.low)}–{number(found.high)})", contended)
    return cells


def max_vus_cells(df: pd.DataFrame) -> dict[str, Cell]:
    cells = {}
    for label, runs in closed_model(df).groupby("label"):
        levels = sorted(runs["vus"].dropna().unique())
        highest, broke = None, None
        for vus in levels:
            at = runs[runs["vus"] == vus]
            bad = at[at["status"] != OK]
            if len(bad):
                error = next((e for e in bad["error"] if isinstance(e, str) and e), bad["status"].iloc[0])
                broke = (vus, len(bad), len(at), bad["status"].iloc[0], error, _runs_source(bad))
                break
            highest = vus
        if highest is None:
            vus, n_bad, n, status, error, source = broke
            cells[label] = Cell(f"none: {status} at {vus:.0f} VUs ({n_bad}/{n} runs): {error[:80]}", 0, source,
                                {"highest": None, "broke": broke})
            continue
        if broke is None:       # nothing failed: the figure would only repeat the highest level tried
            cells[label] = Cell(f"{ALL_LEVELS_OK} (up to {highest:.0f})", None, _runs_source(runs[runs["vus"] == highest]),
                                {"highest": highest, "broke": None}, "—")
            continue
        above = f"; {broke[3]} at {broke[0]:.0f} VUs ({broke[1]}/{broke[2]} runs): {broke[4][:80]}"
        source = _runs_source(runs[runs["vus"] == highest]) + f"; above: {broke[5]}"
        cells[label] = Cell(f"{highest:.0f}{above}", float(highest), source, {"highest": highest, "broke": broke},
                            f"{highest:.0f} ({broke[3]} at {broke[0]:.0f})")
    return cells


def wire_error_cells(df: pd.DataFrame, metric: str) -> dict[str, Cell]:
    """The largest (by size) of the per-scenario medians of ``metric``: the worst case the tool showed."""
    cells = {}
    if metric not in df:
        return cells
    captured = df[(df["status"] == OK) & df[metric].notna()]
    for label, runs in captured.groupby("label"):
        medians = runs.groupby("scenario")[metric].median()
        worst = medians.abs().idxmax()
        value = float(medians[worst])
        mine = runs[runs["scenario"] == worst]
        cells[label] = Cell(f"{value:+.3g} ({worst})", abs(value), f"{worst}: {_runs_source(mine)}",
                            {"error_ms": value, "scenario": worst}, f"{value:+.3g}", _contended(mine))
    return cells


def stall_cells(df: pd.DataFrame) -> dict[str, Cell]:
    rows = stall_rows(df)
    cells = {}
    for label, runs in rows.groupby("label"):
        parts, facts = [], []
        for vus, at in sorted(runs.groupby("vus"), key=lambda kv: kv[0]):
            verdicts = sorted({stall_verdict(r) for _, r in at.iterrows()})
            model = "open" if at["rate_target_rps"].notna().all() else "closed"
            parts.append(f"{vus:,.0f} {'conns' if model == 'open' else 'users'}: {' / '.join(verdicts)}")
            facts.append((int(vus), model, verdicts))
        stall_ms = runs["stall_ms"].iloc[0]
        best = max(len(v) for *_, v in facts)
        score = max(("p99 shows it" in v) * 2 + ("max only" in v) for *_, v in facts)
        cells[label] = Cell("; ".join(parts), float(score) if best else None, _runs_source(runs),
                            {"budgets": facts, "stall_ms": stall_ms})
    return cells


def mem_cells(df: pd.DataFrame) -> dict[str, Cell]:
    cells = {}
    closed = closed_model(df[df["status"] == OK])
    for label, slope in memory.per_vu_slopes(closed).items():
        mine = closed[closed["label"] == label]
        if slope.rtt_ms is not None:
            mine = mine[mine["rtt_target_ms"] == slope.rtt_ms]
        if slope.kib_per_vu is None:
            cells[label] = Cell(slope.describe(), None, "", short=slope.short)
            continue
        facts = {"kib": slope.kib_per_vu, "spans_zero": slope.spans_zero}
        cells[label] = Cell(slope.describe(), None if slope.spans_zero else slope.kib_per_vu, _runs_source(mine), facts,
                            slope.short, _contended(mine))
    return cells


def latency_scenario(df: pd.DataFrame) -> str | None:
    """Where a tool's own delay shows: the shaped closed-model scenario with the highest RTT and fewest VUs."""
    closed = closed_model(df[df["status"] == OK])
    shaped = closed[closed["rtt_target_ms"] >= 1]
    if shaped.empty:
        return None
    order = shaped.drop_duplicates("scenario").sort_values(["rtt_target_ms", "vus"], ascending=[False, True])
    return order["scenario"].iloc[0]


def added_cells(df: pd.DataFrame) -> dict[str, Cell]:
    """p50 minus the RTT measured before the run, median over the runs of latency_scenario."""
    scenario = latency_scenario(df)
    if scenario is None:
        return {}
    runs = df[(df["scenario"] == scenario) & (df["status"] == OK)]
    rtt = runs["rtt_measured_ms"].fillna(runs["rtt_target_ms"]) if "rtt_measured_ms" in runs else runs["rtt_target_ms"]
    # a tool that reports no median (Siege, Tsung) is judged on its mean, as the study judged every tool
    mean = runs["lat_mean_ms"] if "lat_mean_ms" in runs else pd.Series(float("nan"), index=runs.index)
    added = (runs["lat_p50_ms"].fillna(mean) - rtt).rename("added")
    cells = {}
    for label, group in runs.assign(added=added).groupby("label"):
        known = group["added"].dropna()
        if known.empty:
            continue
        found = estimate(list(known))
        value = float(found.median)
        interval = f" ({found.low:+.3g}–{found.high:+.3g})" if found.low is not None else ""
        cells[label] = Cell(f"{value:+.3g}{interval} ({scenario})", abs(value), f"{scenario}: {_runs_source(group)}",
                            {"added_ms": value, "low": found.low, "high": found.high, "scenario": scenario},
                            f"{value:+.3g}{interval}", _contended(group))
    return cells


def stability_cells(df: pd.DataFrame) -> dict[str, Cell]:
    cells = {}
    for label, runs in df[df["status"] == OK].groupby("label"):
        found: dict[str, Estimate] = {s: estimate(list(g["rps"])) for s, g in runs.groupby("scenario")}
        with_cv = {s: e for s, e in found.items() if e.cv is not None}
        if not with_cv:
            cells[label] = Cell(NO_REPEATS, None, _runs_source(runs))
            continue
        worst = max(with_cv, key=lambda s: with_cv[s].cv)
        cv = with_cv[worst].cv
        mine = runs[runs["scenario"] == worst]
        cells[label] = Cell(f"{cv:.0%} ({worst}, {with_cv[worst].n} runs)", cv, f"{worst}: {_runs_source(mine)}",
                            {"cv": cv, "scenario": worst, "unstable": cv > CV_LIMIT}, f"{cv:.0%}", _contended(mine))
    return cells


def open_model_cells(df: pd.DataFrame, declarations: Callable[[str], tuple[bool, str] | None]) -> dict[str, Cell]:
    cells = {}
    for label, tool in df.drop_duplicates("label")[["label", "tool"]].itertuples(index=False):
        declared = declarations(tool)
        if declared is None:
            cells[label] = Cell("unknown: no adapter of that name here", None, "")
            continue
        open_model, rate_model = declared
        answer = "yes" if open_model else "not wired" if "not wired" in rate_model else "no"
        cells[label] = Cell(answer, {"yes": 2.0, "not wired": 1.0, "no": 0.0}[answer],
                            f"tools/{tool}/adapter.py: {rate_model}", {"answer": answer})
    return cells


def feature_cells(df: pd.DataFrame, feature: str, declared: Callable[[str], bool | str | None]) -> dict[str, Cell]:
    """keep-alive off / TLS / h2 / h2c: the declaration, and the measured RPS change against its baseline."""
    changed, baseline = _changed_and_baseline(df, feature)
    # HTTP/2's "no" goes into the sentence only where the results hold an HTTP/2 scenario (the column has it always).
    said = feature not in ("h2", "h2c", "h3") or ("protocol" in df and bool((df["protocol"] == feature).any()))
    cells = {}
    for label, runs in df.groupby("label"):
        answer = declared(runs["tool"].iloc[0])
        if answer is None:
            cells[label] = Cell("unknown: no adapter of that name here", None, "")
            continue
        if answer is not True:
            cells[label] = Cell("no", 0.0, f"tools/{runs['tool'].iloc[0]}/adapter.py: {answer}",
                                {"answer": "no"} if said else {})
            continue
        cost = _measured_change(runs, changed.loc[runs.index], baseline.loc[runs.index])
        text = "yes" if cost is None else f"yes: RPS {cost[0]:+.0%} ({cost[1]})"
        declared_yes = (f"tools/{runs['tool'].iloc[0]}/adapter.py: {feature} = True; not measured in these results "
                        f"(scenarios/{'protocols' if feature in ('h2', 'h2c', 'h3') else 'targets'}.yaml)")
        cells[label] = Cell(text, 1.0 if cost is None else 1.0 + cost[0], cost[2] if cost else declared_yes,
                            {"answer": "yes", "change": None if cost is None else cost[0]})
    return cells


def flow_cells(df: pd.DataFrame, declared: Callable[[str], bool | str | None]) -> dict[str, Cell]:
    """The login flow: the declaration, and the flow's requests per CPU-second against the plain GET's."""
    ran = "flow" in df and df["flow"].notna().any()
    cells = {}
    for label, runs in df.groupby("label"):
        tool = runs["tool"].iloc[0]
        answer = declared(tool)
        if answer is None:
            cells[label] = Cell("unknown: no adapter of that name here", None, "")
        elif answer is not True:
            cells[label] = Cell("no", 0.0, f"tools/{tool}/adapter.py: {answer}", {"answer": "no"} if ran else {})
        elif (cost := flows.scorecard_cost(runs)) is None:
            cells[label] = Cell("yes", 1.0, f"tools/{tool}/adapter.py: login_flow = True; no ok flow run with its "
                                            "plain GET in these results (scenarios/flows.yaml)", {"answer": "yes"})
        else:
            share, scenario = cost
            cells[label] = Cell(f"yes: {share:.0%} of its plain-GET req / CPU-s ({scenario})", share,
                                f"{scenario}: {_runs_source(runs[runs['scenario'] == scenario])}",
                                {"answer": "yes", "share": share})
    return cells


def _changed_and_baseline(df: pd.DataFrame, feature: str) -> tuple[pd.Series, pd.Series]:
    """The rows that have the feature, and the rows each is compared with: the plain setup (Nginx, keep-alive,
    HTTP/1.1 without TLS), or for h2 HTTP/1.1 over TLS; HTTP/2 at one stream per connection, like with like."""
    protocol = df["protocol"].fillna("http/1.1") if "protocol" in df else pd.Series("http/1.1", index=df.index)
    streams = pd.to_numeric(df["streams"], errors="coerce").fillna(1) if "streams" in df else 1
    keepalive, tls = df["keepalive"].astype(str) == "True", df["tls"].astype(str) == "True"
    http1, plain = protocol == "http/1.1", default_setup(df)
    if feature == "keepalive_off":
        return ~keepalive & http1, plain
    if feature == "tls":
        return tls & keepalive & http1, plain
    at_nginx = (df["target"] == "nginx") & df["backend_delay_ms"].isna()   # HTTP/2 through a proxy: report only
    tls_baseline = tls & keepalive & http1 & at_nginx
    return (protocol == feature) & (streams == 1) & at_nginx, tls_baseline if feature == "h2" else plain


def _measured_change(runs: pd.DataFrame, changed: pd.Series, baseline: pd.Series) -> tuple[float, str, str] | None:
    """(RPS ratio - 1, scenario, source) of the changed setup against its baseline at the same VUs and RTT, in the
    scenario with the lowest RTT and most VUs that has both (where the tool is pushed, as for req / CPU-s)."""
    ok = runs[(runs["status"] == OK) & (runs["target"].fillna("nginx") == "nginx") & runs["backend_delay_ms"].isna()]
    plain = ok[baseline.loc[ok.index]]
    changed_ok = ok[changed.loc[ok.index]].sort_values(["rtt_target_ms", "vus"], ascending=[True, False])
    for scenario, mine in changed_ok.groupby("scenario", sort=False):
        base = plain[(plain["vus"] == mine["vus"].iloc[0]) & (plain["rtt_target_ms"] == mine["rtt_target_ms"].iloc[0])]
        if len(base):
            return (mine["rps"].median() / base["rps"].median() - 1, scenario,
                    f"{_runs_source(mine)} against {_runs_source(base)}")
    return None


@functools.cache
def todays_declarations() -> Declarations:
    """This checkout's adapters' declarations: what a folder written before declarations.json reads."""
    from harness.tools.registry import discover     # reads each adapter's class attributes; starts nothing
    return {tool: declared_by(adapter) for tool, adapter in discover().items()}


def recorded_declarations(folders: Iterable[Path]) -> Declarations:
    """Each tool's declarations as the first folder holding them recorded them (harness/store/upgrade.py
    folder_declarations: today's adapters' for a folder written before declarations.json)."""
    merged: Declarations = {}
    for folder in folders:
        for tool, declared in folder_declarations(folder, todays_declarations).items():
            merged.setdefault(tool, declared)
    return merged


def rate_declarations(declarations: Declarations) -> Callable[[str], tuple[bool, str] | None]:
    return lambda tool: (declarations[tool]["open_model"], declarations[tool]["rate_model"]) \
        if tool in declarations else None


def declared_feature(declarations: Declarations, feature: str) -> Callable[[str], bool | str | None]:
    return lambda tool: declarations[tool][feature] if tool in declarations else None


def _missing(column: str, df: pd.DataFrame) -> str:
    """Why a column has no figure for a tool in these results: what to run to get one."""
    if column in ("p50_error_ms", "p99_error_ms"):
        return "not captured: run with CAPTURE=1"
    if column == "stall":
        return ("no stall run in these results: make bench-all SCENARIOS=scenarios/open-model.yaml"
                if stall_rows(df).empty else "no ok stall run")
    if column == "req_per_cpu_s":
        return "no ok run in " + (reference_scenario(df) or "a closed-model scenario")
    if column == "rps_cv":
        return "no ok run"
    if column == "added_ms":
        return ("no shaped scenario in these results (an RTT of 1 ms or more)" if latency_scenario(df) is None
                else f"no p50 in {latency_scenario(df)}")
    return "no ok closed-model run"


def build(df: pd.DataFrame, declarations: Declarations | None = None) -> list[dict]:
    """One dict per tool label: {column: Cell} plus "tool" and "sentence". ``declarations``: the adapters' as the
    results folders recorded them (recorded_declarations; None: today's adapters')."""
    declarations = todays_declarations() if declarations is None else declarations
    highest = max_vus_cells(df)
    columns = {"req_per_cpu_s": throughput_cells(df), "added_ms": added_cells(df), "max_vus_ok": highest,
               "p50_error_ms": wire_error_cells(df, "tool_error_p50_ms"),
               "p99_error_ms": wire_error_cells(df, "tool_error_p99_ms"),
               "stall": stall_cells(df), "mem_per_vu_kb": mem_cells(df),
               "rps_cv": stability_cells(df), "open_model": open_model_cells(df, rate_declarations(declarations)),
               **{feature: feature_cells(df, feature, declared_feature(declarations, feature)) for feature in FEATURES},
               "login_flow": flow_cells(df, declared_feature(declarations, "login_flow"))}
    missing = {column: _missing(column, df) for column in columns}
    rows = []
    for label in sorted(df["label"].unique()):
        row = {"tool": label}
        for column, cells in columns.items():
            row[column] = cells.get(label) or Cell(missing[column], None, "")
        row["sentence"] = sentence(label, row)
        rows.append(row)
    return rows


def sentence(label: str, row: dict) -> str:
    """A plain sentence from the cells' facts."""
    clauses = []
    speed = row["req_per_cpu_s"].facts
    if speed:
        per_core = f"{number(speed['median'])} requests per CPU-second"
        if speed["rank"] is None:
            clauses.append(f"{per_core} (not ranked: {speed['n']} run{'s' if speed['n'] > 1 else ''})")
        elif speed["rank"] == 1 and not speed["tied"]:
            clauses.append(f"fastest per core ({per_core})")
        elif speed["rank"] == 1:
            clauses.append(f"among the fastest per core ({per_core}; tied with {_names(speed['tied'])})")
        else:
            clauses.append(f"{per_core}, rank {speed['rank']}" + (f" (tied with {_names(speed['tied'])})" if speed["tied"] else ""))
    added = row["added_ms"].facts
    if added:
        clauses.append(f"adds {added['added_ms']:+.3g} ms to the RTT at p50 ({added['scenario']})")
    top = row["max_vus_ok"].facts
    if top and top["highest"] is not None:
        clauses.append(f"ran ok up to {top['highest']:.0f} VUs" +
                       (f" ({top['broke'][3]} at {top['broke'][0]:.0f})" if top["broke"] else ""))
    elif top:
        clauses.append(f"no closed-model run ok ({top['broke'][3]} at {top['broke'][0]:.0f} VUs)")
    for column, name in (("p50_error_ms", "p50"), ("p99_error_ms", "p99")):
        error = row[column].facts.get("error_ms")
        if error is not None:
            clauses.append(f"{name} within {abs(error):.2g} ms of the wire" if abs(error) < 1
                           else f"{name} {abs(error):.3g} ms {'above' if error > 0 else 'below'} the wire")
    stall = row["stall"].facts
    if stall:
        clauses.append(_stall_clause(stall))
    mem = row["mem_per_vu_kb"].facts
    if mem:
        clauses.append("no memory growth per VU measurable" if mem["spans_zero"] else f"{number(mem['kib'])} KiB per VU")
    stable = row["rps_cv"].facts
    if stable:
        cv = stable["cv"]
        clauses.append(f"unstable (RPS CV {cv:.0%})" if stable["unstable"] else
                       f"stable (RPS CV {cv:.0%})" if cv <= STABLE_CV else f"RPS varies run to run (CV {cv:.0%})")
    model = row["open_model"].facts.get("answer")
    if model:
        clauses.append({"yes": "can pace an arrival rate", "no": "closed model only",
                        "not wired": "open model not wired here"}[model])
    flow = row["login_flow"].facts
    if flow.get("answer") == "no":
        clauses.append("cannot script the login flow")
    elif flow.get("share") is not None:
        clauses.append(f"scripts the login flow at {flow['share']:.0%} of its plain-GET rate per core")
    for column, name in (("keepalive_off", "keep-alive off"), ("tls", "TLS"), ("h2", "h2"), ("h2c", "h2c"),
                         ("h3", "h3")):
        facts = row[column].facts
        if facts.get("answer") == "no":
            clauses.append(f"no {name}")
        elif facts.get("change") is not None:
            clauses.append(f"{name} costs it {-facts['change']:.0%} of its RPS" if facts["change"] < 0
                           else f"{name} changes its RPS by {facts['change']:+.0%}")
    return f"{label}: " + ("; ".join(clauses) if clauses else "no ok run in these results") + "."


def _names(labels: list[str], most: int = 3) -> str:
    return ", ".join(labels) if len(labels) <= most else f"{', '.join(labels[:most])} and {len(labels) - most} more"


def _stall_clause(stall: dict) -> str:
    seconds = f"{stall['stall_ms'] / 1000:g} s"
    said = []
    for vus, model, verdicts in stall["budgets"]:
        what = {"p99 shows it": f"shows a {seconds} stall in p99", "max only": f"hides a {seconds} stall from p99 "
                "(only in max)", "hidden": f"hides a {seconds} stall", "n/a": "stall not measurable"}
        said.append(" / ".join(what[v] for v in verdicts) + f" at {vus:,} {'connections' if model == 'open' else 'users'}")
    return "; ".join(said)


def absent_columns(rows: list[dict]) -> dict[str, str]:
    """Columns no tool has a figure in, for one and the same reason: {header: why}. The page says so once
    instead of in every row (scorecard.csv keeps every cell)."""
    absent = {}
    for column, header in HEADERS.items():
        reasons = {row[column].text for row in rows if row[column].value is None}
        if rows and len(reasons) == 1 and all(row[column].value is None for row in rows):
            absent[column] = f"{header}: {reasons.pop()}"
    return absent


def write_csv(rows: list[dict], path: Path) -> Path:
    """scorecard.csv: per column its text and its source."""
    names = ["tool", *(n for c in COLUMNS for n in (c, f"{c}_source")), "sentence"]
    with io.StringIO(newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        for row in rows:
            writer.writerow({"tool": row["tool"], "sentence": row["sentence"],
                             **{n: v for c in COLUMNS for n, v in ((c, row[c].text), (f"{c}_source", row[c].source))}})
        write_text_inside(path.parent.parent, path, handle.getvalue())
    return path


def ranked(rows: list[dict]) -> list[dict]:
    """The compact table's order: by requests per CPU-second, fastest first; tools without it last, by name."""
    return sorted(rows, key=lambda r: (r["req_per_cpu_s"].value is None, -(r["req_per_cpu_s"].value or 0), r["tool"]))


def tones(rows: list[dict], column: str) -> dict[str, float]:
    """Per tool, where its cell stands in ``column`` among the tools with a figure: 1 the best, 0 the worst
    (BETTER says which way); none for a cell without a figure or a column with one figure only."""
    values = {r["tool"]: r[column].value for r in rows if r[column].value is not None}
    if len(values) < 2 or column not in BETTER:
        return {}
    order = sorted(set(values.values()), reverse=BETTER[column] == "high")
    return {tool: 1 - order.index(v) / max(len(order) - 1, 1) for tool, v in values.items()}
