"""A generator task's results as it printed them to its own log (task_agent.pl with LTH_LOG_RESULTS=1, which the
Kubernetes Job sets), read back from what `kubectl logs` gives, and written as the part folder a task leaves
through the coordinator (task.py TaskSession.finish plus what the runner's execute writes): the tool's files
(stdout.txt, stderr.txt, its own), samples.csv, execution.json and task.json.

The block in the log, between other lines (the agent's own messages, kubectl's):

    lth-task-results <index> <parts> <exit code> <launched> <ended> <task> <node>   (epoch seconds, whole)
    sample <t_s> <VmRSS KiB> <cpu %> <processes> <first frame>               (as sent to the coordinator)
    files <bytes>
    <the run folder as a tar.gz, uuencoded: perl's pack 'u'>
    lth-task-results-end <index>
"""
from __future__ import annotations

import binascii
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError
from harness.runtimes.task import TASK_RECORD
from harness.store.record import SAMPLES, STDERR, STDOUT, Execution, save_execution
from harness.store.samples import Sample, write_csv

BEGIN, END = "lth-task-results", "lth-task-results-end"


@dataclass
class LoggedTask:
    """One task's results as its log holds them."""
    index: int                     # the coordinator's: which command it ran
    parts: int
    exit_code: int
    launched_at: float
    ended_at: float
    task: str                      # the engine's name for it (the Job's completion index)
    node: str
    samples: list[Sample] = field(default_factory=list)
    files: bytes = b""             # the run folder, tar.gz

    def execution(self, folder: Path) -> Execution:
        return Execution(exit_code=self.exit_code, timed_out=False, wall_s=float(self.ended_at - self.launched_at),
                         launched_at=self.launched_at, samples=self.samples,
                         stdout=_text(folder / STDOUT), stderr=_text(folder / STDERR))


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


def _sample(words: list[str]) -> Sample:
    t_s, rss_kib, cpu, count, first = words[1:]
    return Sample(t_s=float(t_s), rss_mb=int(rss_kib) / 1024, cpu_pct=float(cpu), processes=int(count),
                  first_frame=first == "1")


def _head(line: str, where: str) -> LoggedTask:
    words = line.split()
    if len(words) != 8 or not all(w.isdigit() for w in words[1:6]):
        raise HarnessError(f"{where}: a `{BEGIN}` line that is not the agent's: {line[:80]!r}")
    index, parts, code, launched, ended = (int(w) for w in words[1:6])
    return LoggedTask(index, parts, code, float(launched), float(ended), words[6], words[7])


def _files(lines: list[str], size: int, where: str) -> bytes:
    try:
        data = b"".join(binascii.a2b_uu(line) for line in lines)
    except binascii.Error as exc:
        raise HarnessError(f"{where}: the task's files do not decode ({exc}): was the log cut?") from None
    if len(data) != size:
        raise HarnessError(f"{where}: the task's files are {len(data)} bytes of {size}: was the log cut "
                           "(the kubelet rotates a container's log past 10 MiB by default)?")
    return data


def read_log(text: str, where: str) -> list[LoggedTask]:
    """Every results block in one log (a file may hold several tasks' logs, e.g. kubectl logs of a label)."""
    found: list[LoggedTask] = []
    task: LoggedTask | None = None
    size, encoded = -1, []
    for line in text.splitlines():
        if task is None:
            if line.startswith(BEGIN + " "):
                task, size, encoded = _head(line, where), -1, []
        elif line.startswith(END):
            task.files = _files(encoded, size, where)
            found.append(task)
            task = None
        elif size >= 0:
            encoded.append(line)
        elif line.startswith("sample "):
            task.samples.append(_sample(line.split()))
        elif line.startswith("files "):
            size = int(line.split()[1])
    if task is not None:
        raise HarnessError(f"{where}: task {task.index}'s results block has no end: the task did not finish, "
                           "or the log was cut")
    return found


def read_logs(paths: list[Path]) -> list[LoggedTask]:
    """Each index's block once, in index order, from the logs; a missing or repeated index is an error."""
    tasks: dict[int, LoggedTask] = {}
    for path in paths:
        for task in read_log(path.read_text(errors="replace"), str(path)):
            if task.index in tasks:
                raise HarnessError(f"{path}: task {task.index}'s results are in two logs: pass each pod's log once")
            tasks[task.index] = task
    if not tasks:
        raise HarnessError(f"no `{BEGIN}` block in {', '.join(map(str, paths)) or 'no file'}: the Job's pods print "
                           "one each at their end (LTH_LOG_RESULTS=1); gather their logs with kubectl logs --tail=-1")
    parts = {t.parts for t in tasks.values()}
    missing = sorted(set(range(max(parts))) - set(tasks))
    if len(parts) != 1 or missing:
        raise HarnessError(f"the logs hold tasks {sorted(tasks)} of {max(parts)}: task(s) {missing} missing "
                           "(a pod's log not gathered, or a task that never ended)")
    return [tasks[i] for i in sorted(tasks)]


def write_part(task: LoggedTask, folder: Path, barrier: dict | None = None) -> Execution:
    """The task's part folder as a Swarm task leaves it: its files, samples.csv, execution.json, task.json."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(task.files), mode="r:*") as tar:
            tar.extractall(folder, filter="data")
    except tarfile.TarError as exc:
        raise HarnessError(f"task {task.index}'s files in its log are no tar.gz the agent wrote ({exc})") from None
    execution = task.execution(folder)
    write_csv(folder / SAMPLES, task.samples)
    save_execution(execution, folder)
    record = {"index": task.index, "task": task.task, "node": task.node, "exit_code": task.exit_code, "launched_at": task.launched_at,
              "ended_at": task.ended_at, "samples": len(task.samples), "source": "the pod's log (kubectl logs)",
              **({"barrier": barrier} if barrier else {})}
    (folder / TASK_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return execution
