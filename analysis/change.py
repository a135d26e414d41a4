"""B against A per (tool, scenario): the ratio of medians of each metric over each side's ok repetitions,
its 95% bootstrap interval and a verdict (analysis/uncertainty.py ``change``). The report's Docker/host
table draws it; `make compare` (analysis/compare.py) prints it for two folders."""
from __future__ import annotations

import pandas as pd

from analysis.uncertainty import change

OK = "ok"
# metric: the words for a ratio above and below 1
METRICS = {"rps": ("faster", "slower"), "lat_p50_ms": ("slower", "faster"), "lat_p99_ms": ("slower", "faster")}


def compare(a: pd.DataFrame, b: pd.DataFrame, keys: tuple[str, ...] = ("tool", "scenario")) -> pd.DataFrame:
    """One row per key present on both sides: per metric the ratio, its interval and the verdict."""
    pairs = sorted(set(map(tuple, a[list(keys)].values)) & set(map(tuple, b[list(keys)].values)))
    # each key's ok runs by position, in the metrics' columns only: a selection of every column per key was
    # most of a report's Docker/host table
    a_ok, b_ok = (side.loc[side["status"] == OK, [*keys, *METRICS]] for side in (a, b))
    a_runs, b_runs = ({k if isinstance(k, tuple) else (k,): at for k, at in side.groupby(list(keys)).indices.items()}
                      for side in (a_ok, b_ok))
    rows = []
    for key in pairs:
        row = dict(zip(keys, key))
        side_a = a_ok.iloc[a_runs.get(key, [])]
        side_b = b_ok.iloc[b_runs.get(key, [])]
        row.update(runs_a=len(side_a), runs_b=len(side_b))
        for metric, (above, below) in METRICS.items():
            found = change(list(side_a[metric]), list(side_b[metric]))
            row[f"{metric}_ratio"] = found.ratio
            row[f"{metric}_low"] = found.low
            row[f"{metric}_high"] = found.high
            row[f"{metric}_verdict"] = {"higher": above, "lower": below}.get(found.verdict, found.verdict)
        rows.append(row)
    return pd.DataFrame(rows)


def _change_text(ratio: float, low: float | None, high: float | None) -> str:
    if pd.isna(ratio):
        return ""
    interval = "" if low is None or pd.isna(low) else f" ({low - 1:+.0%} to {high - 1:+.0%})"
    return f"{ratio - 1:+.0%}{interval}"


def table(result: pd.DataFrame) -> list[list[str]]:
    header = ["tool", "scenario", "runs A/B", *(f"{m} change (95%)" for m in METRICS), *(f"{m}" for m in METRICS)]
    lines = [header]
    for r in result.itertuples(index=False):
        r = r._asdict()
        lines.append([r["tool"], r["scenario"], f"{r['runs_a']}/{r['runs_b']}",
                      *(_change_text(r[f"{m}_ratio"], r[f"{m}_low"], r[f"{m}_high"]) for m in METRICS),
                      *(r[f"{m}_verdict"] for m in METRICS)])
    return lines
