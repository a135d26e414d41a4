"""`make compare A=... B=...`: two results folders (two machines, two tool versions, Docker and host),
per tool and scenario the change of B against A with its 95% interval and a verdict.

    python -m analysis.compare A B [--out DIR] [--fail-on slower]

Prints the table and writes compare.csv and the report of both folders to DIR (default
results/compare-<UTC timestamp>/). The ratio is
median(B) / median(A) over each side's ok repetitions, its interval a bootstrap of both sides
(analysis/uncertainty.py): "faster" or "slower" only when the interval excludes 1, else "no significant
change"; a side with one run has no interval and so no verdict.

Exit status: 0; 2 on bad input (one line); with ``--fail-on slower``, GATE_FAILED (3) when B is measurably slower
than A for any tool and scenario (a verdict "slower": RPS lower or a latency higher, the 95% interval clear of
1), so that CI can gate on it as on k6's thresholds.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from analysis.change import METRICS, compare, table

GATE_FAILED = 3     # a gate (--fail-on) failed: distinct from a harness error (1) and from bad input (2)
from analysis.load import load_results, scenario_order
from analysis.report import build
from harness.store.safe import make_dir_inside, write_text_inside


def _print(lines: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare results folder B against A, with intervals.",
                                     epilog="example: lth compare results/<host folder> results/<docker folder> "
                                            "--fail-on slower")
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--out", type=Path, help="folder for compare.csv (default: results/compare-<timestamp>)")
    parser.add_argument("--fail-on", choices=["slower"], help=f"exit {GATE_FAILED} when B is measurably slower than A "
                        "(any tool and scenario: RPS lower or a latency higher, intervals apart)")
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
    make_dir_inside(out.parent, out)
    write_text_inside(out.parent, out / "compare.csv", result.to_csv(index=False))
    print(f"B = {args.b.resolve().name} against A = {args.a.resolve().name}: median(B) / median(A) - 1, "
          "95% bootstrap interval over the repetitions")
    _print(table(result))
    print(f"compare.csv: {out / 'compare.csv'}")
    print(f"report of both: {build([args.a.resolve(), args.b.resolve()], out / 'report')}")
    if args.fail_on == "slower" and (slower := slower_lines(result)):
        sys.stderr.write(f"compare: B is measurably slower than A ({len(slower)}): " + "; ".join(slower) + "\n")
        return GATE_FAILED
    return 0


def slower_lines(result: pd.DataFrame) -> list[str]:
    """"tool scenario metric" for every verdict "slower" (its interval clear of 1)."""
    return [f"{r['tool']} {r['scenario']} {metric} {r[f'{metric}_ratio'] - 1:+.0%}"
            for _, r in result.iterrows() for metric in METRICS if r[f"{metric}_verdict"] == "slower"]


if __name__ == "__main__":
    sys.exit(main())
