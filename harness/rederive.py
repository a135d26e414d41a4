"""``python -m harness rederive RESULTS_FOLDER``: runs.csv and every meta.json derived again from the
raw files the runs stored (harness/row), e.g. after a parser fix, without running anything. A pcap
kept with --keep-pcap is parsed again (the wire's pairs and percentiles; a rate run's schedule fidelity
stays as stored).

The rows keep their order; the old runs.csv is kept beside as runs.csv.before-rederive."""
from __future__ import annotations

import shutil
import traceback
from pathlib import Path

from harness.adapter import ToolAdapter
from harness.capture import reparsed
from harness.errors import HarnessError
from harness.results import ResultsFolder, RunRow
from harness.row import Derived, derive
from harness.row.record import RECORD, SCHEMA_VERSION, RunRecord


def derive_stored(record: RunRecord, adapter: ToolAdapter, run_dir: Path, results_dir: Path) -> Derived:
    """derive(), with a crash in the derivation made the run's failure (the suite goes on)."""
    try:
        return derive(record, adapter, run_dir, results_dir)
    except Exception as exc:  # noqa: BLE001 - a bug in one row's derivation must not sink the suite
        crashed = RunRecord(**{**record.__dict__, "error": f"harness error: {type(exc).__name__}: {exc}",
                               "traceback": traceback.format_exc(), "parts": []})
        return derive(crashed, adapter, run_dir, results_dir)


def rederive(path: Path, adapters: dict[str, ToolAdapter]) -> list[RunRow]:
    folder = ResultsFolder(path)
    if not folder.runs_csv.is_file():
        raise HarnessError(f"{path} has no runs.csv: pass a results folder (e.g. results/latest)")
    stored = folder.rows()
    missing = [r["run_dir"] for r in stored if not (path / r["run_dir"] / RECORD).is_file()]
    if missing:
        raise HarnessError(f"{path} was written before results schema {SCHEMA_VERSION} ({len(missing)} runs have no "
                           f"{RECORD}, e.g. {missing[0]}): it cannot be re-derived; rerun those runs")
    unknown = sorted({r["tool"] for r in stored} - set(adapters))
    if unknown:
        raise HarnessError(f"no adapter for {', '.join(unknown)} in tools/: re-derive with the checkout that ran them")
    rows = []
    for stored_row in stored:
        run_dir = path / stored_row["run_dir"]
        record = RunRecord.load(run_dir)
        if record.capture:
            record.capture = reparsed(record.capture, run_dir)
        derived = derive_stored(record, adapters[record.tool], run_dir, path)
        derived.write(run_dir)
        rows.append(derived.row)
    shutil.copy(folder.runs_csv, path / "runs.csv.before-rederive")
    folder.replace(rows)
    return rows
