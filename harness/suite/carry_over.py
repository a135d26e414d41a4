"""Does a run depend on the side of the run before it? (issue 53; `lth overhead --carry-over RUNS`)

The overhead check's pairs assume a run's rate depends on its own side (through the harness or by hand), not on
what ran just before it. This measures both at once: RUNS runs of the check's own two sides (its ``one_side``) in
a seeded random order (``order``), then per runtime and tool an ordinary least squares fit of log RPS on "this run
went through the harness" and "the run before it did", with one level per block of BLOCK_RUNS runs for the
machine's drift. Both effects come back as factors on the rate with 95% normal intervals. Writes results/<UTC>-carry-over/carry-over.json (every run, then the effects)."""
from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

from harness.cpus import CpuSplit, choose_split
from harness.scenarios import Scenario
from harness.store.lock import Held
from harness.store.results import utc_stamp
from harness.tools.adapter import ToolAdapter

# one run of a side alone: (side, runtime, tool, scenario, CPUs, the folder, the lock, a name for its files) -> (RPS
# or None, error); overhead_check.one_side
RunSide = Callable[[str, str, ToolAdapter, Scenario, CpuSplit, Path, Held, str], tuple[float | None, str | None]]
BLOCK_RUNS = 30      # drift levels: the rate here wanders over minutes (CHANGELOG 2026-11-29)
Z95 = NormalDist().inv_cdf(0.975)
SEED = 7


@dataclass(frozen=True)
class Run:
    index: int
    runtime: str
    tool: str
    side: str                 # overhead_check.HARNESS or BY_HAND
    after: str | None         # the side of the run just before (None: the first)
    rps: float | None         # None: failed (error)
    error: str | None = None


@dataclass(frozen=True)
class Effect:
    """A factor on the rate and its 95% interval: 1.02 is 2% more requests per second."""
    factor: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.factor:.3f} [{self.low:.3f}, {self.high:.3f}]"


def order(runs: int, tools: Sequence[str], sides: Sequence[str], seed: int = SEED) -> list[tuple[str, str]]:
    """``runs`` (tool, side), the same ones for the same seed: the sides in blocks of each one twice in a random
    order (so that each side follows each about as often, even in a short sequence), each run's tool drawn."""
    draw = random.Random(seed)
    found: list[str] = []
    while len(found) < runs:
        found += draw.sample([*sides, *sides], 2 * len(sides))
    return [(draw.choice(list(tools)), side) for side in found[:runs]]


def effects(runs: Sequence[Run], harness: str) -> tuple[Effect, Effect] | None:
    """(the harness's effect, the effect of following a harness run) on these runs' RPS: log RPS fitted on both,
    plus a level per block of BLOCK_RUNS (by index). None with too few runs, or one of the four combinations
    (side, side before) never measured."""
    fitted = [r for r in runs if r.rps and r.after is not None]
    through = np.array([r.side == harness for r in fitted], dtype=float)
    after = np.array([r.after == harness for r in fitted], dtype=float)
    if len({(a, b) for a, b in zip(through, after)}) < 4:
        return None
    blocks = np.array([r.index // BLOCK_RUNS for r in fitted])
    levels = (blocks[:, None] == np.unique(blocks)[None, :]).astype(float)
    design = np.column_stack([through, after, levels])
    freedom = len(fitted) - design.shape[1]
    if freedom < 2:
        return None
    log_rps = np.log([r.rps for r in fitted])
    beta, *_ = np.linalg.lstsq(design, log_rps, rcond=None)
    residual = log_rps - design @ beta
    covariance = residual @ residual / freedom * np.linalg.pinv(design.T @ design)
    return tuple(Effect(math.exp(beta[k]), math.exp(beta[k] - Z95 * math.sqrt(covariance[k, k])),
                        math.exp(beta[k] + Z95 * math.sqrt(covariance[k, k]))) for k in (0, 1))


def line(runtime: str, tool: str, runs: Sequence[Run], harness: str) -> str:
    """`host oha: through the harness 1.008 [0.995, 1.023], after a harness run 1.017 [1.003, 1.031] over 360 runs`."""
    mine = [r for r in runs if (r.runtime, r.tool) == (runtime, tool)]
    found = effects(mine, harness)
    measured = sum(1 for r in mine if r.rps)
    if found is None:
        return f"{runtime} {tool}: too few runs of each kind for a fit ({measured} measured)"
    return (f"{runtime} {tool}: through the harness {found[0].text()}, after a harness run {found[1].text()} "
            f"over {measured} runs")


def measure(runtimes: Sequence[str], adapters: Sequence[ToolAdapter], scenario: Scenario, runs: int,
            sides: tuple[str, str], run_side: RunSide, lock: Held, results_root: Path) -> int:
    """``runs`` runs per runtime in ``order`` (``sides``: the harness's first), each by ``run_side``, written after
    each; the effects printed and written at the end. The caller holds ``lock``."""
    by_name = {a.name: a for a in adapters}
    root = results_root.resolve() / f"{utc_stamp()}-carry-over"
    root.mkdir(parents=True)
    measured: list[Run] = []
    for runtime in runtimes:
        split, before = choose_split(), None
        for index, (tool, side) in enumerate(order(runs, list(by_name), sides)):
            rps, error = run_side(side, runtime, by_name[tool], scenario, split, root, lock, f"{runtime}-{tool}-{index}")
            measured.append(Run(index, runtime, tool, side, before, rps, error))
            before = side
            print(f"{runtime} {tool}: run {index + 1}/{runs}, {side} after {measured[-1].after or 'nothing'}: "
                  f"{'failed: ' + str(error) if rps is None else f'{rps:,.0f} rps'}", flush=True)
            _write(root, measured, sides[0], scenario.duration_s)
    print("\n".join(_lines(measured, sides[0])) + f"\nwritten: {root / 'carry-over.json'}")
    return 0 if all(r.rps for r in measured) else 1


def _lines(runs: Sequence[Run], harness: str) -> list[str]:
    kinds = dict.fromkeys((r.runtime, r.tool) for r in runs)
    return [line(runtime, tool, runs, harness) for runtime, tool in kinds]


def _write(root: Path, runs: list[Run], harness: str, duration_s: int) -> None:
    (root / "carry-over.json").write_text(json.dumps(
        {"issue": 53, "duration_s": duration_s, "block_runs": BLOCK_RUNS, "seed": SEED, "command": sys.argv,
         "lines": _lines(runs, harness), "runs": [asdict(r) for r in runs]}, indent=1))
