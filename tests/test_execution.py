"""harness/suite/execution.py: a stop that fails on the way out of Ctrl-C must not swallow the Ctrl-C
(CI saw `harness run` end with exit 1 instead of 130 when an ssh stop script went unanswered)."""
import subprocess
import sys

import pytest

from harness.errors import HarnessError
from harness.suite.execution import _stop_keeping_the_cause


class UnansweredStop:
    def stop(self, proc, pids):
        raise HarnessError("ssh://root@198.18.2.2: no answer over ssh within 60 s")


def test_an_interrupt_survives_a_failing_stop(capsys):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(KeyboardInterrupt):
        try:
            raise KeyboardInterrupt
        except BaseException:
            _stop_keeping_the_cause(UnansweredStop(), proc, lambda: {proc.pid})
            raise
    assert "stopping the tool failed (ssh://root@198.18.2.2: no answer" in capsys.readouterr().err


# --- the harness's observation during a load (issue 53): held to the tool's CPUs, and its cost recorded ------------
import os
import re
import threading
import time
from pathlib import Path

from harness.cpus import CpuSplit, format_cpus, observer_on
from harness.processes import cpu_ns, ended_within
from harness.runtimes.host import HostSession
from harness.store.record import EXECUTION, load_execution
from harness.suite.execution import execute
from harness.targets.file_server import Target

CPUS = tuple(sorted(os.sched_getaffinity(0)))


def test_the_observer_is_held_to_the_cpus_asked_with_what_it_starts_and_let_go_after():
    before = os.sched_getaffinity(0)
    seen = {}
    with observer_on(CPUS[-1:]):
        seen["thread"] = os.sched_getaffinity(0)
        started = threading.Thread(target=lambda: seen.setdefault("child thread", os.sched_getaffinity(0)))
        started.start()
        started.join()
        seen["child"] = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                                       capture_output=True, text=True).stdout.strip()
    assert seen["thread"] == seen["child thread"] == {CPUS[-1]}
    assert seen["child"] == str([CPUS[-1]])
    assert os.sched_getaffinity(0) == before
    with observer_on(()):                       # no isolation: anywhere, untouched
        assert os.sched_getaffinity(0) == before
    with observer_on((1023,)):                  # a CPU this machine lacks: observed from where it is, no error
        assert os.sched_getaffinity(0) == before
    assert os.sched_getaffinity(0) == before


def test_a_process_cpu_time_is_read_to_the_nanosecond_and_a_gone_one_is_none():
    start = cpu_ns()
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert cpu_ns() - start >= 40_000_000            # 50 ms of work, at 10 ms ticks' worst
    assert cpu_ns(2 ** 22 + 7) is None             # above pid_max's default: no such process


@pytest.mark.skipif(len(CPUS) < 2 or not os.path.exists("/usr/bin/top"), reason="two CPUs and top")
def test_a_runs_observation_is_held_to_the_tools_cpus_and_its_cost_recorded(tmp_path):
    # a real top sampling a real process (the tool's place taken by a 1.5 s busy loop) through the host session
    split = CpuSplit(available=CPUS, target=CPUS[:1], tool=CPUS[1:])
    session = HostSession(Target("198.18.0.2"), split, stack=None)
    busy = "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass"
    execution = execute(session, [sys.executable, "-c", busy], tmp_path, timeout_s=30)
    observer = execution.observer
    assert observer.cpus == format_cpus(CPUS[1:])                 # top's own affinity, read from the kernel
    assert 0 < observer.top_cpu_s < observer.wall_s and 0 <= observer.harness_cpu_s < observer.wall_s
    assert 1.4 < observer.wall_s < 30
    assert 0 < observer.share() < 1
    assert load_execution(tmp_path).observer == observer          # kept in execution.json
    assert '"observer": {"cpus"' in (tmp_path / EXECUTION).read_text()
    assert os.sched_getaffinity(0) == set(CPUS)                    # the harness let go after the load


def _wakeups(action) -> int:
    """The calling thread's voluntary context switches (each a sleep it woke from) during ``action()``."""
    def switches() -> int:
        status = Path(f"/proc/self/task/{threading.get_native_id()}/status").read_text()
        return int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.MULTILINE).group(1))
    before = switches()
    action()
    return switches() - before


def test_the_tool_is_waited_for_asleep_not_by_polling_on_its_cpus():
    """Popen.wait(timeout) wakes every 50 ms at most, on the tool's CPUs during a load; each wake-up preempted the
    tool (1.2% of wrk's rate, issue 53). ended_within sleeps in the kernel until the process ends or time is up."""
    child = subprocess.Popen(["sleep", "5"])
    try:
        polled = _wakeups(lambda: pytest.raises(subprocess.TimeoutExpired, child.wait, timeout=1.0))
        started = time.monotonic()
        asleep = _wakeups(lambda: not ended_within(child, 1.0) or pytest.fail("sleep 5 ended within 1 s"))
        assert 0.9 <= time.monotonic() - started < 3.0
        assert polled >= 10 and asleep <= 2, (polled, asleep)    # the control, then the kernel's one wake-up
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
    quick = subprocess.Popen(["sleep", "0.2"])
    assert ended_within(quick, 10.0) and quick.returncode == 0       # reaped at its end, not at the timeout
    assert ended_within(quick, 0.0)                                  # reaped before: ended


def test_a_stand_in_without_a_pid_here_is_waited_for_its_own_way():
    class TaskStandIn:                        # harness/runtimes/task.py TaskProcess: negative pid, its own wait
        pid, waited = -1, []

        def wait(self, timeout=None):
            self.waited.append(timeout)
            raise subprocess.TimeoutExpired("task", timeout)
    stand_in = TaskStandIn()
    assert ended_within(stand_in, 0.5) is False and stand_in.waited == [0.5]
