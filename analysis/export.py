"""A results folder in the formats the field reads (issue 51), all from its runs.csv (one stored result, every
format a transformation of it, as Nighthawk does):

    python -m analysis.export FOLDER [--check]

- ``FOLDER/export/rows.jsonl``: one JSON object per run, typed by the row's definition (harness/store/results.py
  RunRow) and valid against ``schema/run-row.schema.json``, which is generated from that definition
  (``--write-schema`` rewrites it; tests/test_export.py fails when the kept file differs);
- ``FOLDER/export/metrics.om``: OpenMetrics text, one gauge family per numeric figure (``lth_<column>``, its HELP
  the column's meaning), each sample labelled by tool, scenario, runtime, protocol and repeat;
- ``FOLDER/export/hdr/<tool>-<scenario>-<runtime>-<protocol>-<repeat>[-wire].hlog``: each run's HdrHistogram logs
  (harness/store/hdr.py: the tool's latencies where it gives them, the wire's with --capture), several
  generators' parts added into one.

Exit status: 0; 2 on bad input (one line: not a results folder, a row its schema refuses).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from dataclasses import fields
from pathlib import Path

import jsonschema
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry
from pydantic import TypeAdapter, ValidationError

from harness import REPO_ROOT
from harness.errors import HarnessError
from harness.store import hdr
from harness.store.hdr import LOG_NAME, WIRE_LOG
from harness.store.results import RunRow
from harness.store.safe import write_text_inside

SCHEMA_FILE = REPO_ROOT / "schema" / "run-row.schema.json"
LABELS = ("tool", "scenario", "runtime", "protocol", "repeat")
PREFIX = "lth_"
ROW = TypeAdapter(RunRow)


class ExportError(ValueError):
    """Bad input: said in one line."""


def row_schema() -> dict:
    """The JSON Schema of one row, from RunRow: each property's description is its column's meaning."""
    schema = ROW.json_schema()
    for field in fields(RunRow):
        schema["properties"][field.name]["description"] = field.metadata.get("doc", "")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "run-row.schema.json", **schema}


def typed_rows(folder: Path) -> list[dict]:
    """runs.csv's rows as typed values (numbers, booleans, null where a cell is empty)."""
    runs_csv = folder / "runs.csv"
    if not runs_csv.is_file():
        raise ExportError(f"{folder} has no runs.csv: pass a results folder (e.g. results/latest)")
    with runs_csv.open(newline="") as handle:
        raw = list(csv.DictReader(handle))
    names = {f.name for f in fields(RunRow)}
    rows = []
    for number, row in enumerate(raw, start=2):
        cells = {k: (None if v == "" else v) for k, v in row.items() if k in names}
        try:
            rows.append(ROW.dump_python(ROW.validate_python(_defaults_for_empty(cells)), mode="json"))
        except ValidationError as exc:
            problem = exc.errors()[0]
            raise ExportError(f"{runs_csv} line {number}: {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None
    return rows


def _defaults_for_empty(cells: dict) -> dict:
    """An empty cell of a column that is never null takes the column's default (a folder older than the column)."""
    required = {f.name for f in fields(RunRow) if "None" not in str(f.type)}
    return {k: v for k, v in cells.items() if not (v is None and k in required)}


def jsonl(rows: list[dict]) -> str:
    schema = json.loads(SCHEMA_FILE.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for number, row in enumerate(rows, start=1):
        if (error := next(iter(validator.iter_errors(row)), None)) is not None:
            raise ExportError(f"row {number}: {'.'.join(map(str, error.path))}: {error.message}")
    return "".join(json.dumps(row, sort_keys=True, allow_nan=False) + "\n" for row in rows)


class _Rows(Collector):
    def __init__(self, rows: list[dict]):
        self.rows = rows

    def collect(self):
        for field in fields(RunRow):
            if field.name in LABELS or not _numeric(field):
                continue
            family = GaugeMetricFamily(PREFIX + field.name, field.metadata.get("doc", field.name), labels=LABELS)
            for row in self.rows:
                value = row.get(field.name)
                if value is not None and not isinstance(value, bool) and math.isfinite(value):
                    family.add_metric([str(row[label]) for label in LABELS], float(value))
            yield family


def _numeric(field) -> bool:
    return any(t in str(field.type) for t in ("int", "float")) and "str" not in str(field.type)


def openmetrics(rows: list[dict]) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Rows(rows))
    return generate_latest(registry).decode()


def hdr_logs(folder: Path, rows: list[dict]) -> list[Path]:
    """Each run's HdrHistogram logs (the tool's and, with --capture, the wire's) under one name per run in
    export/hdr/; a run of several generators gets its parts' logs added into one (exact, no averaging)."""
    written = []
    for row in rows:
        run_dir = folder / row["run_dir"]
        name = re.sub(r"[^A-Za-z0-9.+-]", "_", "-".join(str(row[label]) for label in LABELS
                                                         if row.get(label) not in (None, "")))
        for stored, suffix in ((LOG_NAME, ""), (WIRE_LOG, "-wire")):
            parts = [run_dir / stored] if (run_dir / stored).is_file() else sorted(run_dir.glob(f"generator-*/{stored}"))
            if not parts:
                continue
            merged = hdr.empty()
            for part in parts:
                merged.add(hdr.read_log(part))
            comments = [f"{row['tool']} {row['scenario']} {row['runtime']}: {row['run_dir']}/{stored}"
                        + (f" of {len(parts)} generators, added" if len(parts) > 1 else "")]
            written.append(folder / "export" / "hdr" / hdr.write_log(
                hdr.to_counts(merged), folder / "export" / "hdr", comments, name=f"{name}{suffix}.hlog"))
    return written


def export(folder: Path) -> list[Path]:
    rows = typed_rows(folder)
    return [write_text_inside(folder, Path("export") / "rows.jsonl", jsonl(rows)),
            write_text_inside(folder, Path("export") / "metrics.om", openmetrics(rows)), *hdr_logs(folder, rows)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a results folder as JSON Lines (with its JSON Schema) and "
                                                 "OpenMetrics text, in FOLDER/export/.",
                                     epilog="example: lth export results/latest")
    parser.add_argument("folder", type=Path, nargs="?", default=REPO_ROOT / "results" / "latest")
    parser.add_argument("--write-schema", action="store_true", help=f"rewrite {SCHEMA_FILE.relative_to(REPO_ROOT)} "
                                                                    "from the row's definition and stop")
    args = parser.parse_args(argv)
    if args.write_schema:
        SCHEMA_FILE.parent.mkdir(exist_ok=True)
        SCHEMA_FILE.write_text(json.dumps(row_schema(), indent=1) + "\n")
        print(f"export: {SCHEMA_FILE}")
        return 0
    try:
        written = export(args.folder.resolve())
    except (ExportError, OSError, HarnessError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    for path in written:
        print(f"export: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
