"""The one upgrade point (issue 50.2): any older results folder's runs.csv rows read as the current schema.

Every row carries ``schema_version`` (runs.csv column, and meta.json's field of the same name: one number,
harness/store/record.py SCHEMA_VERSION). The versions:
  0  before record.json (no meta.json schema_version): the rows read, but rederive refuses the folder;
  1  record.json and meta.json's schema_version; runs.csv has no schema_version column;
  2  runs.csv's schema_version column; every percentile nearest rank (harness/stats.py; the wire's were
     numpy's linear interpolation: rederive a folder with kept pcaps to move them).
A runs.csv without the column reads as version 1: versions 0 and 1 hold the same row columns (only
record.json tells them apart, which rederive checks), and each fix below reads only the row.

The fixes, each of a folder written before its column or code existed (they were in analysis/load.py and
analysis/charts.py): the setup columns' defaults, limited_by's old values, limited_by where the row has none
(the rule of harness/store/limits.py without the contention check, which needs the samples; a run that did not
end ok, whose cell is withheld: n/a), lat_added_ms before --capture, the emptied-below-resolution note, repeat,
and the retired columns, dropped; the adapters' declarations of a folder written before declarations.json are
today's (folder_declarations). A row of a version newer than this checkout's is refused (FutureSchema):
reading it as today's would drop or misread what it holds.

The retired columns (always empty in version 2) left runs.csv without a new version: a version-2 reader reads
their absence as the empty cells they held, so nothing is dropped or misread.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.store.declarations import Declarations, read_declarations
from harness.store.figures import emptied_cell
from harness.store.limits import side
from harness.store.record import SCHEMA_VERSION

UNVERSIONED = 1        # a runs.csv without the schema_version column
RECORDS_SINCE = 1      # the first version whose runs stored record.json (rederive needs it)
COLUMN = "schema_version"
# Folders from before targets (issue 23) and protocols (issue 38) ran today's default setup.
SETUP_DEFAULTS = {"target": "nginx", "keepalive": "True", "tls": "False", "protocol": "http/1.1"}
# The values folders written before the codes (issue 36) held in limited_by.
LEGACY_SIDES = {"other processes on the machine": "other processes",
                "neither (latency or the tool's own limits)": "neither"}
# Folders written before the lat_below_resolution column named the emptied columns in a note.
EMPTIED = re.compile(r"timing resolution, left empty: ([a-z0-9_, ]+)")
# Emptied since 2026-11-27 (values of a 1-VU baseline run no longer read: memory per VU is analysis/memory.py's
# slope), out of runs.csv since 2026-11-28.
RETIRED = ("mem_per_vu_kb", "mem_baseline_mb")
OK = "ok"


class FutureSchema(ValueError):
    """A row of a schema version this checkout does not know."""


@dataclass(frozen=True)
class Upgraded:
    rows: list[dict[str, str]]
    version: int              # the folder's stored version (the highest of its rows)


def version_of(row: dict[str, str]) -> int:
    """A row's stored schema version; a FutureSchema (one line) when it is not a version this checkout reads."""
    cell = (row.get(COLUMN) or "").strip()
    if not cell:
        return UNVERSIONED
    try:
        version = int(cell)
    except ValueError:
        raise FutureSchema(f"schema_version {cell!r} is not a whole number") from None
    if version > SCHEMA_VERSION:
        raise FutureSchema(f"schema_version {version} is newer than this checkout's {SCHEMA_VERSION}: read it with "
                           f"the checkout that wrote it (git log harness/store/upgrade.py)")
    return version


def upgrade_row(row: dict[str, str], all_cpus: int = 0) -> dict[str, str]:
    """One runs.csv row (cells as read: "" is empty) as the current schema writes it; the input is untouched.
    ``all_cpus``: the machine's CPUs (its folder's environment.json cores; 0: unknown), for limited_by's rule."""
    version, row = version_of(row), dict(row)
    if version < 2:
        _fill_setup(row)
        _recode(row)
    _fill_limited_by(row, all_cpus)
    for name in RETIRED:
        row.pop(name, None)
    row[COLUMN] = str(SCHEMA_VERSION)
    return row


def upgrade_rows(rows: Iterable[dict[str, str]], all_cpus: int = 0) -> Upgraded:
    rows = list(rows)
    versions = [version_of(row) for row in rows]         # every row checked before any is changed
    return Upgraded([upgrade_row(row, all_cpus) for row in rows], max(versions, default=SCHEMA_VERSION))


def upgrade_header(header: Iterable[str]) -> list[str]:
    """A runs.csv header's columns as the current schema holds them: the retired ones out, schema_version in."""
    kept = [name for name in header if name not in RETIRED and name != COLUMN]
    return [*kept, COLUMN]


def folder_declarations(folder: Path, today: Callable[[], Declarations]) -> Declarations:
    """The adapters' declarations as ``folder``'s runs recorded them (harness/store/declarations.py); a folder
    written before declarations.json: ``today``'s (this checkout's adapters, which may differ from its runs')."""
    recorded = read_declarations(folder)
    return today() if recorded is None else recorded


def _fill_setup(row: dict[str, str]) -> None:
    for name, default in SETUP_DEFAULTS.items():
        if not row.get(name):
            row[name] = default
    if not row.get("repeat"):
        row["repeat"] = "1"


def _recode(row: dict[str, str]) -> None:
    if row.get("limited_by"):
        row["limited_by"] = LEGACY_SIDES.get(row["limited_by"], row["limited_by"])
    if row.get("lat_added_ms") and not row.get("wire_p50_ms"):
        row["lat_added_ms"] = ""    # before --capture: lat_p50 - the probe's RTT (could go negative)
    match = EMPTIED.search(row.get("notes") or "")
    if not row.get("lat_below_resolution") and match:
        row["lat_below_resolution"] = emptied_cell([c.strip() for c in match.group(1).split(",") if c.strip()]) or ""


def _fill_limited_by(row: dict[str, str], all_cpus: int) -> None:
    """limited_by where the row holds none: a run that did not end ok (its cell withheld) n/a; an ok run of a folder
    written before the column, the rule on its own cells without the contention check (that needs the samples)."""
    if row.get("limited_by"):
        return
    if row.get("status") != OK:
        row["limited_by"] = "n/a"
        return
    row["limited_by"] = side(_flag(row.get("tool_saturated")), _flag(row.get("target_saturated")),
                             bool(row.get("cpus_tool")), _number(row.get("cpu_avg_pct")),
                             _number(row.get("target_cpu_pct")), all_cpus)


def _flag(cell: str | None) -> bool | None:
    return cell.lower() == "true" if cell else None


def _number(cell: str | None) -> float | None:
    try:
        return float(cell) if cell else None
    except ValueError:
        return None
