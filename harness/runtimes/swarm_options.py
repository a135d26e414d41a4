"""`run --runtime swarm`'s options, checked before anything starts (bad input: one line, exit 2).
Kept apart from swarm.py so that the command line does not import the runtime."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.scenarios import Scenario

SWARM = "swarm"


@dataclass(frozen=True)
class SwarmOptions:
    generators: int = 1     # tasks of the run's replicated job, each with its share of the VUs (or rate)
    init: bool = False      # make a single-node swarm for the suite when this engine is in none (left after)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--generators", type=_count, metavar="N",
                        help="with --runtime swarm: N generator tasks per run (a replicated job), each with its "
                             "share of the VUs or rate, started together; one merged row (default 1)")
    parser.add_argument("--swarm-init", action="store_true",
                        help="with --runtime swarm: if this Docker engine is in no swarm, make a single-node one "
                             "for the suite (addresses in 198.18.0.0/15) and leave it afterwards")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1 generator task")
    return value


def plan_options(args: argparse.Namespace, scenarios: list[Scenario]) -> dict:
    """The Plan's ``swarm`` field from the parsed arguments; one HarnessError line for what cannot run."""
    generators, init = getattr(args, "generators", None), getattr(args, "swarm_init", False)
    if args.runtime != SWARM:
        if generators is not None or init:
            raise HarnessError("--generators and --swarm-init belong to --runtime swarm (with ssh machines: "
                               "--generator-host)")
        return {}
    if args.target_host or args.generator_host:
        raise HarnessError("--runtime swarm places the target and the generators on the swarm's nodes (node labels "
                           "lth.target and lth.generator): leave out --target-host and --generator-host")
    if args.capture or args.keep_pcap:
        raise HarnessError("--capture records packets on this machine; with --runtime swarm the tools run in tasks: "
                           "leave out --capture")
    options = SwarmOptions(generators or 1, init)
    check_shares(options.generators, scenarios)
    return {"swarm": options}


def check_shares(parts: int, scenarios: list[Scenario]) -> None:
    """Every task gets at least one VU (and one request/s of a rate): N may not exceed them."""
    for scenario in scenarios:
        if scenario.vus < parts:
            raise HarnessError(f"--generators {parts}: scenario {scenario.id} has {scenario.vus} VUs, fewer than the "
                               f"tasks; every task needs at least one (use --generators {scenario.vus} or fewer)")
        if scenario.rate_rps is not None and scenario.rate_rps < parts:
            raise HarnessError(f"--generators {parts}: scenario {scenario.id} asks {scenario.rate_rps} requests/s, "
                               f"less than one per task")
