"""`make compare A=... B=...`: two results folders (two machines, two tool versions, Docker and host),
per tool and scenario the change of B against A with its 95% interval and a verdict.

    python -m analysis.compare A B [--out DIR]

Prints the table and writes compare.csv and the report of both folders to DIR (default
results/compare-<UTC timestamp>/). The ratio is
median(B) / median(A) over each side's ok repetitions, its interval a bootstrap of both sides
(analysis/uncertainty.py): "faster" or "slower" only when the interval excludes 1, else "no significant
change"; a side with one run has no interval and so no verdict.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from analysis.load import load_results, scenario_order
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


def _print(lines: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def build(folders: list[Path], out: Path) -> Path:
    from analysis.report import build as report    # the report imports this module (its Docker/host table)
    return report(folders, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare results folder B against A, with intervals.")
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--out", type=Path, help="folder for compare.csv (default: results/compare-<timestamp>)")
    args = parser.parse_args(argv)
    for name, folder in (("A", args.a), ("B", args.b)):
        if not (folder / "runs.csv").is_file():
            sys.stderr.write(f"error: {name}={folder} has no runs.csv: pass two results folders, "
                             f"e.g. make compare A=results/<one> B=results/<other>\n")
            return 2
    a, b = load_results(args.a), load_results(args.b)
    result = compare(a, b)
    if result.empty:
        sys.stderr.write(f"error: {args.a} and {args.b} share no (tool, scenario): nothing to compare\n")
        return 2
    order = {s: i for i, s in enumerate(scenario_order(pd.concat([a, b])))}
    result = result.sort_values(["scenario", "tool"], key=lambda c: c.map(order) if c.name == "scenario" else c)
    out = args.out or args.a.resolve().parent / f"compare-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"
    out.mkdir(parents=True, exist_ok=True)
    result.to_csv(out / "compare.csv", index=False)
    print(f"B = {args.b.resolve().name} against A = {args.a.resolve().name}: median(B) / median(A) - 1, "
          "95% bootstrap interval over the repetitions")
    _print(table(result))
    print(f"compare.csv: {out / 'compare.csv'}")
    print(f"report of both: {build([args.a.resolve(), args.b.resolve()], out / 'report')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
