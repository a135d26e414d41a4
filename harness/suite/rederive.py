"""``python -m harness rederive RESULTS_FOLDER``: runs.csv and every meta.json derived again from the
raw files the runs stored (harness/row), e.g. after a parser fix, without running anything. A pcap
kept with --keep-pcap is parsed again (the wire's pairs and percentiles, and a rate run's schedule fidelity).

The rows keep their order; the old runs.csv is kept beside as runs.csv.before-rederive. All or nothing, and
confined: every run is derived before the first file is written, and every folder a run names must lie
inside the results folder."""
from __future__ import annotations

import shutil
import traceback
from pathlib import Path

from harness.errors import HarnessError
from harness.network.capture import reparsed
from harness.row import Derived, derive
from harness.store.record import RECORD, SCHEMA_VERSION, RunRecord
from harness.store.results import ResultsFolder, RunRow
from harness.suite.lock import folder_lock
from harness.tools.adapter import ToolAdapter


def derive_stored(record: RunRecord, adapter: ToolAdapter, run_dir: Path) -> Derived:
    """derive(), with a crash in the derivation made the run's failure (the suite goes on)."""
    try:
        return derive(record, adapter, run_dir)
    except Exception as exc:  # noqa: BLE001 - a bug in one row's derivation must not sink the suite
        crashed = RunRecord(**{**record.__dict__, "error": f"harness error: {type(exc).__name__}: {exc}",
                               "traceback": traceback.format_exc(), "parts": []})
        return derive(crashed, adapter, run_dir)


def rederive(path: Path, adapters: dict[str, ToolAdapter]) -> list[RunRow]:
    """All or nothing: every run is derived before anything is written; a run that cannot be read, or whose
    folder leads outside ``path``, stops it in one line with nothing written. Refused while a suite (or
    another rederive, or a report) holds the folder."""
    folder = ResultsFolder(path)
    if not folder.runs_csv.is_file():
        raise HarnessError(f"{path} has no runs.csv: pass a results folder (e.g. results/latest)")
    with folder_lock(path):
        stored = folder.rows()
        _check_stored(path, stored, adapters)
        derived = [_derived(path, stored_row["run_dir"], adapters) for stored_row in stored]
        for run_dir, one in derived:
            one.write(run_dir)
        shutil.copy(folder.runs_csv, path / "runs.csv.before-rederive")
        folder.replace([one.row for _, one in derived])
    return [one.row for _, one in derived]


def _check_stored(path: Path, stored: list[dict[str, str]], adapters: dict[str, ToolAdapter]) -> None:
    """Every run has its record and an adapter (each run's folders are confined in _derived, before any write)."""
    missing = [r["run_dir"] for r in stored if not (path / r["run_dir"] / RECORD).is_file()]
    if missing:
        raise HarnessError(f"{path} was written before results schema {SCHEMA_VERSION} ({len(missing)} runs have no "
                           f"{RECORD}, e.g. {missing[0]}): it cannot be re-derived; rerun those runs")
    unknown = sorted({r["tool"] for r in stored} - set(adapters))
    if unknown:
        raise HarnessError(f"no adapter for {', '.join(unknown)} in tools/: re-derive with the checkout that ran them")


def _derived(path: Path, relative_run_dir: str, adapters: dict[str, ToolAdapter]) -> tuple[Path, Derived]:
    """One run derived again, written nowhere yet."""
    run_dir = inside(path, relative_run_dir, "a run's folder (runs.csv run_dir)")
    try:
        record = RunRecord.load(run_dir)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise HarnessError(f"{run_dir / RECORD} cannot be read ({type(exc).__name__}: {exc}): nothing was "
                           f"re-derived; restore it from a copy, or rerun that run") from None
    for part in record.parts:
        inside(path, str(Path(relative_run_dir) / part.folder), f"a part's folder ({RECORD} parts[].folder)")
    if record.capture:
        record.capture = reparsed(record.capture, run_dir)
    return run_dir, derive_stored(record, adapters[record.tool], run_dir)


def inside(root: Path, relative: str, what: str) -> Path:
    """``root / relative``, refused in one line unless it stays inside ``root`` (symlinks followed)."""
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise HarnessError(f"{what} {relative!r} leads outside {root}: nothing was re-derived; "
                           f"a results folder names its runs' folders inside itself")
    return path
