"""The one upgrade point (issue 50.2): any older results folder's runs.csv rows read as the current schema.

Every row carries ``schema_version`` (runs.csv column, and meta.json's field of the same name: one number,
harness/store/record.py SCHEMA_VERSION). The versions:
  0  before record.json (no meta.json schema_version): the rows read, but rederive refuses the folder;
  1  record.json and meta.json's schema_version; runs.csv has no schema_version column;
  2  runs.csv's schema_version column; every percentile nearest rank (harness/stats.py; the wire's were
     numpy's linear interpolation: rederive a folder with kept pcaps to move them).
A runs.csv without the column reads as version 1: versions 0 and 1 hold the same row columns (only
record.json tells them apart, which rederive checks), and each fix below reads only the row.

The fixes, each of a folder written before its column or code existed (they were in analysis/load.py):
the setup columns' defaults, limited_by's old values, lat_added_ms before --capture, the emptied-below-
resolution note, repeat, and the retired columns' values. A row of a version newer than this checkout's
is refused (FutureSchema): reading it as today's would drop or misread what it holds.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from harness.store.figures import emptied_cell
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
# Emptied since 2026-11-27: values of a 1-VU baseline run no longer read (memory per VU: analysis/memory.py).
RETIRED = ("mem_per_vu_kb", "mem_baseline_mb")


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


def upgrade_row(row: dict[str, str]) -> dict[str, str]:
    """One runs.csv row (cells as read: "" is empty) as the current schema writes it; the input is untouched."""
    version, row = version_of(row), dict(row)
    if version < 2:
        _fill_setup(row)
        _recode(row)
    row[COLUMN] = str(SCHEMA_VERSION)
    return row


def upgrade_rows(rows: Iterable[dict[str, str]]) -> Upgraded:
    rows = list(rows)
    versions = [version_of(row) for row in rows]         # every row checked before any is changed
    return Upgraded([upgrade_row(row) for row in rows], max(versions, default=SCHEMA_VERSION))


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
    for name in RETIRED:
        if name in row:
            row[name] = ""
