"""results/sample from a real run: ``.venv/bin/python scripts/refresh_sample.py RESULTS_FOLDER... [--tools wrk,ab]
[--out results/sample]`` copies each folder's runs of those tools (their raw files, environment.json and their
rows of runs.csv; no report, no pcap) to OUT/<folder name>, then derives its runs.csv and meta.json again from
the raw files (``python -m harness rederive``), so the sample holds today's columns and can be derived again.

Use it on a real ``make bench-quick TOOLS=wrk,ab REPEAT=2`` in each runtime, replace the old sample folders
with what it writes, then run the unit tests that read results/sample (tests/README.md: the unit tier) and
tests/test_docs.py, which checks the sample's columns against runs.csv's schema."""
from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEPT = ("environment.json",)
LEFT_OUT = {"lth-capture.pcap"}


def refresh(source: Path, tools: set[str], out: Path) -> Path:
    if not (source / "runs.csv").is_file():
        raise SystemExit(f"error: {source} has no runs.csv: pass a results folder (e.g. results/latest)")
    with (source / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        header, rows = reader.fieldnames, [row for row in reader if row["tool"] in tools]
    if not rows:
        raise SystemExit(f"error: {source}/runs.csv has no run of {', '.join(sorted(tools))}")
    target = out / source.resolve().name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in KEPT:
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)
    for row in rows:
        shutil.copytree(source / row["run_dir"], target / row["run_dir"],
                        dirs_exist_ok=True,
                        ignore=lambda _, names: [n for n in names if n in LEFT_OUT or n.startswith("repeat-")])
    with (target / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    python = REPO / ".venv" / "bin" / "python"
    subprocess.run([str(python if python.exists() else sys.executable), "-m", "harness", "rederive", str(target)],
                   cwd=REPO, check=True)
    (target / "runs.csv.before-rederive").unlink(missing_ok=True)
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--tools", default="wrk,ab")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "sample")
    args = parser.parse_args(argv)
    for folder in args.folders:
        print(f"{refresh(folder, set(args.tools.split(',')), args.out)}: refreshed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
