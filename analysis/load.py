"""Load any set of results folders into one pandas DataFrame (the notebook entry point).

    from analysis import load_results
    df = load_results("results/latest", "results/20261123T001500Z-docker")

One row per run, the columns of runs.csv (numbers as floats, empty cells as NaN: a metric a tool
does not report stays missing, never 0), plus ``folder`` (the folder's name), ``label`` (what
charts call it) and ``env_*`` columns from its environment.json.

A latency under or at the tool's timing resolution (a whole-ms tool's 0 or 1: harness/store/figures.py
resolution_mark, the harness's rule too) is no figure to compare: it becomes NaN, and ``<column>_below_res``
says "< res" (under: emptied by the harness) or "~res" (at the step).

Each folder's rows are read through harness/store/upgrade.py, the one place older folders' rows become the
current schema's (a row of a newer schema: FutureSchema, which the report prints in one line).
"""
from __future__ import annotations

import csv
import json
from dataclasses import fields
from pathlib import Path
from typing import get_args, get_type_hints

import numpy as np
import pandas as pd

from harness.store.figures import AT_STEP, LATENCY_FIELDS, UNDER_STEP, emptied_columns, resolution_mark
from harness.store.limits import CONTENDED
from harness.store.results import RunRow
from harness.store.upgrade import FutureSchema, upgrade_header, upgrade_rows


def _numeric(hint: object) -> bool:
    """int or float, optional or not; bool (a subclass of int) is not a number here."""
    return hint in (int, float) or any(arg in (int, float) for arg in get_args(hint))


NUMERIC = [f.name for f in fields(RunRow) if _numeric(get_type_hints(RunRow)[f.name])]
LATENCY = list(LATENCY_FIELDS)
ENVIRONMENT_KEYS = ["hostname", "kernel", "cpu_model", "cores", "memory_gib", "harness_commit", "docker_version",
                    "shaper"]


def environment(folder: Path) -> dict:
    path = folder / "environment.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def load_results(*folders: str | Path) -> pd.DataFrame:
    frames = []
    for folder in map(Path, folders):
        folder = folder.resolve()
        runs_csv = folder / "runs.csv"
        if not runs_csv.is_file():
            raise FileNotFoundError(f"{folder} has no runs.csv: is it a results folder?")
        env = environment(folder)
        frame = read_runs(runs_csv, _cores(env))
        frame["folder"] = folder.name
        for key in ENVIRONMENT_KEYS:
            frame[f"env_{key}"] = env.get(key)
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    for column in NUMERIC:  # a folder written before a column existed reads as "not measured"
        df[column] = pd.to_numeric(df[column], errors="coerce") if column in df else float("nan")
    if "backend_delay_ms" not in df:
        df["backend_delay_ms"] = None
    df["label"] = _labels(df) if len(df) else []
    # a run during which other processes took the sides' CPUs (harness/row/bottleneck.py's note, CONTENDED): its figures
    # are marked wherever they are shown
    notes = df["notes"] if "notes" in df else pd.Series("", index=df.index)
    df["contended"] = notes.fillna("").astype(str).str.contains(CONTENDED, regex=False)
    return mask_below_resolution(df) if "timing_resolution_ms" in df else df


def read_runs(runs_csv: Path, all_cpus: int = 0) -> pd.DataFrame:
    """One folder's runs.csv upgraded to the current schema (cells as strings, empty ones NaN); a row of a
    newer schema: FutureSchema naming the file. ``all_cpus``: the machine's CPUs (environment.json's cores)."""
    with runs_csv.open(newline="") as handle:
        reader = csv.DictReader(handle)
        stored = list(reader)
        header = list(reader.fieldnames or [])
    try:
        upgraded = upgrade_rows(stored, all_cpus)
    except FutureSchema as exc:
        raise FutureSchema(f"{runs_csv}: {exc}") from None
    named = dict.fromkeys([*upgrade_header(header), *(name for row in upgraded.rows for name in row)])
    columns = [name for name in named if name is not None]     # None: the cells of a row longer than the header
    return pd.DataFrame(upgraded.rows, columns=columns, dtype=str).replace({"": np.nan})


def _cores(env: dict) -> int:
    """environment.json's cores (0: not recorded or not a number)."""
    try:
        return int(float(env.get("cores")))
    except (TypeError, ValueError):
        return 0


def default_setup(df: pd.DataFrame) -> pd.Series:
    """Rows against the shootout's target: plain Nginx, keep-alive, HTTP/1.1 without TLS, no backend delay."""
    return ((df["target"] == "nginx") & (df["keepalive"].astype(str) == "True") & (df["tls"].astype(str) == "False")
            & (df["protocol"] == "http/1.1" if "protocol" in df else True) & df["backend_delay_ms"].isna())


def closed_model(df: pd.DataFrame) -> pd.DataFrame:
    """The closed-model runs of the shootout's kind: no arrival rate, no stall, the plain Nginx target."""
    rate = df["rate_target_rps"] if "rate_target_rps" in df else pd.Series(np.nan, index=df.index)
    stall = df["stall_ms"] if "stall_ms" in df else pd.Series(np.nan, index=df.index)
    return df[rate.isna() & stall.isna() & default_setup(df)]


def _emptied(row: pd.Series) -> set[str]:
    """The latency columns the harness emptied as below the tool's resolution."""
    named = row.get("lat_below_resolution")
    return set(emptied_columns(named)) if isinstance(named, str) else set()


def mask_below_resolution(df: pd.DataFrame) -> pd.DataFrame:
    """Latencies the tool's clock cannot resolve (harness/store/figures.py resolution_mark) become NaN, never drawn
    nor ranked as a number: ``<column>_below_res`` says "< res" (under the step: emptied by the harness) or "~res"
    (at the step)."""
    emptied = df.apply(_emptied, axis=1) if len(df) else pd.Series([], dtype=object)
    resolution = df["timing_resolution_ms"]
    shown = resolution.map("{:g}".format).astype(object)
    for column in LATENCY:
        marks = _resolution_marks(df[column], resolution)
        named = emptied.map(lambda names: column in names).astype(bool)
        under, at = named | (marks == UNDER_STEP), ~named & (marks == AT_STEP)
        df[f"{column}_below_res"] = None
        df.loc[under, f"{column}_below_res"] = "< " + shown[under]
        df.loc[at, f"{column}_below_res"] = "~" + shown[at]
        df.loc[marks.notna(), column] = float("nan")
    if "lat_added_ms" in df:
        df.loc[df["lat_p50_ms"].isna(), "lat_added_ms"] = float("nan")  # p50 - RTT means nothing then
    return df


def _resolution_marks(values: pd.Series, resolution: pd.Series) -> pd.Series:
    """resolution_mark of each latency (NaN compares as no value)."""
    return pd.Series([resolution_mark(value, step) for value, step in zip(values, resolution)], index=values.index,
                     dtype=object)


def _labels(df: pd.DataFrame) -> pd.Series:
    """The tool, plus the runtime when both are present, plus the folder when several folders
    share a runtime (two machines, two tool versions)."""
    label = df["tool"].copy()
    if df["runtime"].nunique() > 1:
        label += " (" + df["runtime"] + ")"
    if (df.groupby("runtime")["folder"].nunique() > 1).any():
        label += " · " + df["folder"]
    return label


def scenario_order(df: pd.DataFrame) -> list[str]:
    """Scenarios ordered as the study lists them: by RTT, then VUs."""
    order = df.drop_duplicates("scenario").sort_values(["rtt_target_ms", "vus"])
    return list(order["scenario"])
