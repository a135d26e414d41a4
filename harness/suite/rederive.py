"""``python -m harness rederive RESULTS_FOLDER``: runs.csv and every meta.json derived again from the
raw files the runs stored (harness/row), e.g. after a parser fix, without running anything. A pcap
kept with --keep-pcap is parsed again (the wire's pairs and percentiles, and a rate run's schedule fidelity).

The rows keep their order; the old runs.csv is kept beside as runs.csv.before-rederive. All or nothing, and
confined: every run is derived before the first file is written, and every folder a run names must lie
inside the results folder."""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from harness.errors import HarnessError
from harness.network.capture import reparsed
from harness.capacity.run import CAPACITY_JSON, replayed_capacity
from harness.row import derive_stored
from harness.store.record import RECORD, RunRecord
from harness.store.stored import Derived, load_run
from harness.scenarios import Scenario, describe_error
from harness.store.results import ResultsFolder, RunRow
from harness.store.upgrade import RECORDS_SINCE, FutureSchema, upgrade_rows
from harness.store.safe import UnsafePath, copy_inside, links_on_the_way, relative_parts
from harness.store.lock import folder_lock
from harness.tools.adapter import ToolAdapter


def rederive(path: Path, adapters: dict[str, ToolAdapter]) -> tuple[list[RunRow], list[dict] | None]:
    """All or nothing: every run, and capacity.json's replay over them, derived before anything is written;
    a run that cannot be read, or whose folder leads outside ``path`` or through a link, stops it in one line
    with nothing written. Refused while a suite (or another rederive, or a report) holds the folder.
    Returns the rows and capacity.json's entries (None: the folder has none)."""
    folder = ResultsFolder(path)
    if not folder.runs_csv.is_file():
        raise HarnessError(f"{path} has no runs.csv: pass a results folder (e.g. results/latest)")
    with folder_lock(path):
        stored = _upgraded(path, folder.rows())
        _check_stored(path, stored, adapters)
        derived = [_derived(path, stored_row["run_dir"], adapters) for stored_row in stored]
        rows = [one.row for one in derived]
        capacity = replayed_capacity(folder, adapters, {one.row.run_dir: one.row for one in derived})
        for one in derived:
            one.write()
        copy_inside(path, folder.runs_csv.name, "runs.csv.before-rederive")
        folder.replace(rows)
        if capacity is not None:
            folder.write_json(CAPACITY_JSON, capacity)
    return rows, capacity


def _upgraded(path: Path, stored: list[dict[str, str]]) -> list[dict[str, str]]:
    """The stored rows as the current schema (harness/store/upgrade.py); a newer schema's folder is refused:
    today's derivation would write over what it holds."""
    try:
        return upgrade_rows(stored).rows
    except FutureSchema as exc:
        raise HarnessError(f"{path / 'runs.csv'}: {exc}: nothing was re-derived") from None


def _check_stored(path: Path, stored: list[dict[str, str]], adapters: dict[str, ToolAdapter]) -> None:
    """Every run has its folder, its record and an adapter, and no file rederive writes is a link (each run's
    folders are confined in _derived, before any write)."""
    nameless = [number for number, r in enumerate(stored, start=2) if not r.get("run_dir") or not r.get("tool")]
    if nameless:
        raise HarnessError(f"{path / 'runs.csv'} line {nameless[0]} names no run_dir or tool: it cannot be "
                           f"re-derived; restore runs.csv from a copy (runs.csv.before-rederive?)")
    if problem := links_on_the_way(path, [path / "runs.csv", path / "runs.csv.before-rederive",
                                          path / "capacity.json"]):
        raise HarnessError(f"{problem}: nothing was re-derived; rederive writes only inside the results folder "
                           f"and follows no link in it")
    missing = [r["run_dir"] for r in stored if not (path / r["run_dir"] / RECORD).is_file()]
    if missing:
        raise HarnessError(f"{path} was written before results schema {RECORDS_SINCE} ({len(missing)} runs have no "
                           f"{RECORD}, e.g. {missing[0]}): it cannot be re-derived; rerun those runs")
    unknown = sorted({r["tool"] for r in stored} - set(adapters))
    if unknown:
        raise HarnessError(f"no adapter for {', '.join(unknown)} in tools/: re-derive with the checkout that ran them")


def _derived(path: Path, relative_run_dir: str, adapters: dict[str, ToolAdapter]) -> Derived:
    """One run derived again, written nowhere yet."""
    run_dir = inside(path, relative_run_dir, "a run's folder (runs.csv run_dir)")
    try:
        record = RunRecord.load(run_dir)
        if record.tool not in adapters:
            raise ValueError(f"tool {record.tool!r} has no adapter in tools/ (re-derive with the checkout that ran it)")
        Scenario.model_validate(record.scenario)
    except ValidationError as exc:
        raise HarnessError(f"{run_dir / RECORD} cannot be read (scenario: {describe_error(exc, Scenario)}): nothing "
                           f"was re-derived; restore it from a copy, or rerun that run") from None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise HarnessError(f"{run_dir / RECORD} cannot be read ({type(exc).__name__}: {exc}): nothing was "
                           f"re-derived; restore it from a copy, or rerun that run") from None
    for part in record.parts:
        inside(path, str(Path(relative_run_dir) / part.folder), f"a part's folder ({RECORD} parts[].folder)")
    if record.capture:
        record.capture = reparsed(record.capture, run_dir)
    return derive_stored(load_run(record, run_dir), adapters[record.tool])


def inside(root: Path, relative: str, what: str) -> Path:
    """``root / relative``, refused in one line unless it stays inside ``root`` and no folder on the way below
    ``root`` is a symbolic link (harness/store/safe.py: the writes follow none)."""
    try:
        parts = relative_parts(root, relative)
    except UnsafePath:
        raise HarnessError(f"{what} {relative!r} leads outside {root}: nothing was re-derived; "
                           f"a results folder names its runs' folders inside itself") from None
    path = Path(root, *parts)
    if problem := links_on_the_way(root, [path]):
        raise HarnessError(f"{what} {relative!r}: {problem}: nothing was re-derived; rederive writes only inside "
                           f"the results folder and follows no link in it")
    return path
