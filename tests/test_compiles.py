"""scripts/deps.sh's background compile of the Go and cargo tools (harness/runtimes/compiles.py): a host run of a
tool it is still compiling waits for it, then finds the tool; scripts/wait-compiles.sh waits for it and says how it
ended (its log's closing line). A real flock held by a real process; the adapter is a stand-in whose binary appears
when the "compile" ends."""
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness.runtimes import compiles, host

REPO = Path(__file__).resolve().parent.parent
WAIT = REPO / "scripts" / "wait-compiles.sh"


def hold(lock: Path, then: str = "true") -> subprocess.Popen:
    """A process holding ``lock`` (as deps.sh's background compile does) until its stdin closes, then running
    ``then`` before it lets go."""
    holder = subprocess.Popen(["flock", str(lock), "sh", "-c", f"read line; {then}"], stdin=subprocess.PIPE, text=True)
    while subprocess.run(["flock", "-n", str(lock), "true"]).returncode == 0:
        time.sleep(0.02)
    return holder


class Compiled:
    """A tool whose binary the compile writes."""
    unavailable = ""

    def __init__(self, binary: Path):
        self.name, self.binary = "gotool", binary

    def installed_here(self) -> bool:
        return self.binary.exists()


def test_a_host_run_of_a_tool_being_compiled_waits_for_the_compile_then_finds_it(tmp_path, monkeypatch, capsys):
    lock, binary = tmp_path / "compile.lock", tmp_path / "gotool"
    monkeypatch.setattr(compiles, "COMPILE_LOCK", lock)
    holder = hold(lock, then=f"touch {binary}")
    try:
        threading.Timer(0.5, holder.stdin.close).start()      # the compile ends half a second later
        assert host.local_problems([Compiled(binary)], ()) == []
    finally:
        holder.kill()
    assert "host: gotool waits for the compile" in capsys.readouterr().out


def test_a_tool_neither_installed_nor_being_compiled_is_reported_at_once_with_a_failed_compile(tmp_path, monkeypatch,
                                                                                             capsys):
    monkeypatch.setattr(compiles, "COMPILE_LOCK", tmp_path / "compile.lock")
    monkeypatch.setattr(compiles, "COMPILE_LOG", tmp_path / "compile.log")
    (tmp_path / "compile.log").write_text("gotool: building ...\ndeps: compile of gotool failed after 3 s (10:00:00Z)\n")
    problems = host.local_problems([Compiled(tmp_path / "gotool")], ())
    assert problems == [f"not installed on the host: gotool: run `make deps RUNTIME=host TOOLS=gotool` "
                        f"({tmp_path / 'compile.log'} ends: deps: compile of gotool failed after 3 s (10:00:00Z))"]
    assert capsys.readouterr().out == ""          # nothing to wait for


@pytest.mark.parametrize("closing, status", [("deps: compile of hey,oha done after 42 s (10:00:00Z)", 0),
                                             ("deps: compile of hey,oha failed after 42 s (10:00:00Z)", 1),
                                             ("oha: building ...", 1)])          # killed before its closing line
def test_wait_compiles_waits_for_the_lock_and_exits_as_the_compile_ended(tmp_path, closing, status):
    lock, log = tmp_path / "compile.lock", tmp_path / "compile.log"
    holder = hold(lock, then=f"echo '{closing}' >> {log}")
    waiting = subprocess.Popen([str(WAIT)], env={"PATH": "/usr/bin:/bin", "LTH_COMPILE_LOCK": str(lock),
                                                 "LTH_COMPILE_LOG": str(log)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    assert waiting.poll() is None                 # still compiling: it waits
    holder.stdin.close()
    out, err = waiting.communicate(timeout=10)
    assert waiting.returncode == status, (out, err)
    assert "waiting for the compile" in out and closing in out + err
