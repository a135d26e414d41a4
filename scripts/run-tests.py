#!/usr/bin/env python3
"""`make test` after its installs: the suite's tiers in order, each timed, and one line per tier against
the budget at the end (tests/README.md: "Budget"). A line, not an assertion: the exit status is the
tests' own (1 when any tier failed).

  unit      pytest -m "not e2e", a test file per worker (no root, Docker or network; nothing waits on a lock)
  as-typed  the README's commands in throw-away clones (conftest.bench_quick and make_as_typed), one pytest
  e2e       session with the rest of the end-to-end tests, one test at a time (each measures: two at once
            would share the 2 cores); conftest splits the session's time between the two tiers
  VM        make test-netem: the netem path on a real kernel, one boot

Usage: scripts/run-tests.py [--installed-since EPOCH_S]   (EPOCH_S: when the installs started)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = str(REPO / ".venv" / "bin" / "python")
# Minutes per tier on 2 cores with the tools installed (the suite: 40); installs on a fresh machine come on top (55).
BUDGET_MIN = {"unit": 2, "as-typed": 17, "e2e": 11, "VM": 10}
SUITE_BUDGET_MIN, FRESH_BUDGET_MIN = 40, 55


def junit(tier: str) -> list[str]:
    """Every test's time in a JUnit file per tier where LTH_JUNIT_DIR names a folder (tests/README.md: Profile)."""
    folder = os.environ.get("LTH_JUNIT_DIR")
    return [f"--junitxml={Path(folder).resolve() / tier}.xml"] if folder else []


def timed(command: list[str], env: dict | None = None) -> tuple[int, float]:
    started = time.monotonic()
    status = subprocess.run(command, cwd=REPO, env={**os.environ, **(env or {})}).returncode
    return status, (time.monotonic() - started) / 60


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--installed-since", type=float, help="when the installs started (seconds since the epoch)")
    args = parser.parse_args()
    installs_min = (time.time() - args.installed_since) / 60 if args.installed_since else None
    minutes: dict[str, float] = {}
    failed: list[str] = []

    subprocess.run([PYTHON, "-m", "harness", "clean-state"], cwd=REPO)
    workers = str((os.cpu_count() or 1) + 1)
    status, minutes["unit"] = timed([PYTHON, "-m", "pytest", "-q", "-rs", "-m", "not e2e", "-n", workers,
                                     "--dist", "loadfile", *junit("unit"), "tests"])
    failed += ["unit"] if status else []

    with tempfile.NamedTemporaryFile(suffix=".json") as tiers:
        started = time.monotonic()
        status = subprocess.run([PYTHON, "-m", "pytest", "-q", "-rs", "-m", "e2e", "--durations=25", *junit("e2e"),
                                 "tests"],
                                cwd=REPO, env={**os.environ, "LTH_TEST_TOOLS": "all", "LTH_TIER_TIMES": tiers.name}
                                ).returncode
        session_min = (time.monotonic() - started) / 60
        split = json.loads(Path(tiers.name).read_text() or "{}")
    # the session's own start-up and the leak check at its end go to the e2e tier
    minutes["as-typed"] = split.get("as-typed", 0) / 60
    minutes["e2e"] = session_min - minutes["as-typed"]
    failed += ["end-to-end"] if status else []

    status, minutes["VM"] = timed(["make", "--no-print-directory", "test-netem"])
    failed += ["VM"] if status else []

    print("\nmake test, wall time per tier against the budget (tests/README.md):")
    for tier, used in minutes.items():
        print(f"  {tier:9} {used:5.1f} min  (budget {BUDGET_MIN[tier]})")
    total = sum(minutes.values())
    print(f"  {'suite':9} {total:5.1f} min  (budget {SUITE_BUDGET_MIN}, tools installed)")
    if installs_min is not None:
        print(f"  {'installs':9} {installs_min:5.1f} min (and the Docker images); with them {installs_min + total:.1f} min "
              f"(budget {FRESH_BUDGET_MIN} on a fresh machine)")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
