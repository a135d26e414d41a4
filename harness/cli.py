"""Command line: ``lth run|capacity|host-vs-docker|tools|scenarios|...`` (``python -m harness`` is the same).
Bad input gets one line and exit status 2."""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness import slo
from harness.slo import SLO_FAILED
from harness import REPO_ROOT, scenarios, targets
from harness.cpus import NO_SPLIT, CpuSplit, choose_split
from harness.errors import HarnessError
from harness.network.shaping import SHAPERS
from harness.runtimes import GENERATORS_NEED_A_TARGET_HOST, RUNTIMES
from harness.runtimes import swarm_options
from harness.store.lock import TESTHOST, acquire, wait_s
from harness.store.results import ResultsFolder
from harness.suite.cleanup import clean_state
from harness.suite.runner import Plan, run_suite

if TYPE_CHECKING:
    from harness.suite.interleave import Step
from harness.tools import capabilities, registry


INTERNAL = ("list-tools", "install-folders", "target-packages", "build-images")   # callable, not in `lth --help`
LOCKING_COMMANDS = ("run", "capacity", "host-vs-docker", "clean-state", "build-images")     # the ones that take the machine's lock (harness/store/lock.py)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not a usage dump
        command = " ".join(["lth", *self.prog.split()[1:], "--help"])   # prog: "lth run"
        message = message.replace("argument COMMAND:", "argument command:")
        for name in INTERNAL:       # an unknown command's choices: the ones `lth --help` lists
            message = message.replace(f", '{name}'", "")
        sys.stderr.write(f"error: {message} (see `{command}`)\n")
        sys.exit(2)


MAX_REPEAT = 1000        # --repeat: more would be years of runs (and a list of every run held in memory)


def _positive_int(text: str, at_most: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    if at_most is not None and value > at_most:
        raise argparse.ArgumentTypeError(f"must be at most {at_most:,}, got {value:,}")
    return value


UNITS_S = {"s": 1, "m": 60, "h": 3600}


def _seconds(text: str, at_most: int | None = None) -> int:
    """A duration: `300`, `300s`, `5m`, `1h` (whole seconds)."""
    stripped = text.strip().lower()
    unit = stripped[-1:] if stripped[-1:] in UNITS_S else "s"
    number = stripped[:-1] if stripped[-1:] in UNITS_S else stripped
    try:
        value = float(number) * UNITS_S[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a duration such as 300, 300s, 5m or 1h, got {text!r}") from None
    if value != int(value):
        raise argparse.ArgumentTypeError(f"must be whole seconds, got {text!r} ({value:g} s)")
    return _positive_int(str(int(value)), at_most)


def _duration(text: str) -> int:
    return _seconds(text)       # the scenario's own check says what is too long (duration_s <= 86400)


def _repeat(text: str) -> int:
    return _positive_int(text, MAX_REPEAT)


def _grace(text: str) -> int:
    return _seconds(text, scenarios.MAX_DURATION_S)


def _absolute_path(text: str) -> Path:
    """A folder given on the command line, made absolute here, once: the runtimes hand it to tools in
    containers and on other hosts, whose working directory is not this one."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):   # a newline or escape breaks the tools' configs and logs
        raise argparse.ArgumentTypeError(f"{text!r} holds a control character (a newline, a tab...): "
                                         f"name a folder without one")
    return Path(text).expanduser().resolve()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lth", description="Run HTTP load-testing tools side by side under the same conditions.",
                     epilog="examples:\n  lth run --tools wrk,ab --scenarios scenarios/quick.yaml --duration 5\n"
                            "  lth scenarios scenarios/shootout.yaml\n  lth host-vs-docker --tools wrk,ab --repeat 3\n"
                            "  lth report results/latest\n  lth compare results/A results/B --fail-on slower\n"
                            "  lth slo results/latest --slo p99_ms=25,min_rps=1000 --junit slo.xml\n"
                            "  lth export results/latest\n(`python -m harness` is the same command; `make help`: "
                            "the Make targets)", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"lth {_version()}")
    # metavar: the internal commands (added without help=) stay callable and out of `lth --help`
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for name, module, what in DELEGATED:
        delegated = commands.add_parser(name, help=what, add_help=False)
        delegated.add_argument("rest", nargs=argparse.REMAINDER)

    run = _command(commands, "run", "run scenarios x tools and write a results folder")
    run.add_argument("--tools", default="all", help="comma-separated tool ids, or 'all' (default)")
    run.add_argument("--scenarios", default=str(REPO_ROOT / "scenarios" / "shootout.yaml"),
                     help="FILE or FILE:id1,id2 (default: scenarios/shootout.yaml)")
    run.add_argument("--runtime", default="docker", choices=RUNTIMES, help="where tools run (default: docker)")
    run.add_argument("--shaper", default="auto", choices=SHAPERS,
                     help="how RTTs above the native hop are made: netem, toxiproxy, or auto (netem if the kernel has it)")
    run.add_argument("--duration", type=_duration, help="override every scenario's duration: 300, 300s, 5m or 1h")
    run.add_argument("--results-root", type=_absolute_path, default=REPO_ROOT / "results",
                     help="where results/<timestamp>-<runtime>/ folders go (default: results/)")
    run.add_argument("--repeat", type=_repeat, default=1, metavar="N",
                     help="run every (scenario, tool) N times, interleaved across tools so drift hits all alike")
    run.add_argument("--resume", type=_absolute_path, metavar="FOLDER",
                     help="continue an interrupted results folder: runs it finished ok are skipped")
    run.add_argument("--force", action="store_true", help="with --resume: redo finished runs as well")
    run.add_argument("--capture", action="store_true",
                     help="record the tool's packets with tcpdump: wire latency next to the tool's (wire_* columns)")
    run.add_argument("--keep-pcap", action="store_true",
                     help="with --capture: keep each run's pcap (about 80 bytes per packet) instead of deleting it once parsed")
    run.add_argument("--allow-external-target", action="store_true",
                     help="allow a target outside loopback and the harness's own 198.18.0.0/15 networks")
    run.add_argument("--target-host", metavar="ssh://[USER@]HOST[:PORT]|CONTEXT",
                     help="run Nginx on that machine (an ssh URL or a Docker context over ssh; bound to its address: "
                          "started over ssh, or its container there with --runtime docker) and load it over the real "
                          "network (docs/machines.md)")
    run.add_argument("--generator-host", metavar="ssh://[USER@]HOST[:PORT]|CONTEXT[,...]",
                     help="run the tools on that machine (with --target-host); several, comma-separated: every run is "
                          "split evenly over them and merged into one row (docs/machines.md)")
    run.add_argument("--slo", type=_slo, metavar="p99_ms=25,...",
                     help="objectives every ok row must meet (p50_ms, p99_ms, error_rate, min_rps; overrides the "
                          f"scenarios' slo): a failed one makes the run exit {SLO_FAILED}")
    run.add_argument("--junit", type=_absolute_path, metavar="FILE",
                     help="with objectives (--slo or the scenarios'): JUnit XML, a test case per row and objective")
    _add_cpus_and_grace(run)
    swarm_options.add_options(run)

    _capacity_parser(commands)
    _host_vs_docker_parser(commands)
    tools = _command(commands, "tools", "every tool, its version on this machine, its Docker image and what it can do")
    tools.add_argument("--readme", action="store_true",
                       help="rewrite README.md's tool table from the tools' manifests and adapters instead")
    _scenarios_parser(commands)
    _internal_parsers(commands)
    clean = _command(commands, "clean-state", "remove namespaces, containers, networks and proxies a killed run left")
    clean.add_argument("--target-host", metavar="ssh://[USER@]HOST[:PORT]|CONTEXT",
                       help="also remove the Nginx, its container and /tmp/lth-target-* folders a killed run left on that host")
    clean.add_argument("--generator-host", metavar="ssh://[USER@]HOST[:PORT]|CONTEXT[,...]",
                       help="also stop the tools, remove their containers and the /tmp/lth-generator-* folders a killed "
                            "run left there")
    rederive = _command(commands, "rederive", "derive runs.csv and every meta.json again from a results folder's "
                                              "raw files (after a parser fix), running nothing")
    rederive.add_argument("folder", type=_absolute_path, help="a results folder, e.g. results/latest")
    return parser


# One example per visible command, shown at the end of its --help (tests/test_commands.py: every visible one has one).
EXAMPLES = {
    "run": "lth run --tools wrk,ab --scenarios scenarios/quick.yaml:vu20-rtt0.1 --runtime host --duration 5s",
    "capacity": "lth capacity --tools wrk,oha --step-duration 5 --max-steps 8",
    "host-vs-docker": "lth host-vs-docker --tools wrk,ab --repeat 3   # then: the comparison report's folder",
    "tools": "lth tools",
    "scenarios": "lth scenarios scenarios/shootout.yaml",
    "clean-state": "lth clean-state",
    "rederive": "lth rederive results/latest",
}


def _command(commands: argparse._SubParsersAction, name: str, what: str) -> argparse.ArgumentParser:
    """A visible command: its line in `lth --help`, and its example at the end of its own --help."""
    return commands.add_parser(name, help=what, description=what, epilog=f"example:\n  {EXAMPLES[name]}",
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def _host_vs_docker_parser(commands: argparse._SubParsersAction) -> None:
    pair = _command(commands, "host-vs-docker", "container vs bare metal: the same scenarios on the host and in "
                    "Docker, interleaved scenario by scenario, then `lth compare` of the two folders "
                    "(docs/runtimes.md)")
    pair.add_argument("--tools", default="all", help="comma-separated tool ids, or 'all' (default)")
    pair.add_argument("--scenarios", default=str(REPO_ROOT / "scenarios" / "quick.yaml"),
                      help="FILE or FILE:id1,id2 (default: scenarios/quick.yaml)")
    pair.add_argument("--shaper", default="auto", choices=SHAPERS, help="as for run")
    pair.add_argument("--duration", type=_duration, help="override every scenario's duration: 300, 300s, 5m or 1h")
    pair.add_argument("--results-root", type=_absolute_path, default=REPO_ROOT / "results",
                      help="where the two results folders and compare-<timestamp>/ go (default: results/)")
    pair.add_argument("--repeat", type=_repeat, default=1, metavar="N",
                      help="every (scenario, tool) N times in each runtime: the comparison's intervals need 3 or more")
    pair.add_argument("--resume-host", type=_absolute_path, metavar="FOLDER",
                      help="continue an interrupted comparison: its host folder (runs it finished ok are skipped)")
    pair.add_argument("--resume-docker", type=_absolute_path, metavar="FOLDER",
                      help="continue an interrupted comparison: its Docker folder")
    pair.add_argument("--capture", action="store_true", help="as for run: wire latency next to the tool's")
    _add_cpus_and_grace(pair)


def _scenarios_parser(commands: argparse._SubParsersAction) -> None:
    listing = _command(commands, "scenarios", "the scenarios of a file: id, VUs, RTT, duration, rate, target, "
                                              "protocol, flow and objectives")
    listing.add_argument("file", nargs="?", default=str(REPO_ROOT / "scenarios" / "shootout.yaml"),
                         metavar="FILE[:id,...]", help="a scenarios file (default: scenarios/shootout.yaml)")


def _internal_parsers(commands: argparse._SubParsersAction) -> None:
    """Commands scripts/deps.sh and make test call, and list-tools (the old name of `tools`): no help line, so
    `lth --help` does not list them; `lth NAME --help` still describes them."""
    commands.add_parser("list-tools", description="the old name of `lth tools`")
    folders = commands.add_parser("install-folders", description="the tools/<folder>/ whose install.sh the ids "
                                                                 "need (scripts/deps.sh)")
    folders.add_argument("tools", help="comma-separated tool ids, or 'all'")
    commands.add_parser("target-packages", description="the Debian packages the targets in targets/ need "
                                                       "(scripts/deps.sh)")
    images = commands.add_parser("build-images", description="build the Docker images of the tools and of the file "
                                 "server whose files changed (what `run --runtime docker` does first)")
    images.add_argument("tools", help="comma-separated tool ids, or 'all'")


def _add_cpus_and_grace(parser: argparse.ArgumentParser) -> None:
    """The options `run` and `capacity` share: where Nginx and the tool run, and when a hung tool is killed."""
    parser.add_argument("--grace", type=_grace, metavar="SECONDS",
                        help="kill a tool still running this long after its duration, unless it is still working: "
                             "then up to 4 times as long again (default: max(30, 50%% of it))")
    parser.add_argument("--cpus-target", metavar="LIST", help="CPUs for Nginx (e.g. 0 or 0-1; default: the first half)")
    parser.add_argument("--cpus-tool", metavar="LIST",
                        help="CPUs for the load generator (default: the CPUs the target has not)")
    parser.add_argument("--isolation", action=argparse.BooleanOptionalAction, default=True,
                        help="the target and the tool on CPUs of their own (on >= 2 CPUs); --no-isolation: they share "
                             "every CPU (Make: ISOLATION=0)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _capacity_parser(commands: argparse._SubParsersAction) -> None:
    capacity = _command(commands, "capacity", "each tool's highest sustained arrival rate against the target, "
                                              "by search (docs/capacity.md)")
    capacity.add_argument("--tools", default="all", help="comma-separated tool ids, or 'all' (default): tools that "
                                                         "pace a rate are searched, wrk (any closed-model tool) runs "
                                                         "once closed-loop as the reference")
    capacity.add_argument("--runtime", default="host", choices=RUNTIMES,
                          help="where tools run (default: host: the tools' own ceiling, no container in the way)")
    capacity.add_argument("--target", default="nginx", choices=["nginx"], help="the server under load (default: nginx)")
    capacity.add_argument("--step-duration", type=_duration, default=5, metavar="SECONDS",
                          help="each step's run (default: 5)")
    capacity.add_argument("--slo-p99-ms", type=_positive_float, metavar="MS",
                          help="a step passes with p99 at or below this (default: 10 x the p99 of an unloaded step "
                               "at 100 rps, at least 1 ms)")
    capacity.add_argument("--resolution", type=_positive_float, default=0.02,
                          help="stop when the gap between the highest passing and lowest failing rate is within this "
                               "fraction of the passing one (default: 0.02)")
    capacity.add_argument("--max-steps", type=_positive_int, default=12, help="steps per tool at most (default: 12)")
    capacity.add_argument("--start-rps", type=_positive_int, default=1000, help="the first step's rate (default: 1000)")
    capacity.add_argument("--vus", type=_positive_int, default=1000,
                          help="connections/users the tool may use (default: 1000); wrk's closed loop holds this many")
    capacity.add_argument("--capture", action="store_true",
                          help="record each step's packets with tcpdump: wire latency and schedule fidelity columns")
    capacity.add_argument("--keep-pcap", action="store_true", help="with --capture: keep each step's pcap")
    capacity.add_argument("--resume", type=_absolute_path, metavar="FOLDER",
                          help="continue a capacity folder: steps it finished ok are not run again")
    capacity.add_argument("--results-root", type=_absolute_path, default=REPO_ROOT / "results",
                          help="where results/<timestamp>-<runtime>/ folders go (default: results/)")
    _add_cpus_and_grace(capacity)


def _capacity(args: argparse.Namespace) -> int:
    from harness.capacity.run import Settings, check_tools, run_capacity, summary_line
    tools = registry.select(args.tools)
    check_tools(tools)
    settings = Settings(step_s=args.step_duration, vus=args.vus, slo_p99_ms=args.slo_p99_ms,
                        resolution=args.resolution, max_steps=args.max_steps, start_rps=args.start_rps,
                        target=args.target)
    plan = Plan(runtime=args.runtime, tools=tools, scenarios=[settings.rate_scenario(settings.start_rps)],
                results_root=args.results_root, resume=args.resume, capture=args.capture or args.keep_pcap,
                keep_pcap=args.keep_pcap, grace_s=args.grace, split=_split(args))
    folder, entries = run_capacity(plan, settings)
    print("\n" + "\n".join(summary_line(e) for e in entries) + f"\nresults in {folder.path} (capacity.json)")
    found = [e for e in entries if e.get("max_sustained_rps") is not None or e.get("closed_loop_rps") is not None]
    return 0 if len(found) == len(entries) else 1


def _rederive(args: argparse.Namespace) -> int:
    from harness.capacity.run import CAPACITY_JSON
    from harness.suite.rederive import rederive
    adapters = registry.discover()
    rows, searched = rederive(args.folder, adapters)
    ok = sum(r.status == "ok" for r in rows)
    print(f"re-derived {len(rows)} runs ({ok} ok) in {args.folder}: runs.csv rewritten "
          f"(the previous one kept as runs.csv.before-rederive)"
          + (f", and {CAPACITY_JSON} from them ({len(searched)} tools)" if searched is not None else ""))
    return 0


def _generator_hosts(text: str | None) -> tuple[str, ...]:
    hosts = tuple(filter(None, (h.strip() for h in (text or "").split(","))))
    if len(set(hosts)) != len(hosts):
        raise HarnessError(f"--generator-host {text}: a host is named twice; name each generator host once")
    return hosts


def _plan(args: argparse.Namespace, split: CpuSplit | None = None) -> Plan:
    """`run`'s plan, every input checked (one-line HarnessError) before anything starts; ``split``: the CPU
    split, chosen last by default (with --generator-host it asks the hosts)."""
    generators = _generator_hosts(args.generator_host)
    if generators and not args.target_host:
        raise HarnessError(GENERATORS_NEED_A_TARGET_HOST)
    if generators and (args.capture or args.keep_pcap):
        raise HarnessError("--capture records packets on this machine's side of the link; with --generator-host the "
                           "tools run elsewhere: leave out --capture (or run the harness on the generator host)")
    tools, chosen = registry.select(args.tools), scenarios.select(args.scenarios, args.duration)
    return Plan(runtime=args.runtime, tools=tools, scenarios=chosen, results_root=args.results_root,
                shaper=args.shaper, resume=args.resume, force=args.force, grace_s=args.grace,
                allow_external_target=args.allow_external_target, repeat=args.repeat,
                capture=args.capture or args.keep_pcap, keep_pcap=args.keep_pcap,
                target_host=args.target_host, generator_hosts=generators, split=split or _split(args),
                **swarm_options.plan_options(args, chosen))


def check_run_arguments(run_args: list[str]) -> None:
    """`run`'s arguments checked as `run` checks them, running nothing: harness.lab calls it before it makes
    its hosts, and adds --target-host and --generator-host (theirs) itself."""
    args = build_parser().parse_args(["run", *run_args, "--target-host", "ssh://lab-target",
                                      "--generator-host", "ssh://lab-generator"])
    plan = _plan(args, NO_SPLIT)
    if plan.resume is not None:
        ResultsFolder.open(plan.resume, plan.runtime)


def _run(args: argparse.Namespace) -> int:
    plan = _plan(args)
    folder, rows = run_suite(plan)
    # An unsupported run is a declared answer (the tool cannot do what the scenario asks), not a failure.
    unsupported = [r for r in rows if r.status == "unsupported"]
    failed = [r for r in rows if r.status not in ("ok", "unsupported")]
    ok = len(rows) - len(failed) - len(unsupported)
    print(f"\n{ok} of {len(rows)} runs ok" + (f", {len(unsupported)} unsupported" if unsupported else "")
          + f"; results in {folder.path}")
    for row in unsupported + failed:
        print(f"  {row.status}: {row.scenario} {row.tool}: {row.error}")
    print(bottleneck_summary(rows))
    judged = slo.judge_folder(folder.path, args.slo)
    if judged:
        print("\n".join(slo.summary(judged)))
        if args.junit:
            args.junit.write_text(slo.junit(judged, folder.path.name))
    if failed:
        return 1
    return SLO_FAILED if any(not v.passed for _, verdicts in judged for v in verdicts) else 0


def _slo(text: str) -> "slo.Slo":
    try:
        return slo.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# Commands of their own modules, reachable as `lth NAME ...`: (name, module, what it does).
DELEGATED = [("report", "analysis.report", "write the HTML report of one or more results folders"),
             ("compare", "analysis.compare", "B against A per tool and scenario, with intervals; --fail-on slower gates"),
             ("slo", "harness.slo", "judge a results folder against SLOs; exit 3 when one fails"),
             ("export", "analysis.export", "a results folder as JSON Lines (with its schema) and OpenMetrics"),
             ("lab", "harness.lab", "`run` with the tools and Nginx on test hosts made on this machine for the run"),
             ("overhead", "harness.suite.overhead_check",
              "the harness against the same tool run by hand: RPS ratio with its interval (docs/overhead.md)")]


def _delegate(args: argparse.Namespace) -> int:
    import importlib
    module = next(m for name, m, _ in DELEGATED if name == args.command)
    return importlib.import_module(module).main(args.rest)


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("lth-harness")
    except Exception:        # not installed (a checkout run with python -m harness)
        return "unknown"


def _split(args: argparse.Namespace) -> CpuSplit:
    if getattr(args, "target_host", None):     # `capacity` has no --target-host
        from harness.runtimes.remote import remote_split
        return remote_split(args.cpus_target, args.cpus_tool, _generator_hosts(args.generator_host))
    return choose_split(args.isolation, args.cpus_target, args.cpus_tool)


def bottleneck_summary(rows: list) -> str:
    """Which side limited each run, grouped per scenario: `vu20-rtt0.1: tool: ab, wrk; target: k6`."""
    lines = ["limited by (tool/target CPU >= 90% of its CPUs over the load window; shaper: the RTT through "
             "Toxiproxy under the load, harness/row/bottleneck.py):"]
    for scenario in dict.fromkeys(r.scenario for r in rows):
        sides: dict[str, list[str]] = {}
        for row in (r for r in rows if r.scenario == scenario and r.status == "ok"):
            sides.setdefault(row.limited_by or "not measured", []).append(row.tool)
        lines.append(f"  {scenario}: " + "; ".join(f"{side}: {', '.join(tools)}" for side, tools in sides.items()))
    return "\n".join(lines)


def _clean_state(args: argparse.Namespace) -> int:
    """Refused while a benchmark or test hosts hold their lock: what it would remove is theirs."""
    with acquire(what="a benchmark is running on this machine and clean-state would remove what it uses"), \
            acquire(TESTHOST, "test hosts are up on this machine and clean-state would remove them", wait=False):
        removed = _clean_everywhere(args)
    print("\n".join(f"removed {item}" for item in removed) or "nothing to clean")
    return 0


def _clean_everywhere(args: argparse.Namespace) -> list[str]:
    removed = []
    if args.target_host:    # first: ssh may need what the local sweep removes
        from harness.runtimes.remote import clean_remote
        removed += clean_remote(args.target_host)
    if args.generator_host:
        from harness.runtimes.generator import clean_generator
        from harness.runtimes.ssh import parse_ssh_url
        for url in _generator_hosts(args.generator_host):
            removed += clean_generator(parse_ssh_url(url, "--generator-host"))
    removed += clean_state()
    return removed


def _list_tools(args: argparse.Namespace) -> int:
    if getattr(args, "readme", False):
        from harness.tools import readme_tools
        return readme_tools.main()
    from harness.runtimes.docker import docker_available, image_exists, tool_image
    from concurrent.futures import ThreadPoolExecutor
    from harness.runtimes.host import host_version
    docker_up = docker_available() is not None
    adapters = list(registry.discover().values())
    # each installed tool's version command at once: one after the other they took ~25 s (the JVM tools' start-ups)
    with ThreadPoolExecutor() as pool:
        hosts = list(pool.map(lambda a: host_version(a) if not a.unavailable and a.installed_here() else "not installed",
                              adapters))
    print(f"{'tool':13} {'folder':10} {'host':18} {'docker image':14} {'rate':6} concurrency model | arrival-rate model")
    for adapter, host in zip(adapters, hosts):
        if adapter.unavailable:
            print(f"{adapter.name:13} {adapter.folder.name:10} NOT WORKING: {adapter.unavailable}")
            continue
        image = ("built" if image_exists(tool_image(adapter)) else "not built") if docker_up else "no daemon"
        rate = "open" if adapter.open_model else "closed"    # can it pace a rate scenario (openmodel.py)
        print(f"{adapter.name:13} {adapter.folder.name:10} {host:18} {image:14} {rate:6} {adapter.concurrency_model}"
              f" | {adapter.rate_model}")
    _print_capabilities(list(registry.discover().values()))
    print("\ntargets (targets/<id>/, a scenario's `target:`):")
    for target in targets.discover().values():
        print(f"  {target.id:12} {target.role:7} {target.description}")
    return 0


def _print_capabilities(adapters: list) -> None:
    """The capability matrix: yes, or no with the tool's reason (a scenario needing it gets an unsupported row)."""
    labels = list(capabilities.FEATURES.values())
    print(f"\n{'capabilities':13} " + " ".join(f"{label:15}" for label in labels))
    reasons = []
    for adapter in adapters:
        cells = capabilities.matrix(adapter)
        print(f"{adapter.name:13} " + " ".join(f"{cells[label][:3].rstrip(':'):15}" for label in labels))
        reasons += [f"  {adapter.name}, {label}: {cells[label][4:]}" for label in labels if cells[label] != "yes"]
    if reasons:
        print("why not:\n" + "\n".join(reasons))


def _host_vs_docker(args: argparse.Namespace) -> int:
    """Each step a resumed suite of one scenario in one runtime (harness/suite/interleave.py), then the comparison."""
    from harness.suite.interleave import interleaved
    chosen = scenarios.select(args.scenarios, args.duration)       # bad input: said before the first step
    tool_ids = [adapter.name for adapter in registry.select(args.tools)]
    folders = {"host": args.resume_host, "docker": args.resume_docker}
    failed, steps = False, interleaved([s.id for s in chosen], tool_ids, args.repeat)
    _plan(_step_arguments(args, steps[0], folders[steps[0].runtime]))    # bad input (tools, folders): before the lock
    lock = acquire(what="a benchmark is running on this machine")    # held from the first step to the last
    try:
        for step in steps:
            print(f"\n== {step.runtime}: {step.scenario}, {step.tool}, repeat {step.repeat} of {args.repeat}",
                  flush=True)
            plan = replace(_plan(_step_arguments(args, step, folders[step.runtime])), keep_unselected=True)
            folder, rows = run_suite(plan, lock=lock)
            folders[step.runtime] = folder.path
            failed |= any(r.status not in ("ok", "unsupported") for r in rows)
    finally:      # stopped half way: how to go on (finished runs are kept in both folders)
        lock.close()
        if None not in folders.values() or sys.exc_info()[0] is not None:
            print("\n" + "\n".join(f"{runtime}: {folder}" for runtime, folder in folders.items() if folder)
                  + ("" if sys.exc_info()[0] is None else "\nto go on: the same command with "
                     + " ".join(f"--resume-{r} {f}" for r, f in folders.items() if f)), flush=True)
    from analysis import compare
    compared = compare.main([str(folders["host"]), str(folders["docker"])])
    return compared or int(failed)


def _step_arguments(args: argparse.Namespace, step: "Step", resume: Path | None) -> argparse.Namespace:
    """`run`'s arguments for one step: its runtime, scenario and tool, the repeats up to its own, the folder to
    resume."""
    file = args.scenarios.partition(":")[0]
    return argparse.Namespace(**{**vars(args), "runtime": step.runtime, "scenarios": f"{file}:{step.scenario}",
                                 "tools": step.tool,
                                 "repeat": step.repeat, "resume": resume, "force": False, "keep_pcap": False,
                                 "allow_external_target": False, "target_host": None, "generator_host": None})


def _scenarios(args: argparse.Namespace) -> int:
    """`lth scenarios FILE`: one line per scenario, what it asks of the tools."""
    chosen = scenarios.select(args.file)
    print(f"{'id':24} {'VUs':>6} {'RTT ms':>7} {'duration':>8} {'rate rps':>9} {'target':10} {'protocol':9} other")
    for s in chosen:
        print(f"{s.id:24} {s.vus:>6} {s.rtt_ms:>7g} {s.duration_s:>7}s {s.rate_rps or '-':>9} {s.target:10} "
              f"{s.protocol:9} {_scenario_extras(s)}".rstrip())
    total = sum(s.duration_s for s in chosen)
    print(f"{len(chosen)} scenarios, {total} s of load per tool and repeat; to run some: "
          f"lth run --scenarios FILE:id1,id2")
    return 0


def _scenario_extras(s: "scenarios.Scenario") -> str:
    """What a scenario sets beyond the columns: keep-alive off, TLS, a slow backend, a flow, a stall, objectives."""
    extras = [("keep-alive off", not s.keepalive), ("tls", s.tls),
              (f"backend delay {s.backend_delay_ms} ms", s.backend_delay_ms), (f"streams {s.streams}", s.streams > 1),
              (f"flow {s.flow}", s.flow), (f"stall {s.stall_ms} ms at {s.stall_at_s} s", s.stall_ms),
              ("closed-model tools run", s.rate_rps and s.closed_model_tools == "run"), (f"slo {s.slo}", s.slo)]
    return ", ".join(text for text, on in extras if on)


def _target_packages(_: argparse.Namespace) -> int:
    """The Debian packages every target needs (scripts/deps.sh installs them)."""
    print(" ".join(dict.fromkeys(p for target in targets.discover().values() for p in target.packages)))
    return 0


def _build_images(args: argparse.Namespace) -> int:
    """The Docker runtime's preparation alone, under the machine's lock (a run's own preparation would race
    it): `make test` has it overlap deps.sh's compiles, so that the suite finds its images built."""
    from harness.runtimes.docker import DockerRuntime
    runtime, adapters = DockerRuntime(), registry.select(args.tools)
    if problems := runtime.problems(adapters):
        raise HarnessError(problems[0])
    with acquire(what="a benchmark is running on this machine and builds the images it needs itself"):
        broken = runtime.prepare(adapters)
    for tool, problem in broken.items():
        print(f"not built: {tool}: {problem}")
    return 1 if broken else 0


def _install_folders(args: argparse.Namespace) -> int:
    print("\n".join(str(folder) for folder in registry.install_folders(args.tools)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command in {name for name, _, _ in DELEGATED}:
        args.rest = [*extra, *args.rest]       # `lth report --help`: the module's own options, whatever they are
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command in LOCKING_COMMANDS:
            wait_s()       # a bad LTH_LOCK_WAIT_S is said before any work, not after the images are built
        return {"run": _run, "capacity": _capacity, "tools": _list_tools, "list-tools": _list_tools,
                "scenarios": _scenarios, "host-vs-docker": _host_vs_docker, "clean-state": _clean_state,
                "install-folders": _install_folders, "target-packages": _target_packages,
                "build-images": _build_images, "rederive": _rederive,
                **{name: _delegate for name, _, _ in DELEGATED}}[args.command](args)
    except HarnessError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.exit_status
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: finished rows are kept in runs.csv; everything started was removed\n")
        return 130


def entry() -> None:
    """The `lth` console script ([project.scripts])."""
    sys.exit(main())
