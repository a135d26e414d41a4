"""netem beside Toxiproxy, the same tools and scenarios: what the fallback changes (docs/shaping.md: netem in a
VM). Reads two results folders' runs.csv and each run's shaping.json (kept in meta.json).

    python -m analysis.shapers results/netem-vm/netem/latest results/netem-vm/toxiproxy/latest
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from analysis.load import load_results

FIGURES = {"rtt_measured_ms": "RTT probe ms", "connect_ms": "handshake ms", "lat_p50_ms": "p50 ms",
           "lat_p99_ms": "p99 ms", "rps": "RPS", "target_cpu_pct": "target CPU %"}


def handshake_ms(folder: Path, run_dir: str) -> float | None:
    """The last calibration probe's fresh-connection time (harness/rtt_probe.py)."""
    shaping = json.loads((folder / run_dir / "meta.json").read_text()).get("shaping") or {}
    probes = shaping.get("probes") or []
    return probes[-1].get("connect_ms") if probes else None


def side_by_side(netem: Path, toxiproxy: Path) -> pd.DataFrame:
    """One row per (scenario, tool) run with both shapers; each figure as "netem / Toxiproxy"."""
    sides = []
    for folder in (netem, toxiproxy):
        df = load_results(folder)
        df = df[df["status"] == "ok"].copy()
        df["connect_ms"] = [handshake_ms(folder.resolve(), d) for d in df["run_dir"]]
        sides.append(df.set_index(["scenario", "tool"])[[*FIGURES, "limited_by"]])
    both = sides[0].merge(sides[1], left_index=True, right_index=True, suffixes=("_n", "_t"))
    return pd.DataFrame({label: [f"{_cell(n)} / {_cell(t)}" for n, t in zip(both[f"{c}_n"], both[f"{c}_t"])]
                         for c, label in {**FIGURES, "limited_by": "limited by"}.items()}, index=both.index)


def _cell(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return "-" if pd.isna(value) else f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def markdown(table: pd.DataFrame) -> str:
    header = "figures: netem / Toxiproxy\n\n"
    return header + table.reset_index().to_markdown(index=False, colalign=("left",) * (len(table.columns) + 2))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m analysis.shapers NETEM_FOLDER TOXIPROXY_FOLDER", file=sys.stderr)
        sys.exit(2)
    print(markdown(side_by_side(Path(sys.argv[1]), Path(sys.argv[2]))))
