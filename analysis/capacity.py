"""The capacity search and schedule fidelity in the report (issue 24).

- ``capacity_table``: per tool searched (capacity.json of each folder), the max sustained rate, what
  limited it, the steps and minutes the search took, and the CPU per 1,000 requests/s of both sides at
  that rate (from the step's row); the closed-loop reference (wrk) beside them.
- ``latency_vs_rate``: each tool's p50 and p99 over the rates its search tried, the knee (the max
  sustained rate) marked and the SLO drawn.
- ``fidelity``: for rate runs with a capture, how evenly the requests left on the wire: the gaps' CV
  against the declared schedule's (uniform 0, Poisson 1) and the slowest 100 ms window against the rate.
Step rows (scenario ids ``capacity-...``) are kept out of the other charts: each is one rate, not a
scenario to compare tools in.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.figures import save  # noqa: E402

STEP_PREFIX = "capacity-"


def is_step(df: pd.DataFrame) -> pd.Series:
    return df["scenario"].astype(str).str.startswith(STEP_PREFIX)


def entries(folders: list[Path]) -> list[dict]:
    found = []
    for folder in folders:
        path = folder / "capacity.json"
        if path.is_file():
            found += [{**e, "folder": folder.name} for e in json.loads(path.read_text())]
    return found


def _step_row(steps: pd.DataFrame, entry: dict, rate: int | None) -> pd.Series | None:
    if rate is None:
        return None
    mine = steps[(steps["tool"] == entry["tool"]) & (steps["folder"] == entry["folder"])
                 & (steps["rate_target_rps"] == rate) & (steps["scenario"] == f"capacity-rate{rate}")]
    return mine.iloc[-1] if len(mine) else None


def _per_1k(cpu_pct: float, rps: float) -> str:
    return "" if pd.isna(cpu_pct) or not rps else f"{cpu_pct / 100 / (rps / 1000):.3f}"


def capacity_table(df: pd.DataFrame, found: list[dict]) -> list[dict]:
    """One row per capacity.json entry: what the page and the closing notes show."""
    rows = []
    for entry in found:
        if entry["kind"] == "search":
            rate = entry.get("max_sustained_rps")
            row = _step_row(df[is_step(df)], entry, rate)
            rps = row["rate_achieved_rps"] if row is not None else None
            limited = entry["limited_by"] + (" (target saturated at the max)" if entry.get("target_saturated_at_max")
                                             else "")
            shown = {"kind": "sustained-rate search", "max_rps": f"{rate:,}" if rate else "none",
                     "limited_by": limited,
                     "slo_p99_ms": f"{entry['slo_p99_ms']:.3g}" if entry.get("slo_p99_ms") else "",
                     "steps": entry.get("steps", 0), "stopped": entry.get("stopped_because", "")}
        else:
            rps = entry.get("closed_loop_rps")
            run = df[(df["tool"] == entry["tool"]) & (df["folder"] == entry["folder"])
                     & (df["scenario"] == f"capacity-closed-vu{entry['vus']}")]
            row = run.iloc[-1] if len(run) else None
            shown = {"kind": "closed-loop reference", "max_rps": f"{rps:,.0f}" if rps else entry.get("status", ""),
                     "limited_by": entry.get("limited_by") or "", "slo_p99_ms": "", "steps": 1,
                     "stopped": f"{entry['vus']} connections, {entry['step_duration_s']} s"}
        rows.append({"tool": entry["tool"], **shown, "minutes": f"{entry['wall_time_s'] / 60:.1f}",
                     "tool_cores_per_1k": _per_1k(row["cpu_avg_pct"], rps) if row is not None else "",
                     "target_cores_per_1k": _per_1k(row["target_cpu_pct"], rps) if row is not None else ""})
    return rows


class _PlainLog(matplotlib.ticker.LogFormatter):
    """A log axis labelled 600 and 0.4, not 6x10^2 and 4e-01 (a search spans about a decade): the ticks
    matplotlib would label, in plain numbers."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:g}" if super().__call__(x, pos) else ""


def latency_vs_rate(df: pd.DataFrame, found: list[dict]) -> plt.Figure | None:
    searches = [e for e in found if e["kind"] == "search" and e.get("steps")]
    steps = df[is_step(df) & (df["status"] == "ok") & df["rate_target_rps"].notna()]
    if not searches or steps.empty:
        return None
    cols = min(3, len(searches))
    rows = -(-len(searches) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.4 * rows + 0.8), squeeze=False)
    for ax in axes.flat[len(searches):]:
        ax.set_visible(False)
    for entry, ax in zip(searches, axes.flat):
        mine = steps[(steps["tool"] == entry["tool"]) & (steps["folder"] == entry["folder"])
                     & steps["scenario"].str.startswith("capacity-rate")].sort_values("rate_target_rps")
        ax.plot(mine["rate_target_rps"], mine["lat_p50_ms"], "o-", ms=3, label="p50")
        ax.plot(mine["rate_target_rps"], mine["lat_p99_ms"], "D-", ms=3, label="p99")
        if entry.get("slo_p99_ms"):
            ax.axhline(entry["slo_p99_ms"], color="grey", linestyle=":", linewidth=1, label="SLO (p99)")
        if entry.get("max_sustained_rps"):
            ax.axvline(entry["max_sustained_rps"], color="tab:red", linestyle="--", linewidth=1.2,
                       label=f"knee {entry['max_sustained_rps']:,} rps")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(_PlainLog())
            axis.set_minor_formatter(_PlainLog(labelOnlyBase=False, minor_thresholds=(2, 0.4)))
        ax.set_title(f"{entry['tool']} ({entry['folder']}): limited by {entry['limited_by']}", fontsize=9)
        ax.set_xlabel("arrival rate asked, requests/s (log)", fontsize=8)
        ax.set_ylabel("ms (log)", fontsize=8)
        ax.legend(fontsize=7)
    return _titled(fig, "Latency vs arrival rate: each capacity search's steps, the knee (max sustained rate) marked")


def _titled(fig: plt.Figure, title: str) -> plt.Figure:
    fig.suptitle(title, fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))    # ~0.45 in for the title
    return fig


def fidelity_rows(df: pd.DataFrame) -> pd.DataFrame:
    if "wire_gap_cv" not in df:
        return df.iloc[0:0]
    return df[(df["status"] == "ok") & df["wire_gap_cv"].notna() & df["rate_target_rps"].notna()]


def fidelity(df: pd.DataFrame) -> plt.Figure | None:
    """Per tool and rate: the gaps' CV (Poisson's 1 and uniform's 0 marked) and the slowest 100 ms window as a
    share of the rate asked."""
    rows = fidelity_rows(df)
    if rows.empty:
        return None
    rates = sorted(rows["rate_target_rps"].unique())
    labels = sorted(rows["label"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(12, 1.4 + 0.35 * len(labels) * len(rates) / 2 + 1), squeeze=False)
    gap_ax, window_ax = axes.flat
    height = 0.8 / len(rates)
    for i, rate in enumerate(rates):
        at = rows[rows["rate_target_rps"] == rate].groupby("label").median(numeric_only=True).reindex(labels)
        y = np.arange(len(labels)) - 0.4 + height * (i + 0.5)
        gap_ax.barh(y, at["wire_gap_cv"], height=height, label=f"{rate:,.0f} rps")
        window_ax.barh(y, at["wire_rate_min_window_rps"] / rate * 100, height=height, label=f"{rate:,.0f} rps")
    for ax in (gap_ax, window_ax):
        ax.set_yticks(np.arange(len(labels)), labels, fontsize=8)
        ax.invert_yaxis()
    gap_ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    gap_ax.set_xlabel("CV of the gaps between requests on the wire (uniform 0, Poisson 1)", fontsize=8)
    window_ax.axvline(100, color="grey", linestyle=":", linewidth=1)
    window_ax.set_xlabel("slowest 100 ms window, % of the rate asked", fontsize=8)
    gap_ax.legend(fontsize=7)
    return _titled(fig, "Schedule fidelity on the wire (--capture): how evenly each tool's requests left")


def fidelity_table(df: pd.DataFrame) -> list[dict]:
    rows = fidelity_rows(df)
    table = []
    for r in rows.sort_values(["label", "rate_target_rps"]).itertuples():
        table.append({"tool": r.label, "rate asked": f"{r.rate_target_rps:,.0f}",
                      "on the wire": f"{r.wire_rate_rps:,.0f}", "window CV": f"{r.wire_rate_cv:.2f}",
                      "slowest window": f"{r.wire_rate_min_window_rps:,.0f}", "gap CV": f"{r.wire_gap_cv:.2f}",
                      "verdict": r.wire_schedule or ""})
    return table


def write(df: pd.DataFrame, folders: list[Path], out: Path, svg: bool = False) -> dict:
    """The section's charts (PNG; SVG too with ``svg``) and tables; empty where the folders hold no search nor
    fidelity."""
    found = entries(folders)
    section = {"capacity": capacity_table(df, found), "fidelity": fidelity_table(df), "charts": []}
    for name, figure in (("latency_vs_rate", latency_vs_rate(df, found)), ("fidelity", fidelity(df))):
        if figure is None:
            continue
        save(figure, out, name, svg)
        section["charts"].append(name)
    return section
