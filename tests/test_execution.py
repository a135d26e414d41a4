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
