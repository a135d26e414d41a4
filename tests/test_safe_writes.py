"""A results folder from elsewhere is untrusted input (issue 54): every path the harness writes under it follows
no symbolic link, stays inside it and is written atomically (harness/store/safe.py); rederive and --resume
refuse a planted link in one line, with nothing changed, and the link's target untouched."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.store.results import ResultsFolder
from harness.store.safe import (UnsafePath, copy_inside, empty_dir_inside, make_dir_inside, remove_tree_inside,
                                write_bytes_inside, write_text_inside)

REPO = Path(__file__).resolve().parents[1]
STORED = next((REPO / "tests" / "fixtures" / "rederive").iterdir())


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """What a planted link points at: a folder outside the results folder, with a file and a subfolder."""
    outside = tmp_path / "victim"
    (outside / "wrk").mkdir(parents=True)
    (outside / "wrk" / "keep.txt").write_text("the victim's\n")
    (outside / "file.txt").write_text("the victim's\n")
    return outside


def contents(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() if p.is_file() else "/" for p in sorted(folder.rglob("*"))}


def test_a_file_is_written_inside_and_a_link_at_its_name_is_replaced_not_written_through(tmp_path, victim):
    root = tmp_path / "results"
    (root / "report").mkdir(parents=True)
    (root / "report" / "index.html").symlink_to(victim / "file.txt")
    written = write_text_inside(root, root / "report" / "index.html", "<p>new</p>")
    assert written == root / "report" / "index.html" and not written.is_symlink()
    assert written.read_text() == "<p>new</p>" and (victim / "file.txt").read_text() == "the victim's\n"
    assert written.stat().st_mode & 0o777 == 0o644
    write_bytes_inside(root, "report/charts/a.png", b"\x89PNG", mode=0o600)    # relative, its folder made
    assert (root / "report" / "charts" / "a.png").read_bytes() == b"\x89PNG"
    assert (root / "report" / "charts" / "a.png").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in (root / "report").iterdir()) == ["charts", "index.html"]   # no temporary file


@pytest.mark.parametrize("write", [
    lambda root: write_text_inside(root, root / "report" / "index.html", "x"),
    lambda root: make_dir_inside(root, root / "report" / "charts"),
    lambda root: empty_dir_inside(root, root / "report"),
    lambda root: copy_inside(root, root / "runs.csv", root / "report" / "runs.csv"),
])
def test_a_linked_folder_on_the_way_is_refused_in_one_line(tmp_path, victim, write):
    root = tmp_path / "results"
    root.mkdir()
    (root / "runs.csv").write_text("tool\n")
    (root / "report").symlink_to(victim)
    before = contents(victim)
    with pytest.raises(UnsafePath, match=r"report is a symbolic link \(to .*victim\)") as refused:
        write(root)
    assert "\n" not in str(refused.value) and contents(victim) == before


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "/etc/passwd", ".", ""])
def test_a_path_outside_the_folder_is_refused(tmp_path, path):
    root = tmp_path / "results"
    root.mkdir()
    with pytest.raises(UnsafePath):
        write_text_inside(root, path, "x")
    assert list(tmp_path.iterdir()) == [root] and list(root.iterdir()) == []


def test_removing_a_tree_removes_a_link_in_it_and_never_what_it_points_at(tmp_path, victim):
    root = tmp_path / "results"
    (root / "old").mkdir(parents=True)
    (root / "old" / "into-victim").symlink_to(victim)
    (root / "gone").symlink_to(victim)
    remove_tree_inside(root, root / "old")
    remove_tree_inside(root, root / "gone")
    remove_tree_inside(root, root / "never-was")
    assert list(root.iterdir()) == [] and contents(victim)["wrk/keep.txt"] == "the victim's\n"


def test_a_redone_run_refuses_a_linked_scenario_folder_and_empties_nothing_outside(tmp_path, victim):
    """Finding 2: resume's fresh_run_dir followed `vu20-rtt0.1 -> /victim` and deleted victim/wrk/*."""
    folder = ResultsFolder(tmp_path / "results")
    folder.path.mkdir()
    (folder.path / "vu20-rtt0.1").symlink_to(victim)
    with pytest.raises(UnsafePath, match="vu20-rtt0.1 is a symbolic link"):
        folder.fresh_run_dir("vu20-rtt0.1", "wrk")
    with pytest.raises(UnsafePath):
        folder.run_dir("vu20-rtt0.1", "wrk", 2)
    assert (victim / "wrk" / "keep.txt").read_text() == "the victim's\n"


def test_a_redone_run_removes_a_link_inside_its_folder_without_following_it(tmp_path, victim):
    folder = ResultsFolder(tmp_path / "results")
    run_dir = folder.run_dir("vu20-rtt0.1", "wrk")
    (run_dir / "stdout.txt").symlink_to(victim / "file.txt")
    (run_dir / "logs").symlink_to(victim / "wrk")
    (run_dir / "repeat-2").mkdir()
    assert folder.fresh_run_dir("vu20-rtt0.1", "wrk") == run_dir
    assert [p.name for p in run_dir.iterdir()] == ["repeat-2"]
    assert contents(victim) == {"file.txt": "the victim's\n", "wrk": "/", "wrk/keep.txt": "the victim's\n"}


def copied(tmp_path: Path) -> Path:
    return Path(shutil.copytree(STORED, tmp_path / STORED.name, symlinks=True))


def snapshot(folder: Path) -> dict[str, tuple]:
    return {str(p.relative_to(folder)): (os.readlink(p),) if p.is_symlink() else (p.stat().st_mtime_ns,)
            for p in folder.rglob("*")}


def test_rederive_refuses_a_planted_link_at_the_kept_runs_csv_and_changes_nothing(tmp_path, victim, capsys):
    """Finding 1: `shutil.copy` followed runs.csv.before-rederive -> /victim: exit 0, the victim overwritten."""
    folder = copied(tmp_path)
    (folder / "runs.csv.before-rederive").symlink_to(victim / "file.txt")
    before = snapshot(folder)
    assert main(["rederive", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: ") and "runs.csv.before-rederive is a symbolic link" in err
    assert (victim / "file.txt").read_text() == "the victim's\n" and snapshot(folder) == before


def test_rederive_refuses_a_linked_run_folder_inside_the_results_folder(tmp_path, victim, capsys):
    """A link that stays inside the folder is refused too: rederive follows no link (the writes would)."""
    folder = copied(tmp_path)
    (folder / "elsewhere").mkdir()
    (folder / "vu20-rtt0.1").rename(folder / "elsewhere" / "vu20-rtt0.1")
    (folder / "vu20-rtt0.1").symlink_to(Path("elsewhere") / "vu20-rtt0.1")
    before = snapshot(folder)
    assert main(["rederive", str(folder)]) == 2
    assert "vu20-rtt0.1 is a symbolic link" in capsys.readouterr().err
    assert snapshot(folder) == before


def test_resume_refuses_a_linked_run_folder_before_anything_starts(tmp_path, victim):
    from harness.cpus import NO_SPLIT
    from harness.scenarios import Scenario
    from harness.suite import preflight
    from harness.suite.plan import Plan
    from fake_runtime import FakeTool
    folder = tmp_path / "results" / "20260101T000000Z-fake"
    folder.mkdir(parents=True)
    (folder / "environment.json").write_text('{"runtime": "fake"}')
    (folder / "vu2-rtt0.1").symlink_to(victim)
    plan = Plan(runtime="fake", tools=[FakeTool("ok", name="wrk")], results_root=tmp_path / "results",
                scenarios=[Scenario(id="vu2-rtt0.1", vus=2, rtt_ms=0.1, duration_s=1)], resume=folder, split=NO_SPLIT)
    with pytest.raises(HarnessError, match=r"cannot resume .*vu2-rtt0.1 is a symbolic link .*remove the link"):
        preflight.check_resume(plan)
    assert contents(victim)["wrk/keep.txt"] == "the victim's\n"
