"""`rederive` of a results folder from elsewhere (issue 54): a crafted record.json, runs.csv or capacity.json is
refused in one line (exit 2) before anything is written, and the capacity replay is derived with the runs, so
a broken capacity.json leaves runs.csv and every meta.json as they were (it ran after them, outside the lock)."""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main

REPO = Path(__file__).resolve().parents[1]
STORED = next((REPO / "tests" / "fixtures" / "rederive").iterdir())
RUN = "vu20-rtt0.1/wrk"


def edit_record(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def plant(folder: Path) -> None:
        path = folder / RUN / "record.json"
        record = json.loads(path.read_text())
        change(record)
        path.write_text(json.dumps(record))
    return plant


def without_run_dir(folder: Path) -> None:
    lines = (folder / "runs.csv").read_text().splitlines()
    header = lines[0].split(",")
    at = header.index("run_dir")
    (folder / "runs.csv").write_text("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != at)
                                               for line in lines) + "\n")


PLANTED = {   # what was planted -> (how, a fragment of the one line)
    "a tool not in the adapters": (edit_record(lambda r: r.update(tool="frob")), "tool 'frob' has no adapter"),
    "an invalid scenario": (edit_record(lambda r: r["scenario"].update(vus="many")), "scenario: vus:"),
    "a scenario of no fields": (edit_record(lambda r: r.update(scenario={})), "scenario: id: Field required"),
    "server_api {}": (edit_record(lambda r: r.update(server_api={})), "server_api: logins_ok is missing"),
    "text in server_off_protocol": (edit_record(lambda r: r.update(server_off_protocol={"HTTP/1.1": "many"})),
                                    "server_off_protocol.HTTP/1.1"),
    "parts[].folder a number": (edit_record(lambda r: r["parts"][0].update(folder=5)), "parts.0.folder"),
    "capture.port text": (edit_record(lambda r: r.update(capture={"port": "abc", "pcap": "lth-capture.pcap"})),
                          "capture.port"),
    "capture.port a list": (edit_record(lambda r: r.update(capture={"port": [80], "pcap": "lth-capture.pcap"})),
                            "capture.port"),
    "a record that is a list": (lambda f: (f / RUN / "record.json").write_text("[]"), "not a mapping"),
    "runs.csv without run_dir": (without_run_dir, "names no run_dir"),
    "capacity.json of an entry without its tool": (lambda f: (f / "capacity.json").write_text('[{"kind":"search"}]'),
                                                   "capacity.json entry 1"),
    "capacity.json cut short": (lambda f: (f / "capacity.json").write_text("{"), "capacity.json cannot be read"),
    "capacity.json of a replay without its settings": (
        lambda f: (f / "capacity.json").write_text('[{"tool": "wrk", "kind": "closed-loop reference"}]'),
        "entry 1 (wrk) cannot be replayed"),
}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("planted", PLANTED)
def test_a_crafted_folder_is_refused_in_one_line_with_nothing_changed(planted, tmp_path, capsys):
    folder = Path(shutil.copytree(STORED, tmp_path / STORED.name))
    plant, fragment = PLANTED[planted]
    plant(folder)
    before = snapshot(folder)
    assert main(["rederive", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and fragment in err, err
    assert snapshot(folder) == before


def test_a_good_capacity_json_is_rewritten_with_the_rows_in_one_go(tmp_path, capsys):
    """The replay reads the rows derived in memory, not the meta.json files written before it."""
    folder = Path(shutil.copytree(STORED, tmp_path / STORED.name))
    (folder / "capacity.json").write_text("[]")
    assert main(["rederive", str(folder)]) == 0
    assert json.loads((folder / "capacity.json").read_text()) == []
    assert "and capacity.json from them (0 tools)" in capsys.readouterr().out


def test_a_fact_the_derivation_cannot_use_is_that_runs_failure_not_a_traceback(tmp_path, capsys):
    """The fallback derivation (harness/row derive_stored) re-read the fact that had crashed the first: it re-raised.
    It now derives the run from its setup alone, the crash its error."""
    folder = Path(shutil.copytree(STORED, tmp_path / STORED.name))
    edit_record(lambda r: r.update(stall={"bogus": 1}, shaper_load={"gets_direct": "many"}))(folder)
    assert main(["rederive", str(folder)]) == 0
    meta = json.loads((folder / RUN / "meta.json").read_text())
    assert meta["row"]["status"] == "failed" and meta["row"]["error"].startswith("harness error: TypeError")
    assert "Traceback" in meta["traceback"] and "re-derived 6 runs (5 ok)" in capsys.readouterr().out
