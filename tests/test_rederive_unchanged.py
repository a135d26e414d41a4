"""Nothing changes in any figure (issue 50.5): every stored results folder of the current schema derives again,
in a temporary copy, to the runs.csv and meta.json it stored, byte for byte; an older folder keeps its own
guarantees (schema 1: tests/test_rederive.py, which names every column derived otherwise since; schema 0: refused,
nothing written). The derivation reads the StoredRun (harness/store/stored.py), not the harness's files; only the
tool's parser reads the tool's own output files (ToolOutput.file)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.row import derive
from harness.store.record import EXECUTION, RECORD, STDERR, STDOUT, RunRecord
from harness.store.results import ResultsFolder, read_meta_row
from harness.store.stored import legacy_spec, load_run
from harness.store.upgrade import version_of
from harness.suite.rederive import rederive
from harness.tools import registry
from harness.tools.output import RunSpec

REPO = Path(__file__).resolve().parents[1]
CURRENT = sorted((REPO / "results" / "sample").glob("*/runs.csv"))      # schema 2: the as-typed tier's sample
SCHEMA0 = REPO / "tests" / "fixtures" / "schema0" / "20261123T003909Z-host"


@pytest.fixture(scope="module")
def adapters() -> dict:
    return registry.discover()


def files(folder: Path, name: str) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob(name)) if p.is_file()}


@pytest.mark.parametrize("runs_csv", CURRENT, ids=lambda p: p.parent.name)
def test_a_current_folder_derives_again_to_what_it_stored(runs_csv, tmp_path, adapters):
    stored = runs_csv.parent
    assert {version_of(row) for row in ResultsFolder(stored).rows()} == {2}
    copy = tmp_path / stored.name
    shutil.copytree(stored, copy)
    rows, _ = rederive(copy, adapters)
    assert (copy / "runs.csv").read_bytes() == runs_csv.read_bytes()
    assert files(copy, "meta.json") == files(stored, "meta.json")
    assert rows == [read_meta_row(stored / row.run_dir) for row in rows]       # exact, not runs.csv's rounding


def test_a_folder_before_records_is_refused_with_nothing_written(tmp_path, adapters):
    copy = tmp_path / SCHEMA0.name
    shutil.copytree(SCHEMA0, copy)
    with pytest.raises(HarnessError, match="written before results schema 1"):
        rederive(copy, adapters)
    assert files(copy, "*") == files(SCHEMA0, "*")


@pytest.mark.parametrize("runs_csv", CURRENT, ids=lambda p: p.parent.name)
def test_the_derivation_reads_none_of_the_harnesss_files(runs_csv, tmp_path, adapters):
    """load_run reads every file the harness stored for a run; derive() then runs with them gone (the tool's own
    output files stay: its parser reads them)."""
    copy = tmp_path / runs_csv.parent.name
    shutil.copytree(runs_csv.parent, copy)
    loaded = []
    for row in ResultsFolder(copy).rows():
        run_dir = copy / row["run_dir"]
        loaded.append((load_run(RunRecord.load(run_dir), run_dir), read_meta_row(run_dir)))
    for name in (RECORD, EXECUTION, STDOUT, STDERR, "samples*.csv", "*.hlog", "meta.json"):
        for path in copy.rglob(name):
            path.unlink()
    for stored, expected in loaded:
        assert derive(stored, adapters[stored.record.tool]).row == expected


@pytest.mark.parametrize("runs_csv", CURRENT, ids=lambda p: p.parent.name)
def test_a_part_stored_before_its_runspec_gets_the_fields_a_run_saves(runs_csv):
    """legacy_spec (parts stored before PartRecord.spec) gives RunSpec.to_record's fields, which read back."""
    run_dir = runs_csv.parent / ResultsFolder(runs_csv.parent).rows()[0]["run_dir"]
    record = RunRecord.load(run_dir)
    part = record.parts[0]
    assert part.spec is None
    spec = legacy_spec(record, part)
    read_back = RunSpec.from_record(spec, run_dir)
    assert read_back.to_record() == spec
    assert (read_back.url, read_back.vus, read_back.duration_s) == (part.url, part.vus, record.scenario["duration_s"])
    assert json.loads(json.dumps(spec)) == spec      # record.json keeps it as it is


def two_generators(tmp_path: Path) -> Path:
    """results/sample's wrk run at vu20-rtt0.1 as if two generators had each run it (generator-1, generator-2),
    each with its latency.hlog: the several-parts path of load_run and derive."""
    stored = CURRENT[0].parent / "vu20-rtt0.1" / "wrk"
    run_dir = tmp_path / "vu20-rtt0.1" / "wrk"
    record = json.loads((stored / RECORD).read_text())
    for index in (1, 2):
        shutil.copytree(stored, run_dir / f"generator-{index}")
    part = record["parts"][0]
    record["parts"] = [{**part, "folder": f"generator-{index}", "per_request": True, "host": f"gen{index}"}
                       for index in (1, 2)]
    (run_dir / RECORD).write_text(json.dumps(record))
    return run_dir


def test_several_generators_merge_from_the_histograms_the_store_read(tmp_path, adapters):
    from collections import Counter

    from harness.stats import histogram_metrics
    from harness.store.hdr import read_histogram
    run_dir = two_generators(tmp_path)
    stored = load_run(RunRecord.load(run_dir), run_dir)
    assert [p.histogram is not None for p in stored.parts] == [True, True]
    derived = derive(stored, adapters["wrk"])
    one = read_meta_row(CURRENT[0].parent / "vu20-rtt0.1" / "wrk")
    histogram = read_histogram(run_dir / "generator-1", stored.record.parts[0].histogram)
    both = histogram_metrics(Counter({ms: 2 * n for ms, n in histogram.counts.items()}), total=2 * histogram.total)
    assert derived.row.status == "ok" and derived.row.generators == 2 and derived.row.requests == 2 * one.requests
    assert (derived.row.lat_p50_ms, derived.row.lat_p99_ms) == (both.lat_p50_ms, both.lat_p99_ms)
    assert derived.meta["metric_source"].startswith("merged: latencies: nearest-rank percentiles over the parts'")
    assert [folder for folder, _, _ in derived.parts] == [run_dir / "generator-1", run_dir / "generator-2"]
