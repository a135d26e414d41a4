"""One code path for a load spread over N generators (harness/runtimes/together.py, issue 52.4): the split that
ssh hosts, Swarm tasks and Kubernetes pods get, and the start barrier the ssh launcher and the coordinator share.
The ssh side runs its real launcher script (generator.py LAUNCH) with this machine's sh in place of ssh."""
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cpus import CpuSplit
from harness.errors import HarnessError
from harness.runtimes import task
from harness.runtimes.generator import RemoteGeneratorSession
from harness.runtimes.together import Share, StartBarrier, load_shares, split_evenly
from harness.scenarios import Scenario
from harness.targets.file_server import Target
from harness.tools.registry import discover


def test_every_carrier_splits_with_the_same_function():
    from harness.suite import run
    assert run.load_shares is load_shares                  # the runner's parts (ssh, Swarm) are this split's
    assert split_evenly(20, 3) == [7, 7, 6] and split_evenly(5, 5) == [1] * 5


def test_a_rate_is_split_for_an_open_model_tool_and_not_for_a_closed_one():
    tools = discover()
    open_tool = next(a for a in tools.values() if a.open_model)
    closed_tool = next(a for a in tools.values() if not a.open_model)
    scenario = Scenario(id="r", vus=10, rate_rps=1001, rtt_ms=0.1, duration_s=3)
    assert load_shares(scenario, open_tool, 3) == [Share(4, 334), Share(3, 334), Share(3, 333)]
    assert load_shares(scenario, closed_tool, 3) == [Share(4, None), Share(3, None), Share(3, None)]


def test_the_coordinator_uses_the_shared_barrier():
    coordinator = task.Coordinator("127.0.0.1", [task.Payload(b"", ["true"])] * 2)
    try:
        assert isinstance(coordinator._barrier, StartBarrier) and coordinator._barrier.parts == 2
    finally:
        coordinator.close()


# --- the ssh launcher, its real script run here by sh -----------------------------------------------------------
def local_session(tmp_path: Path, barrier: StartBarrier, name: str, script: str | None = None) -> RemoteGeneratorSession:
    """A generator host's session whose ``ssh HOST sh -c SCRIPT`` is ``sh -c SCRIPT`` here."""
    ssh = SimpleNamespace(url=f"ssh://{name}", argv=lambda launch: ["sh", "-c", script or launch])
    host = SimpleNamespace(ssh=ssh, workdir=str(tmp_path / name), cores=1,
                           there=lambda text, run_dir=None, remote_run=None: text)
    return RemoteGeneratorSession(Target("127.0.0.1"), CpuSplit((0,)), host, barrier)   # type: ignore[arg-type]


def start_both(sessions: list[RemoteGeneratorSession], delays: list[float]) -> list[object]:
    """Each session's popen in a thread, the i-th ``delays[i]`` s late; each thread's process or exception."""
    found: list[object] = [None, None]

    def one(index: int) -> None:
        time.sleep(delays[index])
        try:
            proc = sessions[index].popen(["sh", "-c", "date +%s.%N"], subprocess.DEVNULL, subprocess.DEVNULL)
            proc.wait(10)
            found[index] = proc
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            found[index] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return found


def test_two_ssh_generators_start_only_when_both_are_ready(tmp_path):
    barrier = StartBarrier(2, 10)
    sessions = [local_session(tmp_path, barrier, f"host{i}") for i in range(2)]
    found = start_both(sessions, [0.0, 0.6])
    assert all(isinstance(p, subprocess.Popen) and p.returncode == 0 for p in found), found
    starts = [float(next((tmp_path / f"host{i}").glob("runs/*/stdout.txt")).read_text()) for i in range(2)]
    assert barrier.ready_at[1] - barrier.ready_at[0] >= 0.5                  # the second came later...
    assert all(start >= max(barrier.ready_at) for start in starts)            # ...and the first one waited
    assert abs(starts[0] - starts[1]) < 0.5


def test_an_ssh_generator_that_fails_to_get_ready_starts_no_tool_anywhere(tmp_path):
    barrier = StartBarrier(2, 10)
    sessions = [local_session(tmp_path, barrier, "host0"), local_session(tmp_path, barrier, "host1", script="exit 3")]
    found = start_both(sessions, [0.0, 0.2])
    assert isinstance(found[1], HarnessError) and "did not get ready" in str(found[1])
    assert isinstance(found[0], threading.BrokenBarrierError) and barrier.broken
    assert not list((tmp_path / "host0").glob("runs/*/stdout.txt"))          # its tool never ran


def test_a_part_that_never_comes_breaks_the_barrier_within_its_timeout():
    barrier = StartBarrier(2, 0.3)
    began = time.monotonic()
    with pytest.raises(threading.BrokenBarrierError):
        barrier.wait()
    assert time.monotonic() - began < 5 and barrier.broken
