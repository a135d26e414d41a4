"""Memory and CPU of a tool's processes, sampled with ``top -b -d 1`` (the study's method).

top lists every process once a second; each frame is summed over the pids that belong to the
tool at that moment (a callable supplies them, so forked workers and container processes are
followed). top's first frame has no meaningful %CPU, so its CPU figure is dropped.
"""
from __future__ import annotations

import csv
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Callable

import psutil

PidSource = Callable[[], set[int]]
_UNITS_KIB = {"k": 1, "m": 1024, "g": 1024**2, "t": 1024**3, "p": 1024**4}


@dataclass(frozen=True)
class Sample:
    t_s: float          # seconds since sampling started
    rss_mb: float       # summed resident set size, MiB
    cpu_pct: float      # summed %CPU (100 = one core)
    processes: int
    first_frame: bool


@dataclass(frozen=True)
class Usage:
    mem_avg_mb: float | None
    mem_peak_mb: float | None
    cpu_avg_pct: float | None
    samples: int
    mem_outside_peak_mb: float | None = None   # peak before/after the load window (start-up, report)
    max_gap_s: float = 0.0                     # longest time between two frames (top can stall)


def only_named(pids: PidSource, name: str) -> PidSource:
    """The processes called ``name`` among ``pids``, with their children: a wrapper script's shell
    and `timeout` are not the tool."""
    def source() -> set[int]:
        found, keep = pids(), set()
        for pid in found:
            try:
                process = psutil.Process(pid)
                if process.name() == name:
                    keep |= {pid, *(child.pid for child in process.children(recursive=True))}
            except psutil.NoSuchProcess:
                continue
        return keep & found
    return source


def parse_kib(text: str) -> float:
    """top's RES column in KiB; top adds a unit suffix when the number does not fit."""
    unit = text[-1].lower()
    if unit in _UNITS_KIB:
        return float(text[:-1]) * _UNITS_KIB[unit]
    return float(text)


def summarise(samples: list[Sample], window: tuple[float, float] | None = None) -> Usage:
    """Average and peak over the samples in the load ``window`` (seconds since launch; all
    samples when None); the peak outside it is kept apart."""
    alive = [s for s in samples if s.processes > 0]
    inside = [s for s in alive if window is None or window[0] <= s.t_s <= window[1]]
    outside = [s for s in alive if s not in inside]
    if not inside:
        return Usage(None, None, None, 0, max((s.rss_mb for s in outside), default=None))
    cpu = [s.cpu_pct for s in inside if not s.first_frame]
    gaps = [b.t_s - a.t_s for a, b in zip(alive, alive[1:])]
    return Usage(
        mem_avg_mb=fmean(s.rss_mb for s in inside),
        mem_peak_mb=max(s.rss_mb for s in inside),
        cpu_avg_pct=fmean(cpu) if cpu else None,
        samples=len(inside),
        mem_outside_peak_mb=max((s.rss_mb for s in outside), default=None),
        max_gap_s=max(gaps, default=0.0),
    )


class TopSampler:
    def __init__(self, pids: PidSource, interval_s: float = 1.0):
        self._pids = pids
        self._interval_s = interval_s
        self.samples: list[Sample] = []
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "TopSampler":
        self._proc = subprocess.Popen(
            ["top", "-b", "-d", str(self._interval_s), "-w", "512", "-e", "k"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={"LC_ALL": "C", "TERM": "dumb"},
        )
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(timeout=5)
        if self._thread:
            self._thread.join(timeout=5)

    def _read(self) -> None:
        columns: list[str] | None = None
        frame: list[list[str]] = []
        wanted: set[int] = set()
        frame_t = 0.0
        first = True
        for line in self._proc.stdout:
            if line.startswith("top -"):
                if columns is not None:
                    self._record(frame_t, columns, frame, wanted, first)
                    first = False
                # top prints a frame at once: the tool's pids as of its header are the frame's pids.
                columns, frame, wanted = None, [], self._pids()
                frame_t = time.monotonic() - self._started
            elif line.lstrip().startswith("PID "):
                columns = line.split()
            elif columns is not None and line.strip():
                frame.append(line.split(None, len(columns) - 1))
        if columns is not None:
            self._record(frame_t, columns, frame, wanted, first)

    def _record(self, frame_t: float, columns: list[str], rows: list[list[str]], wanted: set[int], first: bool) -> None:
        pid_i, res_i, cpu_i = columns.index("PID"), columns.index("RES"), columns.index("%CPU")
        mine = [r for r in rows if len(r) > cpu_i and r[pid_i].isdigit() and int(r[pid_i]) in wanted]
        self.samples.append(Sample(
            t_s=round(frame_t, 3),
            rss_mb=sum(parse_kib(r[res_i]) for r in mine) / 1024,
            cpu_pct=sum(float(r[cpu_i].replace(",", ".")) for r in mine),
            processes=len(mine),
            first_frame=first,
        ))

    def write_csv(self, path: Path) -> None:
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["t_s", "rss_mb", "cpu_pct", "processes", "first_frame"])
            for s in self.samples:
                writer.writerow([s.t_s, f"{s.rss_mb:.3f}", f"{s.cpu_pct:.1f}", s.processes, int(s.first_frame)])
