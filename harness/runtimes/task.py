"""One generator task contract, whatever engine schedules the tasks (Docker Swarm here: swarm.py).

A run of N tasks: the harness splits the load as for generator hosts (runtimes/together.py split_evenly,
in the runner), and each task, a container of the tool's own image running task_agent.pl, connects to
the run's ``Coordinator`` (a TCP server in the harness, on an address every node reaches), says it is
ready and gets its index, the tool's folder (generator.py ``bundle``) and its own command line; once it has
unpacked them it says ``armed``. When all N are armed the coordinator sends ``go`` to each (the start
barrier: no clock is shared between the machines, the coordinator's own clock stamps when each task said
it had started its tool). While the tool
runs the task sends a memory and CPU sample of its process tree every second; at its end the exit status
and its run folder (stdout.txt, stderr.txt, the tool's files), which ``TaskSession.finish`` unpacks into
the part's folder: from there the runner derives each part's row and merges them (row/merge.py), as for
generator hosts.

Docker 20.10 numbers the tasks of a replicated job inconsistently (one task of two got the node's id as its
``{{.Task.Slot}}``), so the index is the order in which the tasks said ready.
"""
from __future__ import annotations

import io
import json
import secrets
import socket
import subprocess
import tarfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

from harness.cpus import CpuSplit
from harness.errors import HarnessError
from harness.runtimes.base import Session
from harness.runtimes.generator import there
from harness.runtimes.together import StartBarrier
from harness.sampling import MemoryCheck, PidSource, TopSampler
from harness.store.samples import Sample
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter

AGENT = Path(__file__).with_name("task_agent.pl")
TASK_WORKDIR = "/tmp/lth-task"       # where task_agent.pl unpacks the bundle (repo/) and runs the tool (run/)
READY_TIMEOUT_S = 120.0              # from the service's creation to every task ready (an image start on each node)
TASK_RECORD = "task.json"            # beside each part's output: which task ran it, when it said ready and started
# The start barrier's window: every task's tool starts within it of the first one's (go goes to every task
# within a few ms; each task forks its tool on receiving it and says so). Seen on this 2-core VM: 20-100 ms
# idle, once over 0.5 s with other benchmarks running (load average 7). The e2e test holds the runtime to it.
START_WINDOW_S = 1.0


@dataclass
class TaskState:
    """One task as the coordinator saw it; times on the harness's clock (time.time())."""
    index: int
    task: str = ""
    node: str = ""
    peer: str = ""
    connected_at: float | None = None   # said `ready`: connected, before its bundle and command
    ready_at: float | None = None       # said `armed`: set up, waiting for `go` at the barrier
    go_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    error: str | None = None
    samples: list[Sample] = field(default_factory=list, repr=False)
    files: bytes = field(default=b"", repr=False)
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    started: threading.Event = field(default_factory=threading.Event, repr=False)

    def record(self) -> dict:
        kept = ("index", "task", "node", "peer", "connected_at", "ready_at", "go_at", "started_at", "ended_at", "exit_code", "error")
        return {**{name: getattr(self, name) for name in kept}, "samples": len(self.samples)}


@dataclass(frozen=True)
class Payload:
    """What one task receives: the bundle (tar) and its command line, already rewritten for the task."""
    bundle: bytes
    argv: list[str]


class Coordinator:
    """The run's barrier and mailbox: N tasks connect, get their payloads, start together, report back."""

    def __init__(self, bind: str, payloads: list[Payload], port: int = 0, token: str | None = None):
        """``port`` 0: any free one; ``token``: the run's secret (None: a new one), fixed when rendered ahead."""
        self.payloads, self.token = payloads, token or secrets.token_hex(8)
        self.tasks = [TaskState(i) for i in range(len(payloads))]
        self._barrier = StartBarrier(len(payloads), READY_TIMEOUT_S)
        self._lock, self._next = threading.Lock(), 0
        self._conns: dict[int, socket.socket] = {}
        self._server = socket.create_server((bind, port))
        self.address = f"{bind}:{self._server.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, peer = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, peer[0]), daemon=True).start()

    def _claim(self, words: list[str], peer: str) -> TaskState | None:
        """The next index for a task that said ``ready <token> <task> <node>`` (None: not one of ours)."""
        if len(words) != 4 or words[0] != "ready" or words[1] != self.token:
            return None
        with self._lock:
            if self._next >= len(self.tasks):
                return None
            state, self._next = self.tasks[self._next], self._next + 1
        state.task, state.node, state.peer, state.connected_at = words[2], words[3], peer, time.time()
        return state

    def _serve(self, conn: socket.socket, peer: str) -> None:
        reader = conn.makefile("rb")
        state = self._claim(reader.readline(200).decode(errors="replace").split(), peer)
        if state is None:
            conn.close()
            return
        self._conns[state.index] = conn
        try:
            self._hand_over(conn, state)
            if reader.readline(100).strip() != b"armed":
                raise OSError("the task did not set up its tool (no `armed`): see its stderr.txt")
            state.ready_at = time.time()
            self._barrier.wait()
            conn.sendall(b"go\n")
            state.go_at = time.time()
            self._report(reader, state)
        except (OSError, ValueError, threading.BrokenBarrierError) as exc:
            state.error = state.error or f"task {state.task or state.index} on {state.node or peer}: {type(exc).__name__}: {exc}"
            self._barrier.abort()
        finally:
            state.started.set()
            state.done.set()
            conn.close()

    def _hand_over(self, conn: socket.socket, state: TaskState) -> None:
        payload = self.payloads[state.index]
        argv = "\0".join(payload.argv).encode()
        conn.sendall(f"index {state.index} {len(self.tasks)}\nbundle {len(payload.bundle)}\n".encode()
                     + payload.bundle + f"argv {len(argv)}\n".encode() + argv)

    def _report(self, reader: IO[bytes], state: TaskState) -> None:
        """The task's lines until its ``exit`` and ``files``."""
        while line := reader.readline(1000).decode(errors="replace"):
            words = line.split()
            if words[:1] == ["started"]:
                state.started_at = time.time()
                state.started.set()
            elif words[:1] == ["sample"] and len(words) == 6:
                t_s, rss_kib, cpu, count, first = words[1:]
                state.samples.append(Sample(t_s=float(t_s), rss_mb=int(rss_kib) / 1024, cpu_pct=float(cpu),
                                            processes=int(count), first_frame=first == "1"))
            elif words[:1] == ["exit"]:
                state.exit_code, state.ended_at = int(words[1]), time.time()
                size = int(reader.readline(100).split()[1])
                state.files = reader.read(size)
                self._conns[state.index].sendall(b"bye\n")
                return
        raise OSError("the task's connection ended before its tool's exit status")

    def wait_started(self, index: int, timeout_s: float) -> TaskState:
        """Task ``index`` once its tool started (or it failed); a task that never said ready is an error."""
        state = self.tasks[index]
        if not state.started.wait(timeout_s):
            self._barrier.abort()
            state.error = f"task {index + 1} of {len(self.tasks)} did not report ready within {timeout_s:.0f} s"
        if state.started_at is None:
            raise HarnessError(state.error or f"task {index + 1} did not start its tool")
        return state

    def stop(self, index: int) -> None:
        conn = self._conns.get(index)
        if conn is not None:
            try:
                conn.sendall(b"stop\n")
            except OSError:
                pass

    def spread_s(self) -> float | None:
        """The start barrier's spread: the latest task's start less the earliest's (the harness's clock)."""
        starts = [t.started_at for t in self.tasks]
        return None if None in starts else round(max(starts) - min(starts), 4)

    def barrier(self) -> dict:
        """The run's barrier as seen here: when the last task said ready, and the spread of the starts."""
        ready = [t.ready_at for t in self.tasks if t.ready_at is not None]
        return {"tasks": len(self.tasks), "last_ready_at": max(ready) if ready else None,
                "start_spread_s": self.spread_s(), "window_s": START_WINDOW_S, "clock": "the harness's (time.time())"}

    def close(self) -> None:
        self._closed = True
        self._barrier.abort()
        self._server.close()
        for conn in list(self._conns.values()):
            try:
                conn.close()
            except OSError:
                pass


class TaskProcess:
    """A task's tool as the runner's ``execute`` waits for it (the parts of subprocess.Popen it uses)."""

    def __init__(self, state: TaskState):
        self.state, self.pid = state, -1 - state.index

    @property
    def returncode(self) -> int | None:
        if not self.state.done.is_set():
            return None
        return self.state.exit_code if self.state.exit_code is not None else -1

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self.state.done.wait(timeout):
            raise subprocess.TimeoutExpired(f"task {self.state.index + 1}", timeout or 0)
        return self.returncode


class TaskSampler(TopSampler):
    """The samples the task's agent sends (VmRSS and CPU of the tool's process tree, once a second)."""

    def __init__(self, state: TaskState):
        super().__init__(lambda: set())
        self.groups = {"": state.samples}
        self.samples = state.samples

    def __enter__(self) -> "TaskSampler":
        self._started = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        pass


class TaskRun:
    """One run's N tasks: the payloads gathered from the N parts' ``popen``, then the engine's launch."""

    def __init__(self, parts: int, adapter: ToolAdapter, bind: str, launch: Callable[["Coordinator"], None]):
        self.parts, self.adapter, self.bind, self._launch = parts, adapter, bind, launch
        self._argvs: dict[int, list[str]] = {}
        self._ready = StartBarrier(parts, READY_TIMEOUT_S)   # every part's command in, before the launch
        self.coordinator: Coordinator | None = None
        self.error: str | None = None

    def submit(self, index: int, argv: list[str], run_dir: Path) -> TaskState:
        """Part ``index``'s command; the last part to submit launches the tasks; every part then waits for its
        task's tool to start (all together, past the barrier)."""
        self._argvs[index] = [there(arg, TASK_WORKDIR + "/repo", run_dir, TASK_WORKDIR + "/run") for arg in argv]
        try:
            if self._ready.wait() == 0:
                self._start()
            self._ready.wait()
        except threading.BrokenBarrierError:
            raise HarnessError(self.error or "another generator task of this run failed to start") from None
        return self.coordinator.wait_started(index, READY_TIMEOUT_S)

    def _start(self) -> None:
        from harness.runtimes.generator import bundle
        try:
            data = bundle([self.adapter])
            self.coordinator = Coordinator(self.bind, [Payload(data, self._argvs[i]) for i in range(self.parts)])
            self._launch(self.coordinator)
        except BaseException as exc:
            self.error = str(exc)
            self._ready.abort()
            raise

    def close(self) -> None:
        self._ready.abort()
        if self.coordinator is not None:
            self.coordinator.close()


class TaskSession(Session):
    """Part ``index`` of a run whose tools run as engine tasks; ``checks`` is where the harness itself
    reaches the target (its published port): the TechEmpower check and the RTT probe go there."""

    memory_check_name = "none (VmRSS summed by the task's agent from /proc: the only reading there)"

    def __init__(self, run: TaskRun, index: int, target: Target, checks: Target, cpus: int, where: str,
                 version: Callable[[ToolAdapter], str]):
        self.run, self.index, self.target, self.checks, self.cpus = run, index, target, checks, cpus
        self.where, self._version = where, version
        self.generator_netns, self.target_netns, self.shape_netns = [], [], []
        self.shape_device = self.capture_device = ""
        self.split = CpuSplit(tuple(range(cpus)), reason="engine tasks: every CPU of their node")
        self._state: TaskState | None = None
        self._run_dir: Path | None = None

    def popen(self, argv: list[str], stdout: IO, stderr: IO, run_dir: Path | None = None) -> subprocess.Popen:
        self._run_dir = run_dir
        self._state = self.run.submit(self.index, argv, run_dir or Path("/nonexistent"))
        return TaskProcess(self._state)   # type: ignore[return-value]   (what execute uses of a Popen)

    def pids(self, proc: subprocess.Popen) -> PidSource:
        return lambda: set() if proc.poll() is not None else {proc.pid}

    def sampler(self, pids: PidSource, others: dict[str, PidSource], check: MemoryCheck | None) -> TopSampler:
        return TaskSampler(self._state)

    def memory_check(self, pids: set[int]) -> float | None:
        return None

    def stop(self, proc: subprocess.Popen, pids: set[int]) -> None:
        """The task's agent stops the tool (TERM, then KILL 5 s later), then reports as at a normal end."""
        self.run.coordinator.stop(self.index)
        if not self._state.done.wait(30):
            self._state.error = "the task did not report within 30 s of its stop"
            self._state.done.set()

    def finish(self, proc: subprocess.Popen) -> None:
        """The task's run folder, unpacked into the part's folder, and task.json beside it."""
        state, run_dir = self._state, self._run_dir
        if state is None or run_dir is None:
            return
        if state.files:
            with tarfile.open(fileobj=io.BytesIO(state.files)) as tar:
                tar.extractall(run_dir, filter="data")
        if state.error:
            with (run_dir / "stderr.txt").open("a") as err:
                err.write(f"\nharness: {state.error}\n")
        record = {**state.record(), "barrier": self.run.coordinator.barrier()}
        (run_dir / TASK_RECORD).write_text(json.dumps(record, indent=2) + "\n")

    def verify(self, target: Target) -> None:
        self.checks.verify()

    def run_python(self, script: Path, args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
        """The RTT probe, from here to the target's published port (the images have no python3)."""
        if args[:2] == [self.target.host, str(self.target.port)]:
            args = [self.checks.host, str(self.checks.port), *args[2:]]
        return super().run_python(script, args, timeout)

    def version(self, adapter: ToolAdapter) -> str:
        return self._version(adapter)
