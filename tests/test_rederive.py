"""python -m harness rederive: runs.csv and meta.json derived again from a results folder's raw files.

The fixture is a real `harness run --runtime host --tools wrk,ab,k6 --scenarios scenarios/quick.yaml
--duration 3` (vu20-rtt0.1, and vu100-rtt50 through Toxiproxy, each tool's 1-VU baseline), as written."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STORED = next((REPO / "tests" / "fixtures" / "rederive").iterdir())


def rederive(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "rederive", str(folder)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


# Columns added after STORED was written (new columns only ever go last): re-derived, they are empty
# there (its runs had no capture), in runs.csv and in every meta.json's row.
ADDED_SINCE = ["wire_connect_ms"]


def stored_runs_csv() -> bytes:
    """STORED's runs.csv as a re-derivation writes it now: the added columns last, empty."""
    header, *rows = (STORED / "runs.csv").read_bytes().removesuffix(b"\r\n").split(b"\r\n")
    added = [a.encode() for a in ADDED_SINCE]
    return b"".join(line + b"\r\n" for line in [b",".join([header, *added]),
                                                  *(row + b"," * len(added) for row in rows)])


def copy(tmp_path: Path) -> Path:
    folder = tmp_path / STORED.name
    shutil.copytree(STORED, folder)
    return folder


def test_a_stored_folder_derives_to_the_same_runs_csv_byte_for_byte(tmp_path):
    folder = copy(tmp_path)
    result = rederive(folder)
    assert result.returncode == 0, result.stderr
    assert "re-derived 6 runs (6 ok)" in result.stdout
    assert (folder / "runs.csv").read_bytes() == stored_runs_csv()
    assert (folder / "runs.csv.before-rederive").read_bytes() == (STORED / "runs.csv").read_bytes()
    for meta in STORED.glob("*/*/meta.json"):
        again, stored = json.loads((folder / meta.relative_to(STORED)).read_text()), json.loads(meta.read_text())
        assert again == {**stored, "row": {**stored["row"], **dict.fromkeys(ADDED_SINCE)}}, meta
        assert list(again["row"])[-len(ADDED_SINCE):] == ADDED_SINCE


def test_the_row_comes_from_the_raw_files(tmp_path):
    """A changed tool output (what a parser fix would read differently) changes the re-derived row."""
    folder = copy(tmp_path)
    stdout = folder / "vu20-rtt0.1" / "ab" / "stdout.txt"
    stored = stdout.read_text()
    requests = stored.split("Complete requests:")[1].split()[0]
    stdout.write_text(stored.replace(f"Complete requests:      {requests}", "Complete requests:      1234"))
    assert rederive(folder).returncode == 0
    rows = {line.split(",")[0] + line.split(",")[3]: line for line in (folder / "runs.csv").read_text().splitlines()}
    assert ",1234," in rows["abvu20-rtt0.1"] and ",1234," not in (STORED / "runs.csv").read_text()


def test_samples_and_the_baseline_are_read_again(tmp_path):
    folder = copy(tmp_path)
    meta = json.loads((folder / "vu100-rtt50" / "k6" / "meta.json").read_text())
    baseline = folder / meta["mem_baseline_1vu"]["folder"]
    samples = (baseline / "samples.csv").read_text().splitlines()
    doubled = [samples[0], *(",".join([f.split(",")[0], str(float(f.split(",")[1]) * 2), *f.split(",")[2:]])
                             for f in samples[1:])]
    (baseline / "samples.csv").write_text("\n".join(doubled) + "\n")
    assert rederive(folder).returncode == 0
    again = json.loads((folder / "vu100-rtt50" / "k6" / "meta.json").read_text())
    assert again["row"]["mem_baseline_mb"] == 2 * meta["row"]["mem_baseline_mb"]
    assert again["row"]["mem_per_vu_kb"] is None or again["row"]["mem_per_vu_kb"] < meta["row"]["mem_per_vu_kb"]


def test_a_folder_written_before_records_is_refused_in_one_line(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(REPO / "results" / "sample" / "20261123T003909Z-host", old)
    before = (old / "runs.csv").read_bytes()
    result = rederive(old)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "written before results schema 1" in result.stderr and "rerun" in result.stderr
    assert (old / "runs.csv").read_bytes() == before


def test_not_a_results_folder_is_one_line(tmp_path):
    result = rederive(tmp_path)
    assert result.returncode == 2 and "has no runs.csv" in result.stderr and result.stderr.count("\n") == 1
