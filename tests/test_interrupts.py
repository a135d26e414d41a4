"""Every interrupting signal stops a suite the same way (issue 54): Ctrl-C and SIGTERM did, but SIGINT sent to the
harness's process alone (`kill -INT PID`, `timeout -s INT`) was swallowed when the harness had inherited SIGINT
ignored (started in the background by a shell without job control, as the review's harness was), and the suite
ran to its end. On the in-process fake runtime (tests/fake_runtime.py): no load."""
from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from typing import Iterator

import pytest

from fake_runtime import FakeRuntime, FakeTool
from harness.cpus import NO_SPLIT
from harness.runtimes.base import Session
from harness.scenarios import Scenario
from harness.suite.runner import Plan, run_suite
from harness.tools.adapter import ToolAdapter


class SignalledRuntime(FakeRuntime):
    """The fake runtime, whose first run's session sends ``signum`` to this process (the harness) alone."""

    def __init__(self, signum: int) -> None:
        super().__init__()
        self.signum = signum

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        with super().session(adapter) as session:
            if self.sessions == 1:
                os.kill(os.getpid(), self.signum)
            yield session


@pytest.fixture
def sigint_inherited_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_each_interrupting_signal_to_the_harness_alone_stops_the_suite(signum, sigint_inherited_ignored, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))
    scenario = Scenario(id="vu2-rtt0.1", vus=2, rtt_ms=0.1, duration_s=1)
    plan = Plan(runtime="fake", tools=[FakeTool("ok"), FakeTool("ok", name="fake-second")], scenarios=[scenario],
                results_root=tmp_path / "results", grace_s=8.0, split=NO_SPLIT)
    runtime = SignalledRuntime(signum)
    with pytest.raises(KeyboardInterrupt):
        run_suite(plan, runtime)
    assert runtime.sessions == 1                                      # the second run never started
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN         # the suite's handlers are gone with it
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
