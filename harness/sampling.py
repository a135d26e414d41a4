"""Memory and CPU of a tool's processes, sampled with ``top -b -d 1`` (the study's method).

top lists every process once a second; each frame is summed over the pids that belong to the
tool at that moment (a callable supplies them, so forked workers and container processes are
followed). top's first frame has no meaningful %CPU, so its CPU figure is dropped.

Other process groups (the target's Nginx, a Toxiproxy) are read from the same frames, so both
sides of a run are sampled at the same instants by one top. The memory check reads VmRSS of the same
pids right after top printed a frame (after top read it, before top reads the next one). The frames
are stored (harness/store/samples.py); the figures are derived from them (harness/row/usage.py).
"""
from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Callable

import psutil

from harness.processes import cpu_ns, end_process
from harness.store.samples import CpuFrame, Sample, write_csv

PidSource = Callable[[], set[int]]
# One CPU's summary from top -1; fields can touch ("0.0 ni,100.0 id"), several CPUs share a line.
_NUM = r"(\d+(?:\.\d+)?)"
_CPU_IDLE = re.compile(rf"%Cpu(\d+)\s*:.*?{_NUM}\s*id,.*?{_NUM}\s*hi,\s*{_NUM}\s*si")
MemoryCheck = Callable[[set[int]], "float | None"]   # an independent MiB figure for the same pids
_UNITS_KIB = {"k": 1, "m": 1024, "g": 1024**2, "t": 1024**3, "p": 1024**4}


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


@dataclass(frozen=True)
class ProcStatus:
    """What the reader needs of /proc/<pid>/status, read once a frame: its name (top's COMMAND), its thread
    count, its main thread's CPUs and its VmRSS (None: a zombie, which holds no memory)."""
    name: str
    threads: int
    cpus: str
    rss_kib: int | None = None


# The fields read, picked from the file's bytes at once: parsing each of its ~55 lines as text took the reader
# twice as long, on the tool's CPUs (issue 53).
_STATUS_FIELDS = re.compile(rb"^(Name|Threads|Cpus_allowed_list|VmRSS):[ \t]*(.*)$", re.M)


def _status_fields(path: str) -> dict[bytes, bytes]:
    with open(path, "rb") as handle:
        return dict(_STATUS_FIELDS.findall(handle.read()))


def proc_status(pid: int) -> ProcStatus | None:
    """One read of /proc/<pid>/status (~50 us here, where the reader shares the tool's CPUs); None when gone."""
    try:
        fields = _status_fields(f"/proc/{pid}/status")
        rss = fields.get(b"VmRSS")
        return ProcStatus(fields[b"Name"].decode(errors="replace"), int(fields[b"Threads"]),
                          fields[b"Cpus_allowed_list"].decode().strip(), int(rss.split()[0]) if rss else None)
    except (OSError, KeyError, ValueError):
        return None


def _pid_of(line: str) -> int | None:
    first = line.split(None, 1)[0]
    return int(first) if first.isdigit() else None


def rows_of(columns: list[str], rows: list[list[str]], pids: set[int], names: dict[int, str | None]) -> list[list[str]]:
    """top's rows of ``pids``, less any whose COMMAND is not the name the pid had when the pids were resolved
    (``names``; a pid not in it is kept). top reads /proc before it prints; a process that exec'd in between
    was another program in its row: a wrapper's vfork child, not yet the wrapped tool, lists the wrapper's
    memory (a 200 MB ballast counted for a 20 MB tool, seen in CI)."""
    pid_i, cpu_i = columns.index("PID"), columns.index("%CPU")
    command_i = columns.index("COMMAND") if "COMMAND" in columns else None
    mine = []
    for row in rows:
        if len(row) <= cpu_i or not row[pid_i].isdigit() or int(row[pid_i]) not in pids:
            continue
        now = names.get(int(row[pid_i]))
        if command_i is not None and len(row) > command_i and now is not None and row[command_i].rstrip() != now:
            continue
        mine.append(row)
    return mine


def parse_kib(text: str) -> float:
    """top's RES column in KiB; top adds a unit suffix when the number does not fit."""
    unit = text[-1].lower()
    if unit in _UNITS_KIB:
        return float(text[:-1]) * _UNITS_KIB[unit]
    return float(text)


def allowed_cpus(pid: int) -> dict | None:
    """The process's name, thread count and the Cpus_allowed_list of every one of its threads
    (distinct lists joined by ' | '): JVM and worker threads are checked, not just the main one."""
    lists, threads = set(), 0
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
        for task in os.listdir(f"/proc/{pid}/task"):
            cpus = _status_fields(f"/proc/{pid}/task/{task}/status").get(b"Cpus_allowed_list")
            if cpus is not None:
                lists.add(cpus.decode().strip())
            threads += 1
    except OSError:
        pass
    return {"name": name, "threads": threads, "cpus": " | ".join(sorted(lists))} if lists else None


def vmrss_mb(pids: set[int]) -> float | None:
    """Summed VmRSS of /proc/<pid>/status (None when no process could be read). A process without a
    VmRSS line (a zombie: exited, not yet reaped) holds no memory and is no reading: counted as 0, it made
    k6's last check 0.0 MiB against top's 65 MiB read a moment before it exited."""
    return _summed_rss([proc_status(pid) for pid in pids])


def _summed_rss(statuses: list[ProcStatus | None]) -> float | None:
    read = [s.rss_kib for s in statuses if s is not None and s.rss_kib is not None]
    return sum(read) / 1024 if read else None


SAMPLER_NICE = -5   # top and the thread reading it: a load on every CPU must not starve the sampling
# ... and they never cut into the tool's turn on waking: the kernel's wakeup preemption skips SCHED_BATCH, which
# keeps the nice level's share of a busy CPU (issue 53: the observer shares the tool's CPUs during a load).
SAMPLER_POLICY = os.SCHED_BATCH
TOP_ENV = {"LC_ALL": "C", "TERM": "dumb"}   # top's frames as the reader parses them


def top_command(interval_s: float = 1.0) -> list[str]:
    """top as the harness runs it on this machine: batch mode, every process, wide lines, memory in KiB, each CPU's
    summary (the overhead check's --by-hand-top runs the same beside a tool by hand)."""
    return ["top", "-b", "-d", str(interval_s), "-w", "512", "-e", "k", "-1"]


def _raise_priority(task_id: int) -> None:
    """Frames are timed and their pids resolved when read: a reader starved for seconds under a load
    filling both CPUs (seen in CI: one frame in a 3 s run, read after the tool had exited) loses them.
    The priority is root's only; elsewhere the default priority stays (the batch policy is anyone's)."""
    for set_it in (lambda: os.sched_setscheduler(task_id, SAMPLER_POLICY, os.sched_param(0)),
                   lambda: os.setpriority(os.PRIO_PROCESS, task_id, SAMPLER_NICE)):
        try:
            set_it()
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
        self.top_cpu_ns: int | None = None   # top's own CPU, read as it is ended (this machine's top only)
        self.top_cpus: str | None = None     # the CPUs top was allowed then, as the kernel says

    def __enter__(self) -> "TopSampler":
        self._proc = subprocess.Popen(
            self._command or top_command(self._interval_s), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=None if self._command else TOP_ENV, start_new_session=bool(self._command),
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
            if not self._command:
                self.top_cpu_ns = cpu_ns(self._proc.pid)
                self.top_cpus = (allowed_cpus(self._proc.pid) or {}).get("cpus")
            end_process(self._proc, grace_s=5)
        if self._thread:
            self._thread.join(timeout=5)

    def _read(self) -> None:
        _raise_priority(threading.get_native_id())
        columns: list[str] | None = None
        frame: list[list[str]] = []
        wanted: dict[str, set[int]] = {}
        names: dict[int, str | None] = {}
        check: float | None = None
        pid_first, every = False, set()
        frame_at = self._started
        first = True
        for line in self._proc.stdout:
            if line.startswith("top -"):
                if columns is not None:
                    self._record(frame_at, columns, frame, wanted, names, first, check)
                    first = False
                # top prints a frame at once: the tool's pids as of its header are the frame's pids.
                columns, frame = None, []
                wanted = {name: source() for name, source in self._sources.items()}
                statuses = {pid: proc_status(pid) for pids in wanted.values() for pid in pids} if self._local else {}
                names = {pid: status.name if status else None for pid, status in statuses.items()}
                # Read now, next to top's own reading of the frame (_record runs a frame later; affinity after).
                check = self._memory_check(wanted[""], statuses)
                if self._local:
                    self._note_affinity(wanted, statuses)
                frame_at = time.monotonic()
                self._first_frame.set()
            elif line.startswith("%Cpu"):
                try:
                    self._note_cpus(frame_at - self._started, first, line)
                except ValueError:   # a summary line top laid out otherwise: the processes still count
                    pass
            elif line.lstrip().startswith("PID "):
                columns = line.split()
                # only the rows of the frame's pids are split into fields (top lists every process)
                pid_first, every = columns[0] == "PID", set().union(*wanted.values())
            elif columns is not None and line.strip() and (not pid_first or _pid_of(line) in every):
                frame.append(line.split(None, len(columns) - 1))
        if columns is not None:
            self._record(frame_at, columns, frame, wanted, names, first, check)

    def _memory_check(self, pids: set[int], statuses: dict[int, ProcStatus | None]) -> float | None:
        """The check's figure for the tool's pids. VmRSS here is in the status files the frame has just read:
        summed from them, not read again."""
        if not self._check or not pids:
            return None
        if self._check is vmrss_mb and self._local:
            return _summed_rss([statuses.get(pid) for pid in pids])
        return self._check(pids)

    def _note_cpus(self, frame_t: float, first: bool, line: str) -> None:
        """top -1 prints every CPU's summary (several per line when the width allows): 100 - idle."""
        for cpu, idle, hi, si in _CPU_IDLE.findall(line):
            self.cpu_busy.append(CpuFrame(round(frame_t, 3), int(cpu), 100 - float(idle), first, float(hi) + float(si)))

    def _note_affinity(self, wanted: dict[str, set[int]], statuses: dict[int, ProcStatus | None]) -> None:
        """Every frame: a process may exec (shell -> JVM) or start threads after it was first seen. Each thread's
        CPUs are read when a process is new, renamed or has more threads than seen (~70 us a thread, on the tool's
        CPUs: 1.6 ms a frame for every thread of 2 processes, issue 53); otherwise its main thread's, from the
        status the frame read anyway (a thread inherits its creator's CPUs)."""
        for name, pids in wanted.items():
            for pid in pids:
                seen, status = self.affinity[name].get(pid), statuses.get(pid)
                if status is None:
                    continue
                if seen is None or seen["name"] != status.name or status.threads > seen["threads"]:
                    now = allowed_cpus(pid)
                else:
                    now = {"name": status.name, "threads": status.threads, "cpus": status.cpus}
                if now is not None and seen is not None:
                    cpus = sorted(set(seen["cpus"].split(" | ")) | set(now["cpus"].split(" | ")))
                    now = {"name": now["name"], "threads": max(seen["threads"], now["threads"]), "cpus": " | ".join(cpus)}
                if now is not None:
                    self.affinity[name][pid] = now

    def _record(self, frame_at: float, columns: list[str], rows: list[list[str]], wanted: dict[str, set[int]],
                names: dict[int, str | None], first: bool, check: float | None) -> None:
        res_i, cpu_i = columns.index("RES"), columns.index("%CPU")
        for name, pids in wanted.items():
            mine = rows_of(columns, rows, pids, names)
            self.groups[name].append(Sample(
                t_s=round(frame_at - self._started, 3),
                rss_mb=sum(parse_kib(r[res_i]) for r in mine) / 1024,
                cpu_pct=sum(float(r[cpu_i].replace(",", ".")) for r in mine),
                processes=len(mine),
                first_frame=first,
                rss_check_mb=check if not name and mine else None,
            ))

    def write_csv(self, path: Path, group: str = "") -> None:
        write_csv(path, self.groups[group])
