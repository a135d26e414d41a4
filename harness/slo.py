"""Service-level objectives that gate a run (issue 51), as k6's thresholds do: a scenario may state them
(``slo: {p99_ms: 25, error_rate: 0.001, min_rps: 1000}``) or the command line may (``--slo p99_ms=25,min_rps=1000``,
which overrides the scenario's); every ok row gets a verdict per objective, and a suite with a failed objective
exits SLO_FAILED (3): distinct from a harness error or failed runs (1) and from bad input (2).

    python -m harness.slo FOLDER [--slo p99_ms=25,...] [--junit FILE]

judges a results folder after the fact (the same code the suite runs at its end); --junit writes JUnit XML, one
test case per row and objective, for CI systems.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

SLO_FAILED = 3


class Slo(BaseModel):
    """The objectives; each one optional, at least one given."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    p50_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    p99_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)
    error_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False, strict=True)
    min_rps: float | None = Field(default=None, gt=0, allow_inf_nan=False, strict=True)

    @model_validator(mode="after")
    def _one_at_least(self) -> "Slo":
        if not self.stated():
            raise ValueError(f"an slo needs at least one of {', '.join(RULES)}")
        return self

    def stated(self) -> dict[str, float]:
        return {name: value for name, value in self.model_dump().items() if value is not None}


# objective -> (the row's figure, "max" if the figure must stay at or below the limit, "min" at or above)
RULES = {"p50_ms": ("lat_p50_ms", "max"), "p99_ms": ("lat_p99_ms", "max"), "error_rate": ("error_rate", "max"),
         "min_rps": ("rps", "min")}


@dataclass(frozen=True)
class Verdict:
    objective: str
    limit: float
    value: float | None       # None: the row has no such figure (the objective is not met: nothing proves it)

    @property
    def passed(self) -> bool:
        if self.value is None:
            return False
        return self.value <= self.limit if RULES[self.objective][1] == "max" else self.value >= self.limit

    def text(self) -> str:
        sign = "<=" if RULES[self.objective][1] == "max" else ">="
        shown = "not reported" if self.value is None else f"{self.value:g}"
        return f"{self.objective} {shown} {sign} {self.limit:g}: {'ok' if self.passed else 'FAILED'}"


def parse(text: str) -> Slo:
    """--slo "p99_ms=25,error_rate=0.001": a ValueError naming the problem in one line."""
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, number = part.partition("=")
        if not sep:
            raise ValueError(f"--slo {text!r}: {part!r} is not name=value (names: {', '.join(RULES)})")
        try:
            values[name.strip()] = float(number)
        except ValueError:
            raise ValueError(f"--slo {text!r}: {number!r} is not a number") from None
    return of(values, f"--slo {text!r}")


def of(values: object, where: str) -> Slo:
    if not isinstance(values, dict) or not values:
        raise ValueError(f"{where}: an slo needs at least one of {', '.join(RULES)}")
    try:
        return Slo(**values)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ValueError(f"{where}: {'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None


def _figure(row: dict, column: str) -> float | None:
    if column == "error_rate":
        requests, errors = _number(row.get("requests")), _number(row.get("errors"))
        if requests is None or errors is None or requests + errors == 0:
            return None
        return errors / (requests + errors)
    return _number(row.get(column))


def _number(text: object) -> float | None:
    try:
        return None if text in (None, "") else float(text)
    except (TypeError, ValueError):
        return None


def judge(row: dict, slo: Slo) -> list[Verdict]:
    return [Verdict(name, limit, _figure(row, RULES[name][0])) for name, limit in slo.stated().items()]


def scenario_slo(folder: Path, row: dict) -> Slo | None:
    """The objectives the run's scenario stated (its record.json), if any."""
    record = folder / row.get("run_dir", "") / "record.json"
    try:
        stated = json.loads(record.read_text()).get("scenario", {}).get("slo")
    except (OSError, ValueError, AttributeError):
        return None
    return of(stated, str(record)) if stated else None


def judge_folder(folder: Path, override: Slo | None = None) -> list[tuple[dict, list[Verdict]]]:
    """Every ok row with objectives (the override, else its scenario's), and its verdicts."""
    with (folder / "runs.csv").open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r.get("status") == "ok"]
    judged = []
    for row in rows:
        slo = override or scenario_slo(folder, row)
        if slo is not None:
            judged.append((row, judge(row, slo)))
    return judged


def junit(judged: list[tuple[dict, list[Verdict]]], name: str) -> str:
    """JUnit XML: a test suite per results folder, a test case per row and objective."""
    cases = [(row, v) for row, verdicts in judged for v in verdicts]
    suite = ElementTree.Element("testsuite", name=name, tests=str(len(cases)),
                                failures=str(sum(not v.passed for _, v in cases)))
    for row, verdict in cases:
        case = ElementTree.SubElement(suite, "testcase", classname=f"{row['scenario']}.{row['tool']}",
                                      name=f"{verdict.objective} (repeat {row.get('repeat', '1')}, {row['runtime']})")
        if not verdict.passed:
            ElementTree.SubElement(case, "failure", message=verdict.text())
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def summary(judged: list[tuple[dict, list[Verdict]]]) -> list[str]:
    failed = [(row, v) for row, verdicts in judged for v in verdicts if not v.passed]
    total = sum(len(v) for _, v in judged)
    lines = [f"slo: {total - len(failed)} of {total} objectives met over {len(judged)} rows"]
    lines += [f"  FAILED {row['scenario']} {row['tool']} (repeat {row.get('repeat', '1')}): {v.text()}"
              for row, v in failed]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Judge a results folder's rows against SLOs (exit 3 when one fails).",
                                     epilog="example: lth slo results/latest --slo p99_ms=25,min_rps=1000 "
                                            "--junit slo.xml")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--slo", help="objectives overriding the scenarios': p50_ms, p99_ms, error_rate, min_rps")
    parser.add_argument("--junit", type=Path, help="write JUnit XML here (a test case per row and objective)")
    args = parser.parse_args(argv)
    try:
        override = parse(args.slo) if args.slo else None
        if not (args.folder / "runs.csv").is_file():
            raise ValueError(f"{args.folder} has no runs.csv: pass a results folder (e.g. results/latest)")
        judged = judge_folder(args.folder, override)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    print("\n".join(summary(judged)))
    if args.junit:
        args.junit.write_text(junit(judged, args.folder.resolve().name))
    return SLO_FAILED if any(not v.passed for _, verdicts in judged for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
