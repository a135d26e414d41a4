"""The report of a results folder from elsewhere (issue 54, finding 3): it writes only inside the folder, through
no planted link, and a cell it cannot read is said, not a traceback."""
import csv
import shutil

import pytest

from analysis.report import main
from conftest import REPO

SAMPLE = sorted((REPO / "results" / "sample").iterdir())
TARGETS = REPO / "tests" / "fixtures" / "targets"


@pytest.mark.parametrize("planted", ["index.html", "scorecard.csv", "claims.csv", "rps.png"])
def test_a_planted_link_in_report_is_never_written_through(planted, tmp_path, capsys):
    folder = tmp_path / SAMPLE[0].name
    shutil.copytree(SAMPLE[0], folder)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (folder / "report").mkdir(exist_ok=True)
    (folder / "report" / planted).symlink_to(victim)
    status = main([str(folder)])
    # the link's name is replaced by the report's own file (written beside it, renamed over it), never followed
    assert status == 0 and not (folder / "report" / planted).is_symlink(), capsys.readouterr().err
    assert (folder / "report" / planted).stat().st_size > 0
    assert victim.read_text() == "precious\n"


def test_a_linked_report_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / SAMPLE[0].name
    shutil.copytree(SAMPLE[0], folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "report").symlink_to(elsewhere)
    assert main([str(folder)]) == 2 and list(elsewhere.iterdir()) == []


def test_an_unreadable_backend_delay_is_a_verdict_not_a_traceback(tmp_path):
    from analysis import load_results
    from analysis.targets import slow_backend_table
    folders = sorted(p for p in TARGETS.iterdir() if (p / "runs.csv").is_file()) if TARGETS.is_dir() else []
    source = next((f for f in folders if "backend_delay_ms" in (f / "runs.csv").read_text()), None)
    if source is None:
        pytest.skip("no stored folder with a slow-backend run")
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        names, rows = reader.fieldnames, list(reader)
    for row in rows:
        if row["backend_delay_ms"]:
            row["backend_delay_ms"] = "slow"
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
    table = slow_backend_table(load_results(folder))
    assert table and all(r["verdict"].startswith("unreadable delay: ") for r in table)
