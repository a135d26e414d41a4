"""`make report`: charts (PNG; SVG too with --svg), tables and the environment of one or more results
folders, as one HTML page.

    python -m analysis.report [FOLDER ...] [--out DIR] [--svg]

One folder: the report goes to FOLDER/report/index.html. Several (e.g. two machines, or host and
Docker): to results/compare-<UTC timestamp>/report/index.html unless --out is given.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from jinja2 import Environment, FileSystemLoader

from harness import REPO_ROOT
from analysis.charts import CHARTS, OK, run_status, runtime_ratios, spread, with_limits
from analysis.load import NUMERIC, environment, load_results, scenario_order
from analysis.numbers import number
from analysis import capacity, claims, flows, headline, protocols, scorecard, targets
from analysis.figures import save
from analysis.uncertainty import CV_LIMIT, NOT_MEASURABLE as FLAGGED, Estimate, rank
from analysis.stall import EXPLANATION as STALL_EXPLANATION, stall_table, write_stall_chart
from harness.errors import HarnessError
from harness.store.lock import folder_lock
from harness.store.safe import make_dir_inside, write_text_inside
from harness.store.results import STATUSES
from harness.store.upgrade import FutureSchema

TEMPLATES = Path(__file__).resolve().parent / "templates"
NO_CHART = {"docker_vs_host": "these results hold no run of the same tool and scenario in both runtimes",
            "added_latency": "no run was captured (--capture, Make CAPTURE=1)",
            "latency_accuracy": "no run was captured (--capture, Make CAPTURE=1)"}
# The summary's figures by runs.csv column, with short headers so that the table fits the page (each header's
# title names its column).
HEADERS = {"rps": "rps", "lat_p50_ms": "p50 ms", "lat_p99_ms": "p99 ms", "lat_added_ms": "added ms",
           "mem_avg_mb": "RSS avg MiB", "mem_peak_mb": "RSS peak MiB", "cpu_avg_pct": "tool CPU %",
           "target_cpu_pct": "Nginx CPU %", "req_per_cpu_s": "req / CPU-s",
           "limited_by": "limited by"}
SUMMARY_METRICS = [m for m in HEADERS if m != "limited_by"]     # limited_by is a word, not a spread


def summary_table(df: pd.DataFrame) -> list[dict]:
    """Median (95% interval) per (scenario, label) over its ok repetitions; the flag where the figure is not
    measurable here; empty where unreported or where no run was ok (``status`` then says how they ended)."""
    rows = []
    order = {s: i for i, s in enumerate(scenario_order(df))}
    keys = df[["scenario", "label", "tool", "runtime"]].drop_duplicates()
    spreads = {m: spread(df, m) for m in SUMMARY_METRICS}
    cells = {m: _cells(stats) for m, stats in spreads.items()}
    ranks = rps_ranks(spreads["rps"])
    groups = df.groupby(["scenario", "label"]).indices     # positions: a pandas selection per group is slow
    statuses, versions, limits = (df[c].to_numpy(dtype=object) for c in ("status", "tool_version", "limited_by"))
    contended = df["contended"].fillna(False).to_numpy(dtype=bool) if "contended" in df else np.zeros(len(df), bool)
    marks = {m: df[f"{m}_below_res"].to_numpy(dtype=object) for m in SUMMARY_METRICS if f"{m}_below_res" in df}
    for _, key in keys.sort_values(["scenario", "label"], key=lambda c: c.map(order) if c.name == "scenario" else c).iterrows():
        at = groups[(key["scenario"], key["label"])]
        ok = at[statuses[at] == OK]
        row = {"scenario": key["scenario"], "tool": key["label"], "runs": len(at), "ok": len(ok),
               "status": run_status(statuses[at]),
               "version": ", ".join(sorted({v for v in versions[at] if isinstance(v, str)}))}
        for metric in SUMMARY_METRICS:
            row[metric] = cells[metric].get((key["scenario"], key["label"]), "") or _below_resolution(marks.get(metric), ok)
        row["limited_by"] = ", ".join(sorted(set(limits[ok])))
        row["contended"] = int(contended[ok].sum())
        row["rank"], row["tied"] = ranks.get((key["scenario"], key["label"]), ("", []))
        rows.append(row)
    return rows


def rps_ranks(stats: pd.DataFrame) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """Per (scenario, label): its RPS rank among the scenario's tools ("=2": shared) and the tools it is tied
    with; none for a figure without an interval (fewer than 3 runs) or flagged."""
    ranks = {}
    for scenario, group in stats.groupby("scenario"):
        found = {r.label: Estimate(r.median, None if pd.isna(r.low) else r.low, None if pd.isna(r.high) else r.high,
                                   int(r.n), r.cv) for r in group.itertuples() if not pd.isna(r.median)}
        ranked = rank(found)
        for label, (position, tied) in ranked.items():
            shared = "=" if any(ranked[t][0] == position for t in tied) else ""
            ranks[(scenario, label)] = (f"{shared}{position}", tied)
    return ranks


def failed_runs(df: pd.DataFrame) -> list[dict]:
    """Every run that did not end ok, by status (failed, timeout, unsupported), with its error in full."""
    bad = df[df["status"] != OK]
    scenarios = {s: i for i, s in enumerate(scenario_order(df))}
    rank = {s: i for i, s in enumerate(STATUSES)}
    bad = bad.assign(_status=bad["status"].map(rank), _scenario=bad["scenario"].map(scenarios))
    return [{"status": r["status"], "scenario": r["scenario"], "tool": r["label"], "repeat": int(r["repeat"]),
             "error": r["error"] if isinstance(r["error"], str) else ""}
            for _, r in bad.sort_values(["_status", "_scenario", "label", "repeat"]).iterrows()]


def status_counts(df: pd.DataFrame) -> str:
    """"2 failed, 1 timeout" over the runs that did not end ok."""
    counts = df.loc[df["status"] != OK, "status"].value_counts()
    order = [s for s in STATUSES if s in counts] + sorted(set(counts.index) - set(STATUSES))
    return ", ".join(f"{counts[s]} {s}" for s in order)


def _cells(stats: pd.DataFrame) -> dict[tuple[str, str], str]:
    """Each (scenario, label)'s cell of one metric's spread."""
    return {(r.scenario, r.label): _cell(r.median, r.low, r.high, r.status) for r in stats.itertuples()}


def _cell(median: float, low: float, high: float, status: str) -> str:
    if pd.isna(median):
        return status if status.startswith(FLAGGED) else ""
    return number(median) if pd.isna(low) else f"{number(median)} ({number(low)}–{number(high)})"


def _below_resolution(marks: np.ndarray | None, ok: np.ndarray) -> str:
    """"< 1 ms" / "~1 ms" where the tool's clock could not resolve the figure (analysis.load): the first mark
    (a metric's ``_below_res`` column) among the ok runs at positions ``ok``."""
    found = [] if marks is None else [m for m in marks[ok] if isinstance(m, str)]
    return f"{found[0]} ms" if found else ""


def _ratio(value: float) -> str:
    return "" if value is None or pd.isna(value) else f"{value:.3g}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or pd.isna(low) else f"{low:.3g}–{high:.3g}"


def raw_rows(folder: Path) -> tuple[list[str], list[dict]]:
    """runs.csv exactly as written (the all-runs table must equal it, a shortened cell by its title)."""
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle, restval="")
        return list(reader.fieldnames or []), list(reader)


TEXT_CHARS = 60     # a longer text (notes, an error) is cut in the all-runs table: rows stay one line tall


def runs_cell(column: str, value: str) -> str:
    """A runs.csv cell as the all-runs table shows it: a number rounded as in the summary (analysis.numbers), a long
    text cut; the page keeps the value as written in the cell's title."""
    if column in NUMERIC and value:
        try:
            return number(float(value))
        except ValueError:
            return value
    return value if len(value) <= TEXT_CHARS else value[:TEXT_CHARS - 1] + "…"


def metric_sources(folder: Path) -> dict[str, str]:
    sources = {}
    for meta_file in sorted(folder.glob("*/*/meta.json")) + sorted(folder.glob("*/*/*/meta.json")):
        meta = json.loads(meta_file.read_text())     # a trimmed one (tests/fixtures/shapers) has no row
        tool = meta.get("row", {}).get("tool")
        if tool and meta.get("metric_source") and tool not in sources:
            sources[tool] = meta["metric_source"]
    return sources


@dataclass(frozen=True)
class Built:
    """A written report: its page, and the first screen's answer for the log (the scorecard's sentences, the
    claims' verdicts), kept from the build rather than read back from the CSVs it has just written."""
    page: Path
    sentences: list[str]
    verdicts: list[str]


def build(folders: list[Path], out: Path, svg: bool = False) -> Path:
    """``svg``: every chart as SVG too, linked beside its PNG."""
    return built(folders, out, svg).page


def built(folders: list[Path], out: Path, svg: bool = False) -> Built:
    """build(), with what the log prints of it."""
    everything = with_limits(load_results(*folders))
    make_dir_inside(out.parent, out)
    capacity_section = capacity.write(everything, folders, out, svg)
    df = everything[~capacity.is_step(everything)]     # a search's steps are rates, not scenarios to compare
    charts, missing = [], []
    for name, (caption, draw) in CHARTS.items():
        figure = draw(df) if len(df[df["status"] == "ok"]) else None
        if figure is None:
            missing.append((caption, NO_CHART.get(name, "no successful run")))
            continue
        save(figure, out, name, svg)
        charts.append({"name": name, "caption": caption})
    ratios = runtime_ratios(df)
    card = scorecard.build(df, scorecard.recorded_declarations(folders))
    scorecard.write_csv(card, out / "scorecard.csv")
    absent = scorecard.absent_columns(card)
    environments = [environment(f) for f in folders]
    first_screen = _first_screen(df, card, environments, out, svg)
    checked = claims.check(df) if len(df) else []
    claims.write_csv(checked, out / "claims.csv")
    # Every value is text (a tool's stderr, a note, environment.json): escaped. select_autoescape() would
    # not escape here, the template's name ending in .j2; the page's own markup is all in the template.
    page = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True).get_template("report.html.j2")
    html = page.render(
        steps=int(capacity.is_step(everything).sum()),
        generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        folders=[{"name": f.name, "environment": environment(f), "raw": raw_rows(f), "sources": metric_sources(f)}
                 for f in folders],
        charts=charts, missing=missing, svg=svg, summary=summary_table(df), runs=len(df),
        failed=failed_runs(everything), failed_counts=status_counts(everything), runs_cell=runs_cell,
        ratios=ratios.to_dict("records"), ratio_text=_ratio, interval_text=_interval, headers=HEADERS,
        scorecard=scorecard.ranked(card), scorecard_absent=absent, scorecard_columns=scorecard.COLUMNS,
        measured={c: scorecard.HEADERS[c] for c in scorecard.MEASURED if c not in absent},
        declared={c: scorecard.HEADERS[c] for c in scorecard.DECLARED},
        tones={c: scorecard.tones(card, c) for c in scorecard.MEASURED}, tone=_tone,
        claims=checked, claim_counts=_claim_counts(checked), **first_screen,
        cv_limit=f"{CV_LIMIT:.0%}",
        capacity=capacity_section, targets=targets.section(df), protocols=protocols.section(df),
        flows=flows.table(df),
        stall=stall_table(df), stall_explanation=STALL_EXPLANATION, stall_chart=write_stall_chart(df, out, svg),
    )
    write_text_inside(out.parent, out / "index.html", with_contents(html))
    return Built(out / "index.html", [row["sentence"] for row in card],
                 [f"{c.verdict}: {c.claim}: {c.figure}" for c in checked])


def _first_screen(df: pd.DataFrame, card: list[dict], environments: list[dict], out: Path, svg: bool = False) -> dict:
    """The banner, the headline picture (headline.png) and the verdict beside it."""
    found = {"banner": headline.banner(df, environments) if len(df) else {}, "headline": None, "verdict": []}
    chosen = headline.axes(card)
    if chosen is None:
        found["no_headline"] = ("no headline picture: it needs an ok closed-model run with the tool's CPU and a p50 in "
                                "a shaped scenario (an RTT of 1 ms or more), e.g. make bench-quick")
        return found
    points = headline.points(card, chosen)
    held = (f"{len(points)} tools; x from {chosen.x_scenario}, y from {chosen.y_scenario}; "
            f"{found['banner'].get('repeats', '1')} repeat(s): "
            + ("whiskers: 95% intervals" if int(found["banner"].get("repeats", "1")) >= 3 else "no whiskers"))
    headline.draw(points, chosen, held, out, svg)
    left_out = headline.left_out(card, points, chosen)
    found.update(headline="headline.png", verdict=headline.verdict(points, chosen) + ([left_out] if left_out else []),
                 headline_held=held)
    return found


def _claim_counts(checked: list) -> dict[str, int]:
    counts = {v: sum(c.verdict == v for c in checked) for v in (claims.HOLDS, claims.DIFFERS, claims.NOT_MEASURED)}
    return {v: n for v, n in counts.items() if n}


def _tone(score: float | None) -> str:
    """A cell's background by its standing in its column: green best, red worst."""
    return "" if score is None else f"background: hsl({int(score * 120)}, 65%, 86%)"


SECTION = re.compile(r'<h2 id="([^"]+)">(.*?)</h2>', re.S)


def with_contents(page: str) -> str:
    """The table of contents: a link to every section (each <h2 id>), at the page's <!-- contents --> mark."""
    links = [f'<li><a href="#{sid}">{title}</a></li>' for sid, title in SECTION.findall(page)]
    return page.replace("<!-- contents -->", '<ol class="contents">' + "".join(links) + "</ol>", 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the HTML report of one or more results folders.",
                                     epilog="example: lth report results/latest (several folders: one report of all)")
    parser.add_argument("folders", nargs="*", type=Path, default=[REPO_ROOT / "results" / "latest"])
    parser.add_argument("--out", type=Path, help="report folder (default: FOLDER/report, or results/compare-<ts>/report)")
    parser.add_argument("--svg", action="store_true", help="every chart as SVG too (make report SVG=1)")
    args = parser.parse_args(argv)
    folders = [f.resolve() for f in args.folders]
    for folder in folders:
        if not (folder / "runs.csv").is_file():
            sys.stderr.write(f"error: {folder} has no runs.csv: pass a results folder (e.g. results/latest)\n")
            return 2
    if args.out:
        out = args.out
    elif len(folders) == 1:
        out = folders[0] / "report"
    else:
        out = folders[0].parent / f"compare-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}" / "report"
    try:
        with ExitStack() as held:       # no suite or rederive writes a folder while its report reads it
            for folder in folders:
                held.enter_context(folder_lock(folder))
            report = built(folders, out, args.svg)
    except (HarnessError, FutureSchema) as exc:   # FutureSchema: read before anything is written
        sys.stderr.write(f"error: {exc}\n")
        return 2
    print(f"report: {report.page}")      # then the first screen's answer, in the log too
    print(f"scorecard ({out / 'scorecard.csv'}):\n" + "\n".join(f"  {line}" for line in report.sentences))
    print(f"the study's claims ({out / 'claims.csv'}):\n" + "\n".join(f"  {line}" for line in report.verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
