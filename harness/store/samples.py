"""A run's top frames as stored: samples.csv (the tool) and samples-<group>.csv (the target's Nginx, a
proxy), one row per frame, summed over the group's processes; the CPUs' busy shares go to execution.json
(harness/store/record.py). harness/sampling.py records them, harness/row/usage.py derives the figures."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ["t_s", "rss_mb", "cpu_pct", "processes", "first_frame", "rss_check_mb"]


@dataclass(frozen=True)
class Sample:
    t_s: float          # seconds since sampling started
    rss_mb: float       # summed resident set size, MiB
    cpu_pct: float      # summed %CPU (100 = one core)
    processes: int
    first_frame: bool
    rss_check_mb: float | None = None   # the same processes' memory read another way (VmRSS, cgroup)


@dataclass(frozen=True)
class CpuFrame:
    t_s: float
    cpu: int
    busy_pct: float     # 100 - idle, every process and the kernel
    first_frame: bool
    irq_pct: float = 0.0   # hardware + software interrupts (the network stack's packet work)


def write_csv(path: Path, samples: list[Sample]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for s in samples:
            check = "" if s.rss_check_mb is None else f"{s.rss_check_mb:.3f}"
            writer.writerow([s.t_s, f"{s.rss_mb:.3f}", f"{s.cpu_pct:.1f}", s.processes, int(s.first_frame), check])


def read_csv(path: Path) -> list[Sample]:
    """A samples.csv back into samples (older files lack rss_check_mb)."""
    with path.open(newline="") as handle:
        return [Sample(float(r["t_s"]), float(r["rss_mb"]), float(r["cpu_pct"]), int(r["processes"]),
                       r["first_frame"] == "1", float(r["rss_check_mb"]) if r.get("rss_check_mb") else None)
                for r in csv.DictReader(handle)]
