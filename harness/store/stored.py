"""One stored run as the derivation reads it (StoredRun: record.json, each part's execution, RunSpec and
latency histogram), and what the derivation gives back to be written (Derived: meta.json per folder).

Reading and writing are here; harness/row/ derives a StoredRun into a Derived without touching a file.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, replace
from pathlib import Path

from harness.scenarios import Scenario
from harness.store.hdr import LatencyHistogram, read_histogram
from harness.store.record import Execution, PartRecord, RunRecord, load_execution
from harness.store.results import RunRow, write_meta


@dataclass(frozen=True)
class StoredPart:
    """One tool process as stored: its record, its files' folder, and what it left there."""
    record: PartRecord
    folder: Path                          # where its files are now
    spec: dict                            # the RunSpec it was given (RunSpec.to_record)
    execution: Execution | None           # None: the process never started
    histogram: LatencyHistogram | None    # several parts: its stored latencies (None: none stored, or an error)


@dataclass(frozen=True)
class StoredRun:
    record: RunRecord
    run_dir: Path
    parts: list[StoredPart]

    @property
    def scenario(self) -> Scenario:
        return Scenario.model_validate(self.record.scenario)

    def crashed(self, exc: BaseException) -> "StoredRun":
        """This run reduced to its setup, failed with ``exc`` (raised while reading or deriving it): none of the
        facts the crash may have come from is left."""
        record = replace(self.record, error=f"harness error: {type(exc).__name__}: {exc}",
                         traceback=traceback.format_exc(), parts=[], capture=None, stall=None,
                         server_off_protocol=None, server_api=None, shaper_load=None, phases_s={})
        return StoredRun(record, self.run_dir, [])


def load_run(record: RunRecord, run_dir: Path) -> StoredRun:
    """The run ``record`` describes, its files read from ``run_dir``; a file that cannot be read makes the
    run's failure (StoredRun.crashed), never the caller's."""
    stored = StoredRun(record, run_dir, [])
    try:
        return StoredRun(record, run_dir, [_load_part(record, part, run_dir) for part in record.parts])
    except Exception as exc:  # noqa: BLE001 - one run's unreadable file must not sink the suite or the rederive
        return stored.crashed(exc)


def _load_part(record: RunRecord, part: PartRecord, run_dir: Path) -> StoredPart:
    folder = run_dir / part.folder
    execution = load_execution(folder) if part.executed else None
    merged = len(record.parts) > 1 and part.histogram is not None and "error" not in part.histogram
    histogram = read_histogram(folder, part.histogram) if merged and execution is not None else None
    return StoredPart(part, folder, part.spec or legacy_spec(record, part), execution, histogram)


def legacy_spec(record: RunRecord, part: PartRecord) -> dict:
    """A part stored before its RunSpec was (PartRecord.spec): the spec the runner gave the tool, made again from
    the scenario and the part, once, here (RunSpec.to_record's fields)."""
    scenario = Scenario.model_validate(record.scenario)
    return {"url": part.url, "vus": part.vus, "duration_s": scenario.duration_s, "cpus": part.cpus,
            "rate_rps": part.rate_rps, "per_request": part.per_request, "keepalive": scenario.keepalive,
            "protocol": scenario.protocol, "streams": scenario.streams, "flow": scenario.flow,
            "relogin_every": scenario.relogin_every}


@dataclass
class Derived:
    """A run's row and meta.json, as harness/row derived them from a StoredRun."""
    run_dir: Path
    row: RunRow
    meta: dict                               # the run folder's meta.json
    parts: list[tuple[Path, RunRow, dict]]   # several generators: each part's folder, row and meta.json

    def write(self) -> None:
        """meta.json in the run's folder (and each part's)."""
        write_meta(self.run_dir, self.row, self.meta)
        for folder, row, meta in self.parts:
            write_meta(folder, row, meta)
