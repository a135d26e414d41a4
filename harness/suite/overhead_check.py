"""What the harness costs the figure it measures (issue 53): a tool through the harness against the identical
command run by hand, in the same network setup and on the same CPUs, in interleaved pairs.

Each pair is one run through the harness (``Bench.run``: the code path of `harness run`, with its sampling,
stub_status counters, RTT probe and parsing) and one run of the same tool command by hand against the same
running target: on the host ``taskset -c <tool CPUs>`` in the root namespace (Nginx in the harness's network
namespace), in Docker ``docker run`` of the harness's own tool image on the harness's network with the same
``--cpuset-cpus``. The order flips every pair so that drift falls on both sides alike. Both sides' RPS come
from the same adapter's parser. Per runtime and tool: harness/by-hand per pair, their median and its 95%
bootstrap interval (3 pairs or more).

Usage (root, from the repository root; `make bench-overhead`):
    .venv/bin/python -m harness.suite.overhead_check [--runtime host|docker|both] [--tools wrk,oha] [--pairs 5]
        [--duration 10] [--results-root results]
Writes results/<UTC>-overhead/: overhead.json, the harness's folder of each runtime (runs.csv and every run's
raw files) and by-hand/ (each hand run's command and output).
"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import PREFIX, REPO_ROOT, TOOLS_DIR
from harness.cpus import format_cpus
from harness.errors import HarnessError
from harness.runtimes.base import Runtime
from harness.scenarios import Scenario, select
from harness.store.results import utc_stamp
from harness.suite.plan import Plan
from harness.suite.runner import Bench, opened
from harness.tools import registry
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec, ToolOutput

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"
RUNTIMES = ("host", "docker")
HARNESS, BY_HAND = "harness", "by hand"
CONFIDENCE, RESAMPLES, SEED = 0.95, 4000, 53   # the interval is a pure function of the ratios
MIN_PAIRS = 3        # as analysis/uncertainty.py: fewer give no interval (a bootstrap of 2 is 1 in 3)
BY_HAND_CONTAINER = f"{PREFIX}-overhead-by-hand"


# --- the arithmetic -------------------------------------------------------------------------------------------
def pair_order(index: int) -> tuple[str, str]:
    """Which side runs first in pair ``index`` (1-based): the harness in odd pairs, by hand in even ones."""
    return (HARNESS, BY_HAND) if index % 2 else (BY_HAND, HARNESS)


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                    seed: int = SEED) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the median (None below MIN_PAIRS values). With 5 values it is
    their range: the order statistics' own 94% interval of a median."""
    if len(values) < MIN_PAIRS:
        return None
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    tail = (1 - confidence) / 2
    return medians[int(tail * (resamples - 1))], medians[round((1 - tail) * (resamples - 1))]


@dataclass(frozen=True)
class Pair:
    index: int
    first: str                    # HARNESS or BY_HAND
    harness_rps: float | None     # None: that side failed (its error beside it)
    by_hand_rps: float | None
    harness_run: str = ""         # the harness's run folder, relative to the overhead folder
    by_hand_run: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        if not self.harness_rps or not self.by_hand_rps:
            return None
        return self.harness_rps / self.by_hand_rps


@dataclass(frozen=True)
class Summary:
    runtime: str
    tool: str
    ratios: list[float]
    failed: int                    # pairs with no ratio
    median: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, runtime: str, tool: str, pairs: Sequence[Pair]) -> "Summary":
        ratios = [p.ratio for p in pairs if p.ratio is not None]
        interval = median_interval(ratios)
        return cls(runtime, tool, ratios, len(pairs) - len(ratios), statistics.median(ratios) if ratios else None,
                   *(interval or (None, None)))

    def line(self) -> str:
        """`host wrk: harness/by-hand 0.97 [0.95, 0.99] over 5 pairs`."""
        head = f"{self.runtime} {self.tool}: harness/by-hand"
        failed = f" ({self.failed} failed)" if self.failed else ""
        n = len(self.ratios)
        if self.median is None:
            return f"{head} not measured: every pair failed{failed}"
        if self.low is None:
            return f"{head} {self.median:.3f} over {n} pair{'s' * (n != 1)}{failed} (no interval below {MIN_PAIRS})"
        return f"{head} {self.median:.3f} [{self.low:.3f}, {self.high:.3f}] over {n} pairs{failed}"


# --- the runs -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HandRun:
    """One run of the tool by hand: its command as run, and what the adapter's parser made of it."""
    argv: list[str]
    rps: float | None
    error: str | None


def by_hand_prefix(runtime: Runtime, results_root: Path, target_container: str = "") -> list[str]:
    """What runs the tool's command by hand where the harness runs it, on the same CPUs (Docker: on the
    network of ``target_container``, the harness's target)."""
    tool_cpus = format_cpus(runtime.split.tool_cpus)
    if runtime.name == "host":
        return ["taskset", "-c", tool_cpus]
    return ["docker", "run", "--rm", "--init", "--name", BY_HAND_CONTAINER, "--network",
            container_network(target_container), "--cpuset-cpus", tool_cpus,
            "-v", f"{results_root}:{results_root}", "-v", f"{TOOLS_DIR}:{TOOLS_DIR}:ro"]


def container_network(container: str) -> str:
    """The one network ``container`` is on (the harness's Compose network for its target)."""
    result = subprocess.run(["docker", "inspect", "--format",
                             "{{range $name, $network := .NetworkSettings.Networks}}{{$name}} {{end}}", container],
                            capture_output=True, text=True, check=False)
    names = result.stdout.split()
    if result.returncode != 0 or len(names) != 1:
        raise HarnessError(f"docker runtime: the target container {container or '(none)'} is not on one network: "
                           f"{names or result.stderr.strip()}")
    return names[0]


def tool_image_args(runtime: Runtime, adapter: ToolAdapter) -> list[str]:
    if runtime.name == "host":
        return []
    from harness.runtimes.docker import tool_image
    return [tool_image(adapter)]


def run_by_hand(prefix: list[str], adapter: ToolAdapter, spec: RunSpec) -> HandRun:
    """The adapter's command for ``spec`` after ``prefix``; its output kept in spec.out_dir."""
    spec.out_dir.mkdir(parents=True)
    argv = [*prefix, *adapter.command(spec)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=spec.duration_s + 60,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return HandRun(argv, None, f"by hand: no end {spec.duration_s + 60} s after the start")
    except OSError as exc:   # taskset, docker or the tool not installed
        return HandRun(argv, None, f"by hand: {exc}")
    finally:
        if prefix and prefix[0] == "docker":   # a killed `docker run` client leaves its container running
            subprocess.run(["docker", "rm", "--force", BY_HAND_CONTAINER], capture_output=True, check=False)
    (spec.out_dir / "command.txt").write_text(shlex.join(argv) + "\n")
    (spec.out_dir / "stdout.txt").write_text(done.stdout)
    (spec.out_dir / "stderr.txt").write_text(done.stderr)
    try:
        rps = adapter.parse(ToolOutput(spec, done.stdout, done.stderr, done.returncode)).rps
    except Exception as exc:  # noqa: BLE001 - the pair is failed, the benchmark goes on
        return HandRun(argv, None, f"by hand: exit {done.returncode}, {type(exc).__name__}: {exc}")
    return HandRun(argv, rps, None if rps else f"by hand: exit {done.returncode}, no RPS")


@dataclass
class Measured:
    runtime: str
    tool: str
    pairs: list[Pair] = field(default_factory=list)
    by_hand_command: list[str] = field(default_factory=list)
    harness_command: list[str] = field(default_factory=list)


def by_hand_setup(bench: Bench, adapter: ToolAdapter, scenario: Scenario, out_dir: Path) -> tuple[RunSpec, list[str]]:
    """The RunSpec the harness builds for this scenario (runner._execute), into ``out_dir``, and the prefix that
    runs it by hand. A session of the runtime finds both (in Docker it also brings the target up)."""
    with bench.runtime.session(adapter) as session:
        spec = RunSpec(url=session.target.url, vus=scenario.vus, duration_s=scenario.duration_s, out_dir=out_dir,
                       cpus=session.cpus, keepalive=scenario.keepalive, protocol=scenario.protocol,
                       streams=scenario.streams)
        prefix = by_hand_prefix(bench.runtime, bench.plan.results_root, getattr(session, "target_id", ""))
    return spec, [*prefix, *tool_image_args(bench.runtime, adapter)]


def one_pair(bench: Bench, adapter: ToolAdapter, scenario: Scenario, index: int, root: Path) -> tuple[Pair, HandRun]:
    spec, prefix = by_hand_setup(bench, adapter, scenario,
                                 root / "by-hand" / f"{bench.runtime.name}-{adapter.name}-{index}")
    rps: dict[str, float | None] = {}
    errors: list[str] = []
    harness_run, hand = "", None
    for side in pair_order(index):
        if side == HARNESS:
            row = bench.run(scenario, adapter, repeat=index)
            rps[side], harness_run = (row.rps if row.status == "ok" else None), str(bench.folder.path / row.run_dir)
            errors += [f"harness: {row.status}: {row.error}"] if row.status != "ok" else []
        else:
            hand = run_by_hand(prefix, adapter, spec)
            rps[side] = hand.rps
            errors += [hand.error] if hand.error else []
    pair = Pair(index, pair_order(index)[0], rps[HARNESS], rps[BY_HAND], str(Path(harness_run).relative_to(root)),
                str(spec.out_dir.relative_to(root)), errors)
    return pair, hand


def measure_runtime(runtime: str, adapters: list[ToolAdapter], scenario: Scenario, pairs: int,
                    root: Path) -> list[Measured]:
    """Every pair of every tool in one runtime, entered once: the tools take turns within each pair index."""
    plan = Plan(runtime=runtime, tools=adapters, scenarios=[scenario], results_root=root)
    measured = {a.name: Measured(runtime, a.name) for a in adapters}
    with opened(plan) as bench:
        for index in range(1, pairs + 1):
            for adapter in adapters:
                print(f"{runtime} {adapter.name}: pair {index}/{pairs}, {' then '.join(pair_order(index))}", flush=True)
                pair, hand = one_pair(bench, adapter, scenario, index, root)
                entry = measured[adapter.name]
                entry.pairs.append(pair)
                entry.by_hand_command = hand.argv
                print(f"   harness {_rps(pair.harness_rps)}, by hand {_rps(pair.by_hand_rps)}: ratio "
                      f"{'n/a' if pair.ratio is None else f'{pair.ratio:.3f}'}" + "".join(f"; {e}" for e in pair.errors),
                      flush=True)
                entry.harness_command = _harness_command(root / pair.harness_run)
    return list(measured.values())


def _harness_command(run_dir: Path) -> list[str]:
    record = run_dir / "record.json"
    if not record.is_file():
        return []
    parts = json.loads(record.read_text()).get("parts") or [{}]
    return parts[0].get("command") or []


def _rps(value: float | None) -> str:
    return "failed" if value is None else f"{value:,.0f} rps"


# --- the command ----------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.suite.overhead_check", description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", choices=(*RUNTIMES, "both"), default="host")
    parser.add_argument("--tools", default="wrk,oha", help="tool ids (default: wrk,oha: a C tool and a Rust tool)")
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs per runtime and tool")
    parser.add_argument("--duration", type=int, default=10, help="seconds per run")
    parser.add_argument("--results-root", type=Path, default=REPO_ROOT / "results")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.duration < 1:
        parser.error("--pairs and --duration must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        adapters = registry.select(args.tools)
        scenario = select(f"{REPO_ROOT}/{SCENARIO}", args.duration)[0]
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    root = args.results_root.resolve() / f"{utc_stamp()}-overhead"
    root.mkdir(parents=True)
    runtimes = RUNTIMES if args.runtime == "both" else (args.runtime,)
    measured: list[Measured] = []
    try:
        for runtime in runtimes:
            measured += measure_runtime(runtime, adapters, scenario, args.pairs, root)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if not measured and not any(root.iterdir()):
            root.rmdir()
            return 2
    finally:
        if measured:
            write(root, measured, args, sys.argv)
    summaries = [Summary.of(m.runtime, m.tool, m.pairs) for m in measured]
    print("\n".join(s.line() for s in summaries) + f"\nwritten: {root / 'overhead.json'}")
    complete = len(summaries) == len(runtimes) * len(adapters) and all(s.median is not None for s in summaries)
    return 0 if complete else 1


def write(root: Path, measured: list[Measured], args: argparse.Namespace, command: list[str]) -> None:
    results = [{**asdict(Summary.of(m.runtime, m.tool, m.pairs)), "line": Summary.of(m.runtime, m.tool, m.pairs).line(),
                "pairs": [{**asdict(p), "ratio": p.ratio} for p in m.pairs],
                "harness_command": m.harness_command, "by_hand_command": m.by_hand_command} for m in measured]
    summary = {"issue": 53, "scenario": SCENARIO, "duration_s": args.duration, "pairs_asked": args.pairs,
               "confidence": CONFIDENCE, "interval": f"percentile bootstrap of the median ratio ({RESAMPLES} "
               f"resamples, seed {SEED}); none below {MIN_PAIRS} pairs", "command": command, "results": results}
    (root / "overhead.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
