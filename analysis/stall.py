"""The coordinated-omission test in the report (issue 13): what each tool saw of the stall.

Rows of stall scenarios only. The expected figures come from runs.csv (harness/row/stall.py computes
them from the rate, the stall as it happened and the measured RTT).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from analysis.figures import save  # noqa: E402
from analysis.numbers import number  # noqa: E402

EXPLANATION = (
    "The target (every Nginx process) was frozen with SIGSTOP for stall_ms, stall_at_s after the tool's launch, "
    "then resumed with SIGCONT. Expected figures (harness/row/stall.py): requests intended at k / rate; one intended at "
    "t during the stall waits stall_end - t, then one RTT (the measured RTT); every other one takes one RTT. So "
    "p99 = RTT + stall x (0.99 - (1 - f)) / f with f = stall / duration, max = RTT + stall, computed exactly over "
    "the discrete schedule (nearest-rank). Open-model rows use the target rate; closed-model rows the rate the tool "
    "achieved (what it would have had to send had the stall not held its users back). Verdict: 'p99 shows it' = "
    "reported p99 at least half the expected p99; 'max only' = p99 below that but max within 10% of the stall; "
    "'hidden' = neither."
)
COLUMNS = ["scenario", "tool", "model", "rate_target_rps", "rate_achieved_rps", "rate_ok", "lat_p50_ms",
           "lat_p99_ms", "lat_max_ms", "expected_p99_ms", "expected_max_ms", "stall_actual_ms", "verdict"]


def stall_rows(df: pd.DataFrame) -> pd.DataFrame:
    if "stall_ms" not in df:
        return df.iloc[0:0]
    return df[df["stall_ms"].notna() & (df["status"] == "ok")]


def verdict(row: pd.Series) -> str:
    if pd.isna(row["lat_p99_ms"]) or pd.isna(row["expected_p99_ms"]):
        return "n/a"
    if row["lat_p99_ms"] >= 0.5 * row["expected_p99_ms"]:
        return "p99 shows it"
    if not pd.isna(row["lat_max_ms"]) and row["lat_max_ms"] >= 0.9 * row["stall_actual_ms"]:
        return "max only"
    return "hidden"


def stall_table(df: pd.DataFrame) -> list[dict]:
    rows = stall_rows(df)
    if rows.empty:
        return []
    table = []
    for _, row in rows.sort_values(["scenario", "label"]).iterrows():
        cells = {c: row.get(c) for c in COLUMNS}
        cells["tool"] = row["label"]
        cells["model"] = (f"open, ≤ {row['vus']:,.0f} connections" if not pd.isna(row["rate_target_rps"])
                          else f"closed, {row['vus']:.0f} users")
        cells["verdict"] = verdict(row)
        table.append({c: number(v) for c, v in cells.items()})
    return table


def stall_chart(df: pd.DataFrame) -> plt.Figure | None:
    rows = stall_rows(df)
    if rows.empty:
        return None
    scenarios = list(rows.drop_duplicates("scenario").sort_values("rtt_target_ms")["scenario"])
    labels = sorted(rows["label"].unique())
    fig, axes = plt.subplots(1, len(scenarios), figsize=(max(9.0, 6.5 * len(scenarios)), 2.2 + 0.45 * len(labels)),
                             squeeze=False)
    stall_ms = rows["stall_ms"].iloc[0]
    fig.suptitle(f"What each tool saw of a {stall_ms:g} ms stall: reported p99 and max vs the expected figures\n"
                 "(expected: from the rate, the stall and the measured RTT, harness/row/stall.py; source: runs.csv)",
                 fontsize=10, x=0.01, ha="left")
    for scenario, ax in zip(scenarios, axes.flat):
        subset = rows[rows["scenario"] == scenario].groupby("label").median(numeric_only=True).reindex(labels)
        y = np.arange(len(labels))
        ax.barh(y - 0.2, subset["lat_p99_ms"], height=0.4, color="tab:blue", label="reported p99")
        ax.barh(y + 0.2, subset["lat_max_ms"], height=0.4, color="tab:orange", label="reported max")
        ax.scatter(subset["expected_p99_ms"], y - 0.2, marker="D", s=30, color="black", zorder=3, label="expected p99")
        ax.scatter(subset["expected_max_ms"], y + 0.2, marker="D", s=30, color="tab:red", zorder=3, label="expected max")
        ax.set_yticks(y, labels, fontsize=8)
        ax.invert_yaxis()
        rtt = rows[rows["scenario"] == scenario]["rtt_target_ms"].iloc[0]
        ax.set_title(f"{scenario} (RTT {rtt:g} ms)", fontsize=9)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.set_xlabel("ms (log)", fontsize=8)
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="lower center", fontsize=8, ncol=4)
    fig.tight_layout(rect=(0, 0.08, 1, 0.9))
    return fig


def write_stall_chart(df: pd.DataFrame, out: Path, svg: bool = False) -> bool:
    """stall.png (and stall.svg with ``svg``) in ``out``; False when the results hold no successful stall run."""
    figure = stall_chart(df)
    if figure is None:
        return False
    save(figure, out, "stall", svg)
    return True
