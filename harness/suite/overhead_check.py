"""Measures what the harness itself costs, on this machine, scenario vu20-rtt0.1.

(a) wrk through the harness (sampling, stub_status, the same code path as `harness run`) vs the
    identical wrk command run by hand in the same network setup, interleaved, N runs each:
    ratio of median RPS (should be >= 0.98).
(b) Docker vs host RPS ratio for wrk and ab, interleaved rounds, medians.

Usage (root, from the repository root): .venv/bin/python -m harness.suite.overhead_check [--duration 10] [--rounds 3]
Writes a results folder (runtime "overhead") with every harness row and overhead.json.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

from harness import REPO_ROOT
from harness.runtimes.docker import DockerRuntime
from harness.runtimes.host import HostRuntime
from harness.scenarios import select
from harness.store.results import ResultsFolder
from harness.suite.runner import run_one
from harness.tools import registry
from harness.tools.output import RunSpec


def wrk_by_hand(runtime: HostRuntime, duration_s: int, out_dir: Path) -> float:
    wrk = registry.select("wrk")[0]
    spec = RunSpec(url=runtime.target.url, vus=20, duration_s=duration_s, out_dir=out_dir, cpus=2)
    stdout = subprocess.run(wrk.command(spec), capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", stdout).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--part", choices=("a", "b", "both"), default="both")
    args = parser.parse_args()
    scenario = select(f"{REPO_ROOT}/scenarios/shootout.yaml:vu20-rtt0.1", args.duration)[0]
    wrk, ab = registry.select("wrk,ab")
    results_root = REPO_ROOT / "results"
    folder = ResultsFolder.create(results_root, "overhead")
    by_hand_dir = folder.path / "by-hand"
    by_hand_dir.mkdir()
    rps: dict[str, list[float]] = {}

    def record(key: str, value: float | None) -> None:
        rps.setdefault(key, []).append(value)
        print(f"  {key:18} {value:,.0f} rps" if value else f"  {key:18} FAILED", flush=True)

    def through_harness(runtime, adapter, key: str | None = None) -> None:
        row = run_one(runtime, adapter, scenario, folder)
        folder.append(row)
        record(key or f"{adapter.name} {runtime.name}", row.rps)

    host, docker = HostRuntime(), DockerRuntime(results_root)
    runtimes = [host] if args.part == "a" else [host, docker]
    problems = [p for runtime in runtimes for p in runtime.problems([wrk, ab])]
    if problems:
        sys.exit("error: " + "; ".join(problems))
    for runtime in runtimes:
        runtime.prepare([wrk, ab])
    with host:
        # (a) host only; the order flips every round so drift hits both sides alike.
        for round_no in range(1, args.rounds + 1 if args.part != "b" else 1):
            print(f"(a) round {round_no}/{args.rounds}", flush=True)
            steps = [lambda: record("wrk by hand", wrk_by_hand(host, args.duration, by_hand_dir)),
                     lambda: through_harness(host, wrk, "wrk via harness")]
            for step in steps if round_no % 2 else reversed(steps):
                step()
        # (b) host and Docker rounds, interleaved.
        with docker:
            for round_no in range(1, args.rounds + 1 if args.part != "a" else 1):
                print(f"(b) round {round_no}/{args.rounds}", flush=True)
                for runtime in (docker, host) if round_no % 2 else (host, docker):
                    for adapter in (wrk, ab):
                        through_harness(runtime, adapter)

    med = {k: statistics.median(v) for k, v in rps.items() if None not in v}
    summary = {
        "duration_s": args.duration, "rounds": args.rounds, "rps": rps, "median_rps": med,
        "a_harness_over_by_hand_wrk": med["wrk via harness"] / med["wrk by hand"] if "wrk by hand" in med else None,
        "b_docker_over_host": {t: med[f"{t} docker"] / med[f"{t} host"] for t in ("wrk", "ab")
                               if f"{t} docker" in med},
    }
    folder.write_json("overhead.json", summary)
    print(json.dumps({k: summary[k] for k in ("median_rps", "a_harness_over_by_hand_wrk", "b_docker_over_host")},
                     indent=2))
    print(f"written: {folder.path / 'overhead.json'}")


if __name__ == "__main__":
    main()
