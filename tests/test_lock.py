"""The machine's lock (harness/store/lock.py), in a temporary lock folder (LTH_LOCK_DIR), never the machine's:
a benchmark may hold that one. What a planted symlink or a folder that is not ours gets, what a bad
LTH_LOCK_WAIT_S gets, what a waiting run says, and clean-state under a held lock."""
import os
import stat

import pytest

from harness import cli
from harness.errors import HarnessError
from harness.store import lock


@pytest.fixture(autouse=True)
def lock_folder(tmp_path, monkeypatch):
    folder = tmp_path / "lock"
    monkeypatch.setenv("LTH_LOCK_DIR", str(folder))
    monkeypatch.setenv("LTH_LOCK_WAIT_S", "0")
    return folder


def test_a_symlink_planted_at_the_lock_is_refused_and_its_target_left_untouched(lock_folder, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    lock_folder.mkdir(mode=0o700)
    (lock_folder / lock.SUITE).symlink_to(victim)
    with pytest.raises(HarnessError, match=r"lock file .*lth\.lock is not ours \(a symlink\): remove it and rerun"):
        lock.acquire()
    assert victim.read_text() == "precious\n"


def test_a_lock_folder_that_is_a_symlink_is_refused(lock_folder, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    lock_folder.symlink_to(elsewhere)
    with pytest.raises(HarnessError, match=r"lock folder .* is not ours \(a symlink\)"):
        lock.acquire()
    assert not any(elsewhere.iterdir())


@pytest.mark.parametrize("change, why", [(lambda p: p.chmod(0o777), r"others may write in it \(mode 777\)"),
                                         (lambda p: os.chown(p, 65534, 65534), r"owned by uid 65534")])
def test_a_lock_folder_others_may_write_in_is_refused(lock_folder, change, why):
    if os.geteuid() != 0 and "chown" in why:
        pytest.skip("chown needs root")
    lock_folder.mkdir(mode=0o700)
    change(lock_folder)
    with pytest.raises(HarnessError, match=why):
        lock.acquire()


def test_a_lock_file_owned_by_another_user_is_refused(lock_folder):
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    lock_folder.mkdir(mode=0o700)
    (lock_folder / lock.SUITE).touch()
    os.chown(lock_folder / lock.SUITE, 65534, 65534)
    with pytest.raises(HarnessError, match=r"owned by uid 65534"):
        lock.acquire()


def test_the_lock_folder_is_made_0700_and_the_file_0600_and_the_holder_named(lock_folder):
    with lock.acquire():
        assert stat.S_IMODE(lock_folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((lock_folder / lock.SUITE).stat().st_mode) == 0o600
        with pytest.raises(HarnessError, match=rf"another benchmark is running on this machine \(pid {os.getpid()}, "
                                               r"`.*`, since 20.*\): one at a time"):
            lock.acquire()
    lock.acquire().close()      # released


def test_root_s_lock_is_in_run_not_tmp(monkeypatch):
    monkeypatch.delenv("LTH_LOCK_DIR")
    if os.geteuid() == 0:
        assert lock.lock_path() == lock.ROOT_DIR / "lth.lock" == lock.Path("/run/lth/lth.lock")
    assert not str(lock.lock_path()).startswith("/tmp/lth.lock")


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", ""])
def test_a_bad_lock_wait_is_one_line_and_exit_2_before_anything_runs(monkeypatch, capsys, value):
    monkeypatch.setenv("LTH_LOCK_WAIT_S", value)
    if value == "":
        monkeypatch.delenv("LTH_LOCK_WAIT_S")      # unset: no wait, no error
        assert lock.wait_s() == 0
        return
    monkeypatch.setattr(cli, "_run", lambda args: pytest.fail("the suite started"))
    assert cli.main(["run", "--tools", "wrk"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: LTH_LOCK_WAIT_S={value}: must be a number of seconds >= 0 (how long to wait for another " \
                  f"benchmark to end; 0: not at all), e.g. LTH_LOCK_WAIT_S=600\n"


def test_a_run_waiting_for_the_lock_says_once_who_holds_it(monkeypatch, capsys):
    monkeypatch.setenv("LTH_LOCK_WAIT_S", "2.5")
    with lock.acquire():
        with pytest.raises(HarnessError, match=rf"\(pid {os.getpid()}, "):
            lock.acquire()
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"waiting up to 2.5 s (LTH_LOCK_WAIT_S) for the lock: another benchmark is running on this "
                          f"machine (pid {os.getpid()}, `")


def test_clean_state_refuses_in_one_line_naming_the_holder_while_a_benchmark_holds_the_lock(monkeypatch, capsys):
    swept = []
    monkeypatch.setattr(cli, "clean_state", lambda: swept.append(1) or [])   # never the machine's sweep here
    with lock.acquire():
        assert cli.main(["clean-state"]) == 2
    err = capsys.readouterr().err
    assert swept == [] and err.count("\n") == 1
    assert err.startswith(f"error: a benchmark is running on this machine and clean-state would remove what it uses "
                          f"(pid {os.getpid()}, `")
    assert cli.main(["clean-state"]) == 0 and swept == [1]     # free: it sweeps


def test_clean_state_refuses_while_test_hosts_are_up(monkeypatch, capsys):
    monkeypatch.setattr(cli, "clean_state", lambda: pytest.fail("swept"))
    with lock.acquire(lock.TESTHOST, "test hosts are up", wait=False):
        assert cli.main(["clean-state"]) == 2
    assert "test hosts are up on this machine and clean-state would remove them" in capsys.readouterr().err
