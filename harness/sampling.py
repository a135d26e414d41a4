"""Memory and CPU of a tool's processes, sampled with ``top -b -d 1`` (the study's method).

top lists every process once a second; each frame is summed over the pids that belong to the
tool at that moment (a callable supplies them, so forked workers and container processes are
followed). top's first frame has no meaningful %CPU, so its CPU figure is dropped.

Other process groups (the target's Nginx, a Toxiproxy) are read from the same frames, so both
sides of a run are sampled at the same instants by one top. A frame that arrives after a stall
(more than STALL_S after the previous one: seen in Docker with both cores saturated) carries a
%CPU for an interval top did not measure consistently (382% on two cores), so its CPU figure is
left out of the average and counted in ``Usage.cpu_frames_dropped``; the other frames are weighted
by the time since their previous frame.

A frame in which the group's processes hold no memory (summed RSS 0: the tool exiting or a zombie,
or a process gone between the pid listing and top's frame) is no reading of their memory: it is
left out of the memory figures and counted in ``Usage.mem_frames_dropped`` (issue 35: such a last
frame pulled a 3 s run's average down by a quarter).

The memory check reads VmRSS of the same pids right after top printed a frame, so after top read it and
before top reads the next one. Memory moves in between (oha keeps every result: 7 MiB/s; a tool that stopped
its users frees memory as it exits), so the check is judged against the range top itself saw over that
interval: this frame's RSS and the next resident frame's (``check_span``). A frame with no resident frame
after it has no such range and holds no check.
"""
from __future__ import annotations

import csv
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean, linear_regression
from typing import Callable

import psutil

from harness.processes import end_process

PidSource = Callable[[], set[int]]
# One CPU's summary from top -1; fields can touch ("0.0 ni,100.0 id"), several CPUs share a line.
_NUM = r"(\d+(?:\.\d+)?)"
_CPU_IDLE = re.compile(rf"%Cpu(\d+)\s*:.*?{_NUM}\s*id,.*?{_NUM}\s*hi,\s*{_NUM}\s*si")
MemoryCheck = Callable[[set[int]], "float | None"]   # an independent MiB figure for the same pids
STALL_S = 1.5   # a frame later than this after the previous one follows a stall (interval 1 s)
MIN_GROWTH_FRAMES = 3   # a slope over two frames is their difference: one frame's noise
_UNITS_KIB = {"k": 1, "m": 1024, "g": 1024**2, "t": 1024**3, "p": 1024**4}


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


@dataclass(frozen=True)
class Usage:
    mem_avg_mb: float | None
    mem_peak_mb: float | None
    cpu_avg_pct: float | None
    samples: int
    mem_outside_peak_mb: float | None = None   # peak before/after the load window (start-up, report)
    max_gap_s: float = 0.0                     # longest time between two frames (top can stall)
    cpu_frames_dropped: int = 0                # frames after a stall, left out of cpu_avg_pct
    mem_frames_dropped: int = 0                # frames in the window with RSS 0 (exiting), left out of memory
    mem_growth_mb_per_s: float | None = None   # RSS's least-squares slope over the window's frames (3 at least)
    check_top_mb: float | None = None          # the last frame in the window with a memory check and a
    check_next_top_mb: float | None = None     # resident frame after it: top's RSS there and one frame later,
    check_mb: float | None = None              # and the independent figure read between the two


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


def resident(sample: Sample) -> bool:
    """Whether the frame read the processes' memory: they were listed and held some."""
    return sample.processes > 0 and sample.rss_mb > 0


def growth(frames: list[Sample]) -> float | None:
    """How fast RSS rose over these frames, MiB/s (least squares; None below MIN_GROWTH_FRAMES or one instant):
    a tool whose memory grows with the requests served (Node's heap, a per-request log kept in RAM) rises
    steadily at a fixed VU count."""
    if len(frames) < MIN_GROWTH_FRAMES or len({f.t_s for f in frames}) < 2:
        return None
    return linear_regression([f.t_s for f in frames], [f.rss_mb for f in frames]).slope


def check_span(top_mb: float, next_top_mb: float, check_mb: float) -> float:
    """How far the check lies outside the range top read around it, relative to the nearer end (0 inside)."""
    low, high = sorted((top_mb, next_top_mb))
    if check_mb > high:
        return check_mb / high - 1
    return check_mb / low - 1 if check_mb < low else 0.0


def summarise(samples: list[Sample], window: tuple[float, float] | None = None) -> Usage:
    """Average and peak over the samples in the load ``window`` (seconds since launch; all
    samples when None); the peak outside it is kept apart. Memory counts resident frames only."""
    alive = [s for s in samples if s.processes > 0]
    inside = [s for s in alive if window is None or window[0] <= s.t_s <= window[1]]
    outside_peak = max((s.rss_mb for s in alive if s not in inside and resident(s)), default=None)
    if not inside:
        return Usage(None, None, None, 0, outside_peak)
    since = {id(b): b.t_s - a.t_s for a, b in zip(samples, samples[1:])}   # time each frame covers
    # An exiting process's last frame keeps its CPU: top measured it over an interval the process ran in.
    rated = [s for s in inside if not s.first_frame and id(s) in since]
    kept = [s for s in rated if since[id(s)] <= STALL_S]
    weight = sum(since[id(s)] for s in kept)
    gaps = [b.t_s - a.t_s for a, b in zip(alive, alive[1:])]
    memory = [s for s in inside if resident(s)]
    # A check of 0 read the processes gone or exiting after top's frame: no reading (as an RSS of 0 is none).
    following = {id(a): b for a, b in zip(samples, samples[1:]) if resident(b)}
    checked = [s for s in memory if s.rss_check_mb and id(s) in following]
    return Usage(
        mem_avg_mb=fmean(s.rss_mb for s in memory) if memory else None,
        mem_peak_mb=max((s.rss_mb for s in memory), default=None),
        cpu_avg_pct=sum(s.cpu_pct * since[id(s)] for s in kept) / weight if weight else None,
        samples=len(inside),
        mem_outside_peak_mb=outside_peak,
        max_gap_s=max(gaps, default=0.0),
        cpu_frames_dropped=len(rated) - len(kept),
        mem_frames_dropped=len(inside) - len(memory),
        mem_growth_mb_per_s=growth(memory),
        check_top_mb=checked[-1].rss_mb if checked else None,
        check_next_top_mb=following[id(checked[-1])].rss_mb if checked else None,
        check_mb=checked[-1].rss_check_mb if checked else None,
    )


def allowed_cpus(pid: int) -> dict | None:
    """The process's name, thread count and the Cpus_allowed_list of every one of its threads
    (distinct lists joined by ' | '): JVM and worker threads are checked, not just the main one."""
    lists, threads = set(), 0
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        for task in Path(f"/proc/{pid}/task").iterdir():
            status = (task / "status").read_text()
            lists.update(line.split(":", 1)[1].strip() for line in status.splitlines()
                         if line.startswith("Cpus_allowed_list:"))
            threads += 1
    except OSError:
        pass
    return {"name": name, "threads": threads, "cpus": " | ".join(sorted(lists))} if lists else None


def vmrss_mb(pids: set[int]) -> float | None:
    """Summed VmRSS of /proc/<pid>/status (None when no process could be read). A process without a
    VmRSS line (a zombie: exited, not yet reaped) holds no memory and is no reading: counted as 0, it made
    k6's last check 0.0 MiB against top's 65 MiB read a moment before it exited."""
    total, read = 0, 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as handle:
                rss = next((int(line.split()[1]) for line in handle if line.startswith("VmRSS:")), None)
        except (OSError, ValueError):
            continue
        if rss is not None:
            total, read = total + rss, read + 1
    return total / 1024 if read else None


SAMPLER_NICE = -5   # top and the thread reading it: a load on every CPU must not starve the sampling


def _raise_priority(task_id: int) -> None:
    """Frames are timed and their pids resolved when read: a reader starved for seconds under a load
    filling both CPUs (seen in CI: one frame in a 3 s run, read after the tool had exited) loses them.
    Root only; elsewhere the default priority stays."""
    try:
        os.setpriority(os.PRIO_PROCESS, task_id, SAMPLER_NICE)
    except (PermissionError, ProcessLookupError):
        pass


class TopSampler:
    """``pids`` is the tool; ``others`` are further groups sampled from the same frames;
    ``check`` reads the tool's memory independently of top at every frame."""

    def __init__(self, pids: PidSource, interval_s: float = 1.0, others: dict[str, PidSource] | None = None,
                 check: MemoryCheck | None = None, command: list[str] | None = None, local: bool = True):
        """``command``: top as run on another machine (``local`` False: its pids are not this
        machine's, so their CPU affinity is not read here)."""
        self._sources = {"": pids, **(others or {})}
        self._interval_s = interval_s
        self._check = check
        self._command = command
        self._local = local
        self.groups: dict[str, list[Sample]] = {name: [] for name in self._sources}
        self.samples: list[Sample] = self.groups[""]
        # The CPUs each sampled process (all its threads) was allowed, read at every frame.
        self.affinity: dict[str, dict[int, dict]] = {name: {} for name in self._sources}
        self.cpu_busy: list[CpuFrame] = []
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "TopSampler":
        local = ["top", "-b", "-d", str(self._interval_s), "-w", "512", "-e", "k", "-1"]
        self._proc = subprocess.Popen(
            self._command or local, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=None if self._command else {"LC_ALL": "C", "TERM": "dumb"}, start_new_session=bool(self._command),
        )
        if not self._command:
            _raise_priority(self._proc.pid)
        self._started = time.monotonic()
        self._first_frame = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def wait_first_frame(self, timeout_s: float) -> bool:
        """Whether top has printed a frame yet, waiting up to ``timeout_s``."""
        return self._first_frame.wait(timeout_s)

    def restart_clock(self) -> None:
        """Count t_s from now (the tool's launch) for the frames recorded from here on; a frame
        printed before gets a negative t_s, outside any load window."""
        self._started = time.monotonic()

    def cpu_since(self, seconds: float) -> float | None:
        """The tool's average %CPU over the frames of the last ``seconds`` (None: no such frame yet)."""
        now = time.monotonic() - self._started
        recent = [s.cpu_pct for s in list(self.samples) if not s.first_frame and s.t_s >= now - seconds]
        return fmean(recent) if recent else None

    def __exit__(self, *exc) -> None:
        if self._proc:   # it may block writing to a pipe nobody reads: never hang a run
            end_process(self._proc, grace_s=5)
        if self._thread:
            self._thread.join(timeout=5)

    def _read(self) -> None:
        _raise_priority(threading.get_native_id())
        columns: list[str] | None = None
        frame: list[list[str]] = []
        wanted: dict[str, set[int]] = {}
        check: float | None = None
        frame_at = self._started
        first = True
        for line in self._proc.stdout:
            if line.startswith("top -"):
                if columns is not None:
                    self._record(frame_at, columns, frame, wanted, first, check)
                    first = False
                # top prints a frame at once: the tool's pids as of its header are the frame's pids.
                columns, frame = None, []
                wanted = {name: source() for name, source in self._sources.items()}
                # Read now, next to top's own reading of the frame (_record runs a frame later; affinity after).
                check = self._check(wanted[""]) if self._check and wanted[""] else None
                if self._local:
                    self._note_affinity(wanted)
                frame_at = time.monotonic()
                self._first_frame.set()
            elif line.startswith("%Cpu"):
                try:
                    self._note_cpus(frame_at - self._started, first, line)
                except ValueError:   # a summary line top laid out otherwise: the processes still count
                    pass
            elif line.lstrip().startswith("PID "):
                columns = line.split()
            elif columns is not None and line.strip():
                frame.append(line.split(None, len(columns) - 1))
        if columns is not None:
            self._record(frame_at, columns, frame, wanted, first, check)

    def _note_cpus(self, frame_t: float, first: bool, line: str) -> None:
        """top -1 prints every CPU's summary (several per line when the width allows): 100 - idle."""
        for cpu, idle, hi, si in _CPU_IDLE.findall(line):
            self.cpu_busy.append(CpuFrame(round(frame_t, 3), int(cpu), 100 - float(idle), first, float(hi) + float(si)))

    def _note_affinity(self, wanted: dict[str, set[int]]) -> None:
        """Every frame: a process may exec (shell -> JVM) or start threads after it was first seen."""
        for name, pids in wanted.items():
            for pid in pids:
                seen, now = self.affinity[name].get(pid), allowed_cpus(pid)
                if now is not None and seen is not None:
                    cpus = sorted(set(seen["cpus"].split(" | ")) | set(now["cpus"].split(" | ")))
                    now = {"name": now["name"], "threads": max(seen["threads"], now["threads"]), "cpus": " | ".join(cpus)}
                if now is not None:
                    self.affinity[name][pid] = now

    def _record(self, frame_at: float, columns: list[str], rows: list[list[str]], wanted: dict[str, set[int]],
                first: bool, check: float | None) -> None:
        pid_i, res_i, cpu_i = columns.index("PID"), columns.index("RES"), columns.index("%CPU")
        for name, pids in wanted.items():
            mine = [r for r in rows if len(r) > cpu_i and r[pid_i].isdigit() and int(r[pid_i]) in pids]
            self.groups[name].append(Sample(
                t_s=round(frame_at - self._started, 3),
                rss_mb=sum(parse_kib(r[res_i]) for r in mine) / 1024,
                cpu_pct=sum(float(r[cpu_i].replace(",", ".")) for r in mine),
                processes=len(mine),
                first_frame=first,
                rss_check_mb=check if not name and mine else None,
            ))

    def write_csv(self, path: Path, group: str = "") -> None:
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["t_s", "rss_mb", "cpu_pct", "processes", "first_frame", "rss_check_mb"])
            for s in self.groups[group]:
                check = "" if s.rss_check_mb is None else f"{s.rss_check_mb:.3f}"
                writer.writerow([s.t_s, f"{s.rss_mb:.3f}", f"{s.cpu_pct:.1f}", s.processes, int(s.first_frame), check])


def busy_pct(cpu_busy: list[CpuFrame], cpus: tuple[int, ...], window: tuple[float, float] | None,
             irq: bool = False) -> float | None:
    """How busy the CPUs in ``cpus`` were (any process, the kernel too) over the window, on average;
    with ``irq``, the part spent in interrupts."""
    frames = [f for f in cpu_busy if f.cpu in cpus and not f.first_frame
              and (window is None or window[0] <= f.t_s <= window[1])]
    return fmean(f.irq_pct if irq else f.busy_pct for f in frames) if frames else None


def read_csv(path: Path) -> list[Sample]:
    """A samples.csv back into samples (older files lack rss_check_mb)."""
    with path.open(newline="") as handle:
        return [Sample(float(r["t_s"]), float(r["rss_mb"]), float(r["cpu_pct"]), int(r["processes"]),
                       r["first_frame"] == "1", float(r["rss_check_mb"]) if r.get("rss_check_mb") else None)
                for r in csv.DictReader(handle)]
