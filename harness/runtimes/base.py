"""What a runtime offers the runner: a target, and a way to start a tool and find its processes.
(``run`` is re-exported from harness/processes.py for the runtimes.)"""
from __future__ import annotations

import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterator

from harness.cpus import NO_SPLIT, CpuSplit
from harness.processes import end_process, run, stop_tool
from harness.runtimes.proxy_api import call_api
from harness.sampling import MemoryCheck, PidSource, TopSampler, only_named, vmrss_mb
from harness.targets import Setup
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter

if TYPE_CHECKING:
    from harness.scenarios import Scenario

# The stall test on a target on another machine (harness/suite/stall.py): stop the target there, hold it
# ``ms``, resume it, all in one call (the resume cannot be lost with the ssh session); returns the pids and
# the stall as timed there, ms.
RemoteFreeze = Callable[[int], tuple[set[int], float]]


@contextmanager
def undone_on_error(started: AbstractContextManager) -> Iterator[None]:
    """For an ``__enter__`` that starts several things: whatever fails (or Ctrl-C) undoes the
    part already started through ``started.__exit__`` before it propagates."""
    try:
        yield
    except BaseException:
        started.__exit__(None, None, None)
        raise


class Session(ABC):
    """One tool's place to run, with the target reachable at ``target``."""

    target: Target
    cpus: int                    # CPUs the tool may use: its set under isolation
    split: CpuSplit = NO_SPLIT
    memory_check_name = "VmRSS"  # what memory_check reads
    # Command prefixes that run a program in a network namespace (empty: the root namespace).
    generator_netns: list[str]   # where the tool runs (the RTT probe runs there too)
    target_netns: list[str]      # where Nginx runs (a latency proxy runs there)
    shape_netns: list[str]       # where netem is applied, on shape_device
    shape_device: str
    capture_device: str          # the generator's end of the link, in generator_netns (--capture)
    explicit_target: str | None = None   # the --target-host address: allowed to be loaded, this run only
    where = "this machine"               # where the tool runs, for meta.json (a generator host's URL)
    remote_freeze: "RemoteFreeze | None" = None   # the stall test on a target on another machine
    target_cores: int | None = None      # the target machine's CPUs when it is another machine

    @abstractmethod
    def popen(self, argv: list[str], stdout: IO, stderr: IO, run_dir: Path | None = None) -> subprocess.Popen:
        """Start the tool (``run_dir``: the run's folder, which argv names); the returned process
        ends when the tool ends."""

    @abstractmethod
    def pids(self, proc: subprocess.Popen) -> PidSource:
        """The tool's current processes (host pids), for sampling and for killing on timeout."""

    def sampled_pids(self, proc: subprocess.Popen, name: str | None) -> PidSource:
        """The processes memory and CPU count: ``name`` and its children when the tool is wrapped."""
        return only_named(self.pids(proc), name) if name else self.pids(proc)

    def sampler(self, pids: PidSource, others: dict[str, PidSource], check: MemoryCheck | None) -> TopSampler:
        """top, where the tool runs."""
        return TopSampler(pids, others=others, check=check)

    # A latency proxy (Toxiproxy) runs beside Nginx, on the target's CPUs, on one machine; on two
    # machines it runs beside the tool (the generator side), listening on that machine's loopback.
    proxy_beside_target = True

    def proxy_place(self) -> tuple[str, str]:
        """(the address the proxy listens on and the tool connects to, the address it forwards to)."""
        return self.target.host, "127.0.0.1"

    def start_proxy(self, argv: list[str], log: IO) -> subprocess.Popen:
        """Start the proxy server where proxy_place says; the returned process ends with it."""
        return subprocess.Popen([*self.target_netns, *argv], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def stop_proxy(self, proc: subprocess.Popen) -> None:
        end_process(proc)

    def proxy_api(self, host: str, port: int, method: str, path: str, body: dict | None = None) -> dict:
        """One call to the proxy's HTTP API (listening on ``host``:``port`` where the proxy runs)."""
        return call_api(host, port, method, path, body)

    def verify(self, target: Target) -> None:
        """The TechEmpower-style check of the target as the tool will address it, from here."""
        target.verify()

    def target_sampler(self) -> TopSampler | None:
        """top on the target's machine when that is another one (None: the tool's top sees Nginx too,
        through target_pids)."""
        return None

    def stop(self, proc: subprocess.Popen, pids: set[int]) -> None:
        """SIGTERM the tool's processes, then SIGKILL whatever is left after 5 s."""
        stop_tool(proc, pids)

    def finish(self, proc: subprocess.Popen) -> None:
        """The tool has ended: bring its output files to the run's folder (where they are elsewhere)."""

    def run_python(self, script: Path, args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
        """One of the harness's scripts (the RTT probe: standard library only, so -S skips site's start-up),
        run from where the tool runs."""
        return run([*self.generator_netns, sys.executable, "-S", str(script), *args], check=False, timeout=timeout)

    @abstractmethod
    def version(self, adapter: ToolAdapter) -> str:
        """The tool's version where it runs."""

    def save_logs(self, run_dir: Path) -> None:
        """Keep the target's log next to the run (where the runtime has one)."""

    def target_pids(self) -> set[int]:
        """The target's processes (host pids): Nginx's master and workers (and a proxy target's), sampled
        beside the tool's and frozen by the stall test (harness/suite/stall.py)."""
        return set()

    def proxy_pids(self) -> set[int]:
        """A proxy target's processes alone (empty: Nginx serves directly), sampled as their own group."""
        return set()

    # The tool's memory in MiB read another way than top, to cross-check it: a method of (pids) -> MiB or None.
    # Here VmRSS, given as the function itself: the sampler recognises it and sums the status files its frame read.
    memory_check = staticmethod(vmrss_mb)


class Runtime(AbstractContextManager, ABC):
    """Entered once per suite; ``session`` is entered once per run."""

    name: str
    split: CpuSplit = NO_SPLIT   # set by the runner before the runtime is entered
    generator_count = 1          # more: every run is split over that many generator hosts (sessions)
    netem_refused: str | None = None   # why this runtime never shapes with netem (None: it may)

    @abstractmethod
    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        """Cheap pre-flight checks: every problem found, each with its fix (empty: ready)."""

    def prepare(self, adapters: list[ToolAdapter]) -> dict[str, str]:
        """Build what the selected tools need; returns {tool: reason} for tools that cannot run
        (their runs become failed rows; the others go on)."""
        return {}

    @abstractmethod
    def session(self, adapter: ToolAdapter) -> AbstractContextManager[Session]:
        """A fresh place to run ``adapter`` against the target."""

    def sessions(self, adapter: ToolAdapter) -> list[Session]:
        """With generator_count > 1: one session per generator host, their tools released together."""
        raise NotImplementedError(f"the {self.name} runtime has one generator")

    @contextmanager
    def parts(self, adapter: ToolAdapter) -> Iterator[list[Session]]:
        """Every place one run's tool runs: one session, or one per generator host."""
        if self.generator_count > 1:
            yield self.sessions(adapter)
        else:
            with self.session(adapter) as session:
                yield [session]

    def describe(self) -> dict:
        """Runtime facts for the results' environment metadata."""
        return {}

    def cpu_columns(self) -> tuple[str, str]:
        """The rows' cpus_target and cpus_tool."""
        described = self.split.describe()
        return described["cpus_target"], described["cpus_tool"]

    def started_facts(self) -> dict:
        """Facts only known once the runtime is entered (the RTT between two hosts), added to
        the environment metadata."""
        return {}

    def unsupported_reason(self, scenario: "Scenario") -> str | None:
        """Why this runtime cannot run ``scenario`` yet (None: it can); such runs become rows
        with status unsupported."""
        if not self.any_target and not Setup.of(scenario).is_default:
            return (f"the {self.name} runtime serves only the plain Nginx target; target, tls, backend_delay_ms and "
                    "protocol run on the host and docker runtimes (targets/README.md)")
        return None

    target_ids: frozenset[str] = frozenset({"nginx"})   # the targets the suite's scenarios use (set by the runner)

    # Issue 23: True for a runtime that can start any targets/<id> stack (use_target); the others
    # serve the plain Nginx target only and give the other setups unsupported rows.
    any_target = False

    def use_target(self, setup: Setup) -> None:
        """Start ``setup``'s target stack for the runs that follow (a no-op when it is already running)."""

    def check_target(self) -> None:
        """The running stack serves the file with keep-alive, checked from this machine (where it can be)."""

    def target_facts(self) -> dict:
        """The running stack, for the rows: target_stack (what runs where) and target_version."""
        return {}
