"""What the harness costs the figure it measures (issue 53): a normal harness run of a tool against the same tool
run by hand against an Nginx started by hand, in the same network setup and on the same CPUs, in interleaved pairs.

Each pair is
- through the harness: one `harness run` of the scenario (``run_suite``: the runtime entered, its own Nginx
  started, the run with its sampling, stub_status counters, RTT probe and parsing, everything torn down);
- by hand: what a user does to reproduce it. On the host: a network namespace of its own behind a veth pair
  (198.18.0.4/30, beside the harness's 198.18.0.0/30), the project's targets/nginx/nginx.conf and its ~100-byte
  file copied into a folder, ``taskset -c <target CPUs> ip netns exec ... nginx -p <folder>``, and the tool's
  command under ``taskset -c <tool CPUs>``. In Docker: a network of its own (198.18.4.0/24), ``docker run`` of
  the project's lth-target image (its own copy of nginx.conf) with ``--cpuset-cpus <target CPUs>``, and
  ``docker run`` of the harness's tool image with ``--cpuset-cpus <tool CPUs>``. Everything is removed after.
The tool's command is the adapter's for the same RunSpec (the URL aside); both sides' RPS come from the same
adapter's parser. Each pair starts on the side the run before it ran (pair_order). Per runtime and tool:
harness/by-hand per pair, their geometric mean and its 95% bootstrap interval (3 pairs or more). Without --pairs,
pairs are added until that interval lies within +-2% of the estimate (--precision): on this kind of machine one
pair's ratio spreads by ~+-4-15%, whatever the runs' length, so it takes 20-200 pairs of 3 s (docs/overhead.md).
--carry-over RUNS measures, in place of pairs, how much a run depends on the run before it (carry_over.py).

Usage (root; `make bench-overhead`; ``python -m harness.suite.overhead_check`` is the same):
    lth overhead [--runtime both|host|docker] [--tools wrk,oha] [--precision 0.02 | --pairs N] [--duration 3]
    lth overhead --pool results/<UTC>-overhead ...   # pairs of several checks
    lth overhead --by-hand-top ...                   # top beside the tool by hand too: the cost beyond top
Writes results/<UTC>-overhead/: overhead.json, harness/ (each harness run's results folder: runs.csv and every
run's raw files) and by-hand/ (each hand run's commands.sh, the tool's output and Nginx's log).
"""
from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar

import numpy as np
import psutil

from analysis.uncertainty import CONFIDENCE, RESAMPLES, SEED, bootstrap
from harness import PREFIX, REPO_ROOT, TARGET_DIR, TOOLS_DIR
from harness.cpus import CpuSplit, choose_split, format_cpus
from harness.errors import HarnessError
from harness.processes import end_process, interrupts_raised, signals_deferred
from harness.sampling import SAMPLER_NICE, TOP_ENV, top_command
from harness.scenarios import Scenario, select
from harness.store.lock import Held, acquire
from harness.store.record import Observer
from harness.store.results import utc_stamp
from harness.suite import carry_over
from harness.suite.plan import Plan
from harness.suite.runner import run_suite
from harness.targets import FILE_SERVER
from harness.targets import get as get_target
from harness.targets.file_server import TARGET_FILE, Target, nginx_conf
from harness.tools import registry
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec, ToolOutput

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"
RUNTIMES = ("host", "docker")
HARNESS, BY_HAND = "harness", "by hand"
MIN_PAIRS = 3        # as analysis/uncertainty.py: fewer give no interval (a bootstrap of 2 is 1 in 3)
# Without --pairs, pairs are added until the interval lies within +-PRECISION of the estimate, after at least
# MIN_PAIRS_TO_STOP (a bootstrap of a few pairs can be narrow by chance) and at most MAX_PAIRS (at PRECISION;
# max_pairs_for() scales it to the precision asked).
PRECISION, MIN_PAIRS_TO_STOP, MAX_PAIRS = 0.02, 20, 400
DURATION_S = 3       # the spread between runs does not shrink with their length here (docs/overhead.md)

# The by-hand side's own names and addresses (lth-*, label lth: `make clean-state` removes what a killed check
# leaves), in 198.18.0.0/15 beside the harness's own (host 198.18.0.0/30, Docker 198.18.1.0/24).
HAND_NETNS, HAND_VETH_HOST, HAND_VETH_TARGET = f"{PREFIX}-hand", f"{PREFIX}-hand0", f"{PREFIX}-hand1"
HAND_HOST_IP, HAND_TARGET_IP, HAND_PREFIX_LEN = "198.18.0.5", "198.18.0.6", 30
HAND_NETWORK, HAND_SUBNET, HAND_CONTAINER_IP = f"{PREFIX}-overhead-hand", "198.18.4.0/24", "198.18.4.10"
HAND_TARGET, HAND_TOOL = f"{PREFIX}-overhead-hand-target", f"{PREFIX}-overhead-hand-tool"
HAND_LABEL = f"{PREFIX}=overhead-hand"
HAND_FOLDER = f"{PREFIX}-target-hand-"     # /tmp/lth-target-*: clean-state's rule for a host Nginx's folder
BENCHMARKING = ipaddress.ip_network("198.18.0.0/15")
READY_S = 30.0
# Issue 53.2: a comma list of what the harness does to turn off on the by-hand side for one check, to measure
# each one's cost (see docs/overhead.md): "wrk-script" runs wrk by hand without the harness's report.lua (its rate
# read from wrk's own Requests/sec line); "mount" serves the by-hand Docker target's files from the image's own
# layer, where by default a copy of targets/nginx/ is mounted at /srv/target as the harness mounts its staged one.
CANDIDATES_ENV = "LTH_OVERHEAD_OFF"
CANDIDATES = ("wrk-script", "mount")
# overhead.json's format (settings() reads the older ones): 2 since the by-hand Docker target serves a mounted
# copy by default, 3 since each pair starts on the side the run before it ran (pair_order; before: by its index)
FORMAT = 3
ORDERS = {2: "by index", 3: "after its own first side"}
T = TypeVar("T")

# --- the arithmetic -------------------------------------------------------------------------------------------
def pair_order(previous: str | None) -> tuple[str, str]:
    """The two sides of the next pair: first the side of the run just before it (the harness at the start), then
    the other. A run is affected by the one before it (a run after a harness run was 1.7% faster here, CHANGELOG
    2026-11-29), so each pair's two runs must follow the same side: the first follows ``previous``, the second the
    first. Then that effect cancels inside every pair, and the pairs start on either side in turn."""
    first = previous or HARNESS
    return (first, BY_HAND if first == HARNESS else HARNESS)


def turns(due: Sequence[T], round_no: int) -> list[T]:
    """The order the tools take their pairs in, round ``round_no``: turned by one each round when they are an even
    number. The pairs of all tools alternate their first side (pair_order), so without the turn each of two tools
    would always start on the same side."""
    if len(due) % 2:
        return list(due)
    shift = round_no % len(due)
    return [*due[shift:], *due[:shift]]


def geometric_mean(ratios: Sequence[float]) -> float:
    """The ratios' geometric mean: the mean of their logarithms, back as a ratio (0.9 and 1/0.9 average to 1)."""
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def ratio_interval(ratios: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the ratios' geometric mean, seeded as every interval of the report's
    (analysis/uncertainty.py): the same ratios always give the same interval. None below MIN_PAIRS ratios."""
    if len(ratios) < MIN_PAIRS:
        return None
    low, high = bootstrap(np.log(np.asarray(ratios, dtype=float)), np.mean, confidence)
    return math.exp(low), math.exp(high)


def half_width(estimate: float, interval: tuple[float, float]) -> float:
    """How far the interval reaches from the estimate, as a share of it (the wider side): 0.02 is +-2%."""
    low, high = interval
    return max(high / estimate - 1, 1 - low / estimate)


MIN_PAIRS_TO_PROJECT = 10   # a spread read from fewer pairs is too rough to say how many the precision takes


def pairs_needed(ratios: Sequence[float], precision: float, confidence: float = CONFIDENCE) -> int | None:
    """How many pairs an interval within +-``precision`` takes at the spread of these ratios: the mean of n
    log ratios has a standard error of sd/sqrt(n), so n = (z * sd / log(1 + precision))^2, z the normal quantile
    of ``confidence`` (the bootstrap's interval is that wide to within a few %). None below MIN_PAIRS_TO_PROJECT."""
    if len(ratios) < MIN_PAIRS_TO_PROJECT:
        return None
    z = statistics.NormalDist().inv_cdf((1 + confidence) / 2)
    return max(MIN_PAIRS_TO_STOP, math.ceil((z * _log_spread(ratios) / math.log1p(precision)) ** 2))


def _log_spread(ratios: Sequence[float]) -> float:
    """The standard deviation of a pair's log ratio."""
    return statistics.stdev(math.log(r) for r in ratios)


def projection(ratios: Sequence[float], precision: float, seconds_per_pair: float | None) -> str:
    """``+-0.5% takes ~3,900 pairs at this spread (a pair's log ratio: sd 0.160), ~18 h more at 17 s a pair``:
    whether a check can reach its precision on this machine, said while it runs (empty: too few pairs yet)."""
    needed = pairs_needed(ratios, precision)
    if needed is None:
        return ""
    text = (f"+-{100 * precision:g}% takes ~{needed:,} pairs at this spread (a pair's log ratio: "
            f"sd {_log_spread(ratios):.3f})")
    if seconds_per_pair and needed > len(ratios):
        more_s = (needed - len(ratios)) * seconds_per_pair
        text += (f", ~{more_s / 3600:.1f} h more" if more_s >= 3600 else f", ~{more_s / 60:.0f} min more") + \
            f" at {seconds_per_pair:.0f} s a pair"
    return text


@dataclass(frozen=True)
class Pair:
    index: int
    first: str                    # HARNESS or BY_HAND
    harness_rps: float | None     # None: that side failed (its error beside it)
    by_hand_rps: float | None
    harness_run: str = ""         # the harness's run folder, relative to the overhead folder
    by_hand_run: str = ""
    errors: list[str] = field(default_factory=list)
    harness_nginx: int | None = None   # Nginx's processes, master and workers (None: not seen)
    by_hand_nginx: int | None = None
    observer_share: float | None = None   # the harness's top and process during its load, share of one CPU
    observer_cpus: str | None = None      # the CPUs they were held to ("": any)
    after: str | None = None      # the side of the run just before the pair's first (None: none, or not recorded)

    @property
    def ratio(self) -> float | None:
        if not self.harness_rps or not self.by_hand_rps:
            return None
        return self.harness_rps / self.by_hand_rps


@dataclass(frozen=True)
class Half:
    """One half of a check's ratios, in the order measured: its geometric mean and interval."""
    pairs: int
    mean: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"


def halves(ratios: Sequence[float]) -> tuple[Half, Half] | None:
    """The first and the second half of the ratios, each with its own interval; None below MIN_PAIRS_TO_STOP in
    each. The interval assumes one ratio does not depend on when it was measured: halves whose intervals do not
    meet say the ratio moved during the check (host oha's two checks of 2026-11-28/29, pooled: 1.013, then 1.046)."""
    if len(ratios) < 2 * MIN_PAIRS_TO_STOP:
        return None
    middle = len(ratios) // 2
    first, second = ((len(part), geometric_mean(part), *ratio_interval(part))
                     for part in (ratios[:middle], ratios[middle:]))
    return Half(*first), Half(*second)


@dataclass(frozen=True)
class Summary:
    runtime: str
    tool: str
    ratios: list[float]
    failed: int                    # pairs with no ratio
    mean: float | None             # the ratios' geometric mean
    low: float | None
    high: float | None

    @classmethod
    def of(cls, runtime: str, tool: str, pairs: Sequence[Pair]) -> "Summary":
        ratios = [p.ratio for p in pairs if p.ratio is not None]
        interval = ratio_interval(ratios)
        return cls(runtime, tool, ratios, len(pairs) - len(ratios), geometric_mean(ratios) if ratios else None,
                   *(interval or (None, None)))

    @cached_property
    def halves(self) -> tuple[Half, Half] | None:
        """Derived from the ratios when read (the line, overhead.json), not for every stop test."""
        return halves(self.ratios)

    @property
    def drifted(self) -> bool:
        """The two halves' intervals do not meet (with no drift, that happens in well under 1% of checks)."""
        if self.halves is None:
            return False
        first, second = self.halves
        return first.high < second.low or second.high < first.low

    @property
    def precision(self) -> float | None:
        """The interval's half-width as a share of the estimate (None: no interval yet)."""
        return None if self.low is None else half_width(self.mean, (self.low, self.high))

    def precise(self, precision: float) -> bool:
        """Whether enough pairs were measured to stop: at least MIN_PAIRS_TO_STOP, the interval within
        +-``precision`` of the estimate."""
        return len(self.ratios) >= MIN_PAIRS_TO_STOP and self.precision is not None and self.precision <= precision

    def line(self) -> str:
        """`host wrk: harness/by-hand 0.970 [0.951, 0.990] (+-2.0%) over 150 pairs`."""
        head = f"{self.runtime} {self.tool}: harness/by-hand"
        failed = f" ({self.failed} failed)" if self.failed else ""
        n = len(self.ratios)
        if self.mean is None:
            return f"{head} not measured: every pair failed{failed}"
        if self.low is None:
            return f"{head} {self.mean:.3f} over {n} pair{'s' * (n != 1)}{failed} (no interval below {MIN_PAIRS})"
        drift = (f"; drifted: first half {self.halves[0].text()}, second half {self.halves[1].text()}"
                 if self.drifted else "")
        return (f"{head} {self.mean:.3f} [{self.low:.3f}, {self.high:.3f}] (+-{100 * self.precision:.1f}%) "
                f"over {n} pairs{failed}{drift}")


# --- the runs -------------------------------------------------------------------------------------------------
def candidates_off() -> set[str]:
    return {c.strip() for c in os.environ.get(CANDIDATES_ENV, "").split(",") if c.strip()}


@dataclass(frozen=True)
class HandRun:
    """One run of the tool by hand: its command as run, and what the adapter's parser made of it."""
    argv: list[str]
    rps: float | None
    error: str | None


def plain_wrk(argv: list[str]) -> list[str]:
    """wrk's command as a user types it: without the harness's ``-s report.lua``."""
    if "-s" not in argv:
        return argv
    at = argv.index("-s")
    return argv[:at] + argv[at + 2:]


def wrk_requests_per_s(stdout: str) -> float:
    """wrk's own `Requests/sec:` line (requests over its measured duration, as report.lua's figure)."""
    found = re.search(r"^Requests/sec:\s+([\d.]+)", stdout, re.MULTILINE)
    if not found:
        raise ValueError("wrk printed no Requests/sec line")
    return float(found.group(1))


def run_by_hand(prefix: list[str], adapter: ToolAdapter, spec: RunSpec, plain: bool = False) -> HandRun:
    """The adapter's command for ``spec`` after ``prefix``; its output kept in spec.out_dir. ``plain``: wrk
    without report.lua, its rate from its own summary."""
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    command = adapter.command(spec)
    argv = [*prefix, *(plain_wrk(command) if plain else command)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=spec.duration_s + 60,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return HandRun(argv, None, f"by hand: no end {spec.duration_s + 60} s after the start")
    except OSError as exc:   # taskset, docker or the tool not installed
        return HandRun(argv, None, f"by hand: {exc}")
    finally:
        if prefix and prefix[0] == "docker":   # a killed `docker run` client leaves its container running
            subprocess.run(["docker", "rm", "--force", HAND_TOOL], capture_output=True, check=False)
    (spec.out_dir / "stdout.txt").write_text(done.stdout)
    (spec.out_dir / "stderr.txt").write_text(done.stderr)
    try:
        rps = (wrk_requests_per_s(done.stdout) if plain else
               adapter.parse(ToolOutput(spec, done.stdout, done.stderr, done.returncode)).rps)
    except Exception as exc:  # noqa: BLE001 - the pair is failed, the benchmark goes on
        return HandRun(argv, None, f"by hand: exit {done.returncode}, {type(exc).__name__}: {exc}")
    return HandRun(argv, rps, None if rps else f"by hand: exit {done.returncode}, no RPS")


@dataclass
class HandNginx:
    """Nginx started by hand: where it serves, how many Nginx processes it runs (master and workers), and
    what runs the tool against it on the tool's CPUs."""
    host: str
    processes: int
    tool_prefix: list[str]


class Commands:
    """Every command of the by-hand side, run in order and kept as the shell script a user would type."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, argv: list[str], background: str | None = None) -> None:
        """``background``: started in the background, its pid kept in that shell variable."""
        self.lines.append(shlex.join(argv) + (f" & {background}=$!" if background else ""))

    def run(self, argv: list[str], check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        self.note(argv)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            if check:
                raise HarnessError(f"by hand: `{shlex.join(argv)}`: {exc}") from None
            return subprocess.CompletedProcess(argv, 1, "", str(exc))
        if check and done.returncode != 0:
            raise HarnessError(f"by hand: `{shlex.join(argv)}` failed: {done.stderr.strip()[-300:]}")
        return done

    def write(self, path: Path) -> None:
        path.write_text("#!/bin/sh\n# the by-hand side of one pair, as run (harness/suite/overhead_check.py)\n"
                        + "\n".join(self.lines) + "\n")


def wait_serving(host: str, alive: Callable[[], bool], timeout_s: float = READY_S) -> None:
    """Until Nginx at ``host`` serves the file (a user's `curl` until it answers)."""
    deadline, last = time.monotonic() + timeout_s, "no answer"
    while time.monotonic() < deadline:
        if not alive():
            raise HarnessError(f"by hand: Nginx at {host} exited before serving (see nginx.log)")
        conn = http.client.HTTPConnection(host, 80, timeout=2)
        try:
            conn.request("GET", f"/{TARGET_FILE}")
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                return
            last = f"HTTP {response.status}"
        except OSError as exc:
            last = str(exc)
        finally:
            conn.close()
        time.sleep(0.2)
    raise HarnessError(f"by hand: Nginx at {host} did not serve /{TARGET_FILE} within {timeout_s:.0f} s ({last})")


def nginx_processes(root_pid: int) -> int:
    """Nginx's master and workers in the process tree from ``root_pid`` (docker-init, if any, not counted)."""
    try:
        root = psutil.Process(root_pid)
        family = [root, *root.children(recursive=True)]
        return sum(1 for p in family if p.name() == "nginx")
    except psutil.NoSuchProcess:
        return 0


def _stop(proc: subprocess.Popen) -> None:
    """Nginx's master and every worker, gone."""
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    for worker in psutil.wait_procs(family, timeout=5)[1]:
        worker.kill()


@contextmanager
def host_nginx(split: CpuSplit, commands: Commands, folder: Path) -> Iterator[HandNginx]:
    """Nginx by hand on the host: its own namespace and veth pair, the project's config and file, the target's
    CPUs; the tool pinned to the tool's CPUs in the root namespace."""
    prefix = Path(tempfile.mkdtemp(prefix=HAND_FOLDER))
    proc, log = None, (folder / "nginx.log").open("w")
    try:
        for argv in (["ip", "netns", "add", HAND_NETNS],
                     ["ip", "link", "add", HAND_VETH_HOST, "type", "veth", "peer", "name", HAND_VETH_TARGET],
                     ["ip", "link", "set", HAND_VETH_TARGET, "netns", HAND_NETNS],
                     ["ip", "addr", "add", f"{HAND_HOST_IP}/{HAND_PREFIX_LEN}", "dev", HAND_VETH_HOST],
                     ["ip", "link", "set", HAND_VETH_HOST, "up"],
                     ["ip", "-n", HAND_NETNS, "addr", "add", f"{HAND_TARGET_IP}/{HAND_PREFIX_LEN}", "dev",
                      HAND_VETH_TARGET],
                     ["ip", "-n", HAND_NETNS, "link", "set", HAND_VETH_TARGET, "up"],
                     ["ip", "-n", HAND_NETNS, "link", "set", "lo", "up"]):
            commands.run(argv)
        commands.note(["cp", "-r", str(TARGET_DIR / "nginx.conf"), str(TARGET_DIR / "html"), f"{prefix}/"])
        hand_config(prefix, split, commands)
        shutil.copytree(TARGET_DIR / "html", prefix / "html")
        commands.note(["mkdir", f"{prefix}/tmp"])
        (prefix / "tmp").mkdir()
        commands.note(["chmod", "-R", "a+rX", str(prefix)])
        for path in [prefix, *prefix.rglob("*")]:     # the workers run unprivileged
            path.chmod(0o755 if path.is_dir() else 0o644)
        argv = [*split.taskset("target"), "ip", "netns", "exec", HAND_NETNS, "nginx", "-p", f"{prefix}/",
                "-c", str(prefix / "nginx.conf")]
        commands.note(argv, background="nginx")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        wait_serving(HAND_TARGET_IP, lambda: proc.poll() is None)
        yield HandNginx(HAND_TARGET_IP, nginx_processes(proc.pid), split.taskset("tool"))
    finally:
        with signals_deferred():
            if proc is not None:
                commands.lines.append('kill "$nginx"    # Nginx\'s master; its workers end with it')
                _stop(proc)
            log.close()
            commands.run(["ip", "netns", "delete", HAND_NETNS], check=False)
            if HAND_VETH_HOST in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout:
                commands.run(["ip", "link", "delete", HAND_VETH_HOST], check=False)
            commands.note(["rm", "-rf", str(prefix)])
            shutil.rmtree(prefix, ignore_errors=True)


def hand_config(prefix: Path, split: CpuSplit, commands: Commands) -> None:
    """The project's nginx.conf in ``prefix`` (copied there, or not yet: it is written whole) with one worker per
    target CPU, as the harness stages it."""
    workers = len(split.target_cpus)
    commands.note(["sed", "-i", f"s/^worker_processes auto;/worker_processes {workers};/", str(prefix / "nginx.conf")])
    (prefix / "nginx.conf").write_text(nginx_conf(workers=workers))


def check_subnet(commands: Commands, network: str) -> None:
    """The network Docker made is in 198.18.0.0/15 (load goes nowhere else)."""
    found = commands.run(["docker", "network", "inspect", "--format",
                          "{{range .IPAM.Config}}{{.Subnet}} {{end}}", network]).stdout.split()
    if not found or not all(ipaddress.ip_network(s).subnet_of(BENCHMARKING) for s in found):
        raise HarnessError(f"by hand: Docker network {network} has subnet {found}, not in {BENCHMARKING}")


@contextmanager
def docker_nginx(split: CpuSplit, commands: Commands, folder: Path, mounts: list[Path],
                 tool_image: str) -> Iterator[HandNginx]:
    """Nginx by hand in Docker: the project's target image serving a mounted copy of targets/nginx/ (hand_config)
    on a network of its own, on the target's CPUs; the tool's image run on the tool's CPUs."""
    network_made = False
    try:
        commands.run(["docker", "network", "create", "--subnet", HAND_SUBNET, "--label", HAND_LABEL, HAND_NETWORK])
        network_made = True
        check_subnet(commands, HAND_NETWORK)
        # Nginx's files from a folder mounted as the harness mounts its staged one: served from the image's own
        # layer (overlayfs, "mount" off, where only nginx.conf is mounted, for the worker count) Nginx served
        # 13-29% less here (CHANGELOG.md, 2026-11-28)
        mounted = folder / "target"
        if "mount" in candidates_off():
            commands.note(["mkdir", str(mounted)])
            commands.note(["cp", str(TARGET_DIR / "nginx.conf"), str(mounted)])    # hand_config writes it whole
            mounted.mkdir()
            mount = ["-v", f"{mounted / 'nginx.conf'}:/srv/target/nginx.conf:ro"]
        else:
            commands.note(["cp", "-r", str(TARGET_DIR), str(mounted)])
            shutil.copytree(TARGET_DIR, mounted, ignore=shutil.ignore_patterns("Dockerfile", "target.toml"))
            commands.note(["mkdir", str(mounted / "tmp")])    # Nginx's temp paths: without it, [emerg] at start
            (mounted / "tmp").mkdir()
            mount = ["-v", f"{mounted}:/srv/target"]
        hand_config(mounted, split, commands)
        commands.run(["docker", "run", "--detach", "--init", "--name", HAND_TARGET, "--label", HAND_LABEL,
                      "--network", HAND_NETWORK, "--ip", HAND_CONTAINER_IP, "--cpuset-cpus",
                      format_cpus(split.target_cpus), *mount, get_target(FILE_SERVER).image])
        pid = int(commands.run(["docker", "inspect", "--format", "{{.State.Pid}}", HAND_TARGET]).stdout.strip() or 0)
        wait_serving(HAND_CONTAINER_IP, lambda: psutil.pid_exists(pid))
        volumes = [a for m in mounts for a in ("-v", f"{m}:{m}" + (":ro" if m == TOOLS_DIR else ""))]
        yield HandNginx(HAND_CONTAINER_IP, nginx_processes(pid),
                        ["docker", "run", "--rm", "--init", "--name", HAND_TOOL, "--label", HAND_LABEL, "--network",
                         HAND_NETWORK, "--cpuset-cpus", format_cpus(split.tool_cpus), *volumes, tool_image])
    finally:
        with signals_deferred():
            logs = subprocess.run(["docker", "logs", HAND_TARGET], capture_output=True, text=True, check=False)
            (folder / "nginx.log").write_text(logs.stdout + logs.stderr)
            commands.run(["docker", "rm", "--force", HAND_TOOL, HAND_TARGET], check=False)
            if network_made:
                commands.run(["docker", "network", "rm", HAND_NETWORK], check=False)


@dataclass(frozen=True)
class HandSide:
    run: HandRun
    nginx_processes: int | None


def by_hand(runtime: str, adapter: ToolAdapter, scenario: Scenario, split: CpuSplit, folder: Path,
            root: Path, top: bool = False) -> HandSide:
    """One run by hand, from Nginx's start to everything removed; a setup that fails is the side's error.
    ``top``: the harness's top beside the tool (top_beside)."""
    folder.mkdir(parents=True)
    commands = Commands()
    plain = adapter.name == "wrk" and "wrk-script" in candidates_off()
    try:
        if runtime == "host":
            place = host_nginx(split, commands, folder)
        else:
            from harness.runtimes.docker import tool_image
            place = docker_nginx(split, commands, folder, [root, TOOLS_DIR], tool_image(adapter))
        with place as nginx:
            spec = RunSpec(url=Target(nginx.host).url, vus=scenario.vus, duration_s=scenario.duration_s,
                           out_dir=folder, cpus=len(split.tool_cpus), keepalive=scenario.keepalive,
                           protocol=scenario.protocol, streams=scenario.streams)
            with top_beside(split, commands, folder) if top else nullcontext():
                hand = run_by_hand(nginx.tool_prefix, adapter, spec, plain)
                commands.lines.append(shlex.join(hand.argv))
            return HandSide(hand, nginx.processes)
    except HarnessError as exc:
        return HandSide(HandRun([], None, str(exc)), None)
    finally:
        commands.write(folder / "commands.sh")


@contextmanager
def top_beside(split: CpuSplit, commands: Commands, folder: Path) -> Iterator[subprocess.Popen]:
    """--by-hand-top: top beside the tool by hand, as the study ran it and as the harness runs it during a load: the
    harness's own top command (sampling.top_command), on the tool's CPUs, at the harness's nice and batch policy,
    from just before the tool's launch to its end; its frames kept in top.txt. The ratio then leaves top's cost out
    and keeps the rest of what the harness adds (its reader of top's frames among it)."""
    argv = ["chrt", "--batch", "0", "nice", "-n", str(SAMPLER_NICE), *split.taskset("tool"), "env",
            *(f"{name}={value}" for name, value in TOP_ENV.items()), *top_command()]
    commands.lines.append(f"{shlex.join(argv)} > {shlex.quote(str(folder / 'top.txt'))} & top=$!")
    try:
        with (folder / "top.txt").open("w") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
    except OSError as exc:
        raise HarnessError(f"by hand: `{shlex.join(argv)}`: {exc}") from None
    try:
        yield proc
    finally:
        commands.lines.append('kill "$top"')
        end_process(proc, grace_s=5)


@dataclass
class Measured:
    runtime: str
    tool: str
    pairs: list[Pair] = field(default_factory=list)
    by_hand_command: list[str] = field(default_factory=list)
    harness_command: list[str] = field(default_factory=list)


def harness_side(runtime: str, adapter: ToolAdapter, scenario: Scenario, split: CpuSplit, root: Path,
                 lock: Held) -> tuple[float | None, Path, str | None]:
    """One `harness run` of the scenario: (its RPS or None, its run's folder, its error). A suite that cannot
    start (a pre-flight problem, a target that does not come up) fails this pair, not the check."""
    plan = Plan(runtime=runtime, tools=[adapter], scenarios=[scenario], results_root=root / "harness", split=split)
    try:
        folder, (row,) = run_suite(plan, lock=lock)
    except HarnessError as exc:
        return None, root / "harness", f"harness: {exc}"
    error = None if row.status == "ok" else f"harness: {row.status}: {row.error}"
    return (row.rps if row.status == "ok" else None), folder.path / row.run_dir, error


def harness_nginx_processes(run_dir: Path) -> int | None:
    """Nginx's processes (master and workers) as the harness's sampling saw them (None: not sampled)."""
    path = run_dir / "execution.json"
    if not path.is_file():
        return None
    seen = json.loads(path.read_text()).get("affinity", {}).get("nginx", {})
    return sum(1 for p in seen.values() if p.get("name") == "nginx") or None


def harness_observer(run_dir: Path) -> tuple[float | None, str | None]:
    """What the harness's observation cost during its load (execution.json's observer): (share of one CPU, the
    CPUs it was held to); (None, None) where it was not recorded."""
    path = run_dir / "execution.json"
    found = json.loads(path.read_text()).get("observer") if path.is_file() else None
    if not found:
        return None, None
    return Observer(**found).share(), found["cpus"]


def hand_folder(root: Path, runtime: str, tool: str, index: int) -> Path:
    """Where pair ``index``'s by-hand side keeps its files. One left by a pair interrupted before it was recorded
    (a resumed check) is renamed aside, not overwritten."""
    folder = root / "by-hand" / f"{runtime}-{tool}-{index}"
    if folder.exists():
        folder.rename(folder.with_name(f"{folder.name}-interrupted-{utc_stamp()}"))
    return folder


def one_pair(runtime: str, adapter: ToolAdapter, scenario: Scenario, split: CpuSplit, index: int, root: Path,
             lock: Held, previous: str | None = None, top: bool = False) -> tuple[Pair, HandRun]:
    """Pair ``index``: both sides in pair_order(``previous``), ``previous`` the side of the run just before;
    ``top``: top beside the tool by hand."""
    rps: dict[str, float | None] = {}
    errors: list[str] = []
    harness_run, hand_dir, hand = Path(root), hand_folder(root, runtime, adapter.name, index), None
    processes: dict[str, int | None] = {}
    observer: tuple[float | None, str | None] = (None, None)
    order = pair_order(previous)
    for side in order:
        if side == HARNESS:
            rps[side], harness_run, error = harness_side(runtime, adapter, scenario, split, root, lock)
            processes[side] = harness_nginx_processes(harness_run)
            observer = harness_observer(harness_run)
        else:
            got = by_hand(runtime, adapter, scenario, split, hand_dir, root, top)
            hand, rps[side], error, processes[side] = got.run, got.run.rps, got.run.error, got.nginx_processes
        errors += [error] if error else []
    pair = Pair(index, order[0], rps[HARNESS], rps[BY_HAND], str(harness_run.relative_to(root)),
                str(hand_dir.relative_to(root)), errors, processes[HARNESS], processes[BY_HAND], *observer, previous)
    return pair, hand


def one_side(side: str, runtime: str, adapter: ToolAdapter, scenario: Scenario, split: CpuSplit, root: Path,
             lock: Held, name: str) -> tuple[float | None, str | None]:
    """One run of ``side`` alone (its RPS or None, its error): for carry_over, which orders them itself."""
    if side == HARNESS:
        rps, _, error = harness_side(runtime, adapter, scenario, split, root, lock)
        return rps, error
    run = by_hand(runtime, adapter, scenario, split, root / "by-hand" / name, root).run
    return run.rps, run.error


def max_pairs_for(precision: float) -> int:
    """The default cap at ``precision``: MAX_PAIRS at PRECISION, scaled as the pairs it takes (an interval
    narrows as one over the root of the pairs), so +-1% is not stopped at +-2%'s cap."""
    return max(MIN_PAIRS_TO_STOP, math.ceil(MAX_PAIRS * (PRECISION / precision) ** 2))


@dataclass(frozen=True)
class Goal:
    """How many pairs: exactly ``pairs``, or (``pairs`` None) until the interval is within +-``precision``,
    after at least MIN_PAIRS_TO_STOP and at most ``max_pairs``."""
    pairs: int | None
    precision: float = PRECISION
    max_pairs: int = MAX_PAIRS

    @property
    def limit(self) -> int:
        return self.pairs or self.max_pairs

    def reached(self, entry: Measured) -> bool:
        if len(entry.pairs) >= self.limit:
            return True
        if len(entry.pairs) >= MIN_PAIRS and all(p.ratio is None for p in entry.pairs):
            return True      # a tool or a set-up that fails every time: more pairs would fail as well
        return self.pairs is None and Summary.of(entry.runtime, entry.tool, entry.pairs).precise(self.precision)

    def describe(self) -> str:
        if self.pairs:
            return f"{self.pairs} pair{'s' * (self.pairs != 1)}"
        return f"pairs until +-{100 * self.precision:g}% (at least {MIN_PAIRS_TO_STOP}, at most {self.max_pairs})"


def entry_for(measured: list[Measured], runtime: str, tool: str) -> Measured:
    """The runtime and tool's pairs so far (a resumed check's), or a new entry appended to ``measured``."""
    for entry in measured:
        if (entry.runtime, entry.tool) == (runtime, tool):
            return entry
    measured.append(Measured(runtime, tool))
    return measured[-1]


def measure_runtime(runtime: str, adapters: list[ToolAdapter], scenario: Scenario, goal: Goal, root: Path,
                    lock: Held, measured: list[Measured], save: Callable[[], None], top: bool = False) -> None:
    """Pairs of every tool in one runtime, appended to its entry in ``measured`` (after a resumed check's) and
    saved after each: the tools take turns (``turns``), each until its goal; each pair starts on the side the run
    before it ran (``pair_order``)."""
    split = choose_split()
    entries = {a.name: entry_for(measured, runtime, a.name) for a in adapters}
    previous: str | None = None
    round_no = 0
    started, timed = time.monotonic(), 0    # this command's pace: seconds per pair, every tool's
    while due := [a for a in adapters if not goal.reached(entries[a.name])]:
        for adapter in turns(due, round_no):
            entry = entries[adapter.name]
            index = len(entry.pairs) + 1
            print(f"{runtime} {adapter.name}: pair {index}, {' then '.join(pair_order(previous))}", flush=True)
            pair, hand = one_pair(runtime, adapter, scenario, split, index, root, lock, previous, top)
            timed += 1
            previous = pair_order(previous)[1]
            entry.pairs.append(pair)
            entry.by_hand_command = hand.argv or entry.by_hand_command
            entry.harness_command = _harness_command(root / pair.harness_run) or entry.harness_command
            print(f"   harness {_rps(pair.harness_rps)}, by hand {_rps(pair.by_hand_rps)}: ratio "
                  f"{'n/a' if pair.ratio is None else f'{pair.ratio:.3f}'}; Nginx processes "
                  f"{pair.harness_nginx or '?'} / {pair.by_hand_nginx or '?'}; {_observer(pair)}"
                  + "".join(f"; {e}" for e in pair.errors), flush=True)
            if index >= MIN_PAIRS:
                summary = Summary.of(runtime, adapter.name, entry.pairs)
                print(f"   so far: {summary.line()}{_short_of(summary, goal, (time.monotonic() - started) / timed)}",
                      flush=True)
            save()
        round_no += 1


def _harness_command(run_dir: Path) -> list[str]:
    record = run_dir / "record.json"
    if not record.is_file():
        return []
    parts = json.loads(record.read_text()).get("parts") or [{}]
    return parts[0].get("command") or []


def _observer(pair: Pair) -> str:
    if pair.observer_share is None:
        return "observer not recorded"
    return f"observer {100 * pair.observer_share:.1f}% of a CPU on {pair.observer_cpus or 'any CPU'}"


def _rps(value: float | None) -> str:
    return "failed" if value is None else f"{value:,.0f} rps"


# --- the command ----------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="lth overhead", description=__doc__.splitlines()[0],
                                     epilog="example: lth overhead --runtime host --tools wrk --precision 0.03")
    parser.add_argument("--runtime", choices=(*RUNTIMES, "both"), default="both",
                        help="host, docker or both (default, as `make bench-overhead`)")
    parser.add_argument("--tools", default="wrk,oha", help="tool ids (default: wrk,oha: a C tool and a Rust tool)")
    parser.add_argument("--pairs", type=int, help="exactly this many interleaved pairs per runtime and tool "
                        "(default: as many as --precision takes)")
    parser.add_argument("--precision", type=float, default=PRECISION,
                        help=f"without --pairs: add pairs until the 95%% interval lies within +-this share of the "
                             f"estimate (default {PRECISION}: +-{100 * PRECISION:g}%%; at least {MIN_PAIRS_TO_STOP} pairs)")
    parser.add_argument("--max-pairs", type=int,
                        help=f"without --pairs: stop at this many pairs, precise or not (default {MAX_PAIRS} at "
                             f"+-{100 * PRECISION:g}%%, scaled as the pairs a precision takes: {max_pairs_for(0.01)} "
                             f"at +-1%%)")
    parser.add_argument("--duration", type=int, help=f"seconds per run (default {DURATION_S}; "
                                                      "with --resume, the check's own)")
    parser.add_argument("--results-root", type=Path, default=REPO_ROOT / "results")
    parser.add_argument("--pool", type=Path, nargs="+", metavar="FOLDER",
                        help="measure nothing: the summary of the pairs of these checks' folders together")
    parser.add_argument("--resume", type=Path, metavar="FOLDER",
                        help="add pairs to this check's folder (an interrupted or imprecise one) until the goal, "
                             "counting its pairs; the same duration and candidates off")
    parser.add_argument("--by-hand-top", action="store_true",
                        help="run the harness's top (once a second, on the tool's CPUs) beside the tool by hand too, "
                             "as the study did: the ratio then leaves top's cost out (docs/overhead.md)")
    parser.add_argument("--carry-over", type=int, metavar="RUNS",
                        help="in place of pairs: RUNS runs per runtime in random order, and how much a run's rate "
                             "depends on its side and on the side of the run before it (harness/suite/carry_over.py)")
    args = parser.parse_args(argv)
    if args.carry_over is not None and (args.carry_over < 1 or args.pool or args.resume or args.pairs
                                        or args.by_hand_top):
        parser.error("--carry-over takes 1 run or more, and no --pairs, --pool, --resume or --by-hand-top")
    if (args.pairs is not None and args.pairs < 1) or (args.duration is not None and args.duration < 1) \
            or (args.max_pairs is not None and args.max_pairs < 1):
        parser.error("--pairs, --max-pairs and --duration must be 1 or more")
    if not 0 < args.precision < 1:
        parser.error("--precision is a share of the estimate between 0 and 1 (0.02: +-2%)")
    args.max_pairs = args.max_pairs or max_pairs_for(args.precision)
    return args


# scenario, seconds per run, candidates off, the pairs' order (ORDERS), top beside the tool by hand: pairs pool and
# resume only alike
Settings = tuple[str, int, tuple[str, ...], str, bool]


def settings(data: dict) -> Settings:
    """A check's settings from its overhead.json, of any format. Format 1 (no "format"): the by-hand Docker target
    served the image's files unless "image-files" was off, which is format 2's default; "mount" off is the old
    default. Before format 3 a pair's first side came from its index (its pairs' order "by index")."""
    format_ = data.get("format", 1)
    off = set(data.get("candidates_off", []))
    if format_ < 2 and any(r["runtime"] == "docker" for r in data["results"]):
        off = off - {"image-files"} if "image-files" in off else off | {"mount"}
    return (data["scenario"], data["duration_s"], tuple(sorted(off - {"image-files"})),
            ORDERS[min(max(format_, 2), FORMAT)], bool(data.get("by_hand_top", False)))


def load(folder: Path) -> tuple[Settings, list[Measured]]:
    """A check's settings and its pairs per runtime and tool, from its folder's overhead.json."""
    return loaded(json.loads((folder / "overhead.json").read_text()))


def loaded(data: dict) -> tuple[Settings, list[Measured]]:
    """The settings and pairs of a check's overhead.json, already read."""
    measured = [Measured(r["runtime"], r["tool"], [Pair(**{k: v for k, v in p.items() if k != "ratio"})
                                                   for p in r["pairs"]],
                         r.get("by_hand_command", []), r.get("harness_command", [])) for r in data["results"]]
    return settings(data), measured


def pooled(folders: list[Path]) -> list[Summary]:
    """Per runtime and tool, the summary of every pair the checks in ``folders`` measured (the same scenario,
    duration and candidates off: refused otherwise)."""
    pairs: dict[tuple[str, str], list[Pair]] = {}
    found = set()
    for folder in folders:
        setting, measured = load(folder)
        found.add(setting)
        for m in measured:
            pairs.setdefault((m.runtime, m.tool), []).extend(m.pairs)
    if len(found) > 1:
        raise HarnessError(f"--pool: these checks differ in scenario, duration, candidates off, the order of their "
                           f"pairs or top by hand: {sorted(found)}")
    return [Summary.of(runtime, tool, found) for (runtime, tool), found in pairs.items()]


def resumed(folder: Path, duration_s: int | None, top: bool = False) -> tuple[int, list[Measured], list[list[str]]]:
    """A check's folder to add pairs to: its seconds per run, its pairs so far and the commands that measured
    them. Refused (HarnessError) where this check would differ from it."""
    try:
        data = json.loads((folder / "overhead.json").read_text())
        was, measured = loaded(data)
        duration = was[1]
        commands = data.get("commands", [])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarnessError(f"--resume: {folder} holds no readable overhead.json ({exc})") from None
    now = (SCENARIO, duration_s or duration, tuple(sorted(candidates_off())), ORDERS[FORMAT], top)
    if now != was:
        raise HarnessError(f"--resume: {folder} was measured with (scenario, seconds, candidates off, order, top by "
                           f"hand) {was}, this check would be {now}")
    return duration, measured, commands


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.pool:
        try:
            print("\n".join(s.line() for s in pooled(args.pool)))
        except (OSError, ValueError, KeyError, HarnessError) as exc:
            print(f"error: --pool: {exc}", file=sys.stderr)
            return 2
        return 0
    measured: list[Measured] = []
    commands: list[list[str]] = []
    try:
        if unknown := candidates_off() - set(CANDIDATES):
            raise HarnessError(f"{CANDIDATES_ENV}: no such candidate {', '.join(sorted(unknown))} "
                               f"(known: {', '.join(CANDIDATES)})")
        if args.resume:
            args.duration, measured, commands = resumed(args.resume, args.duration, args.by_hand_top)
        args.duration = args.duration or DURATION_S
        adapters = registry.select(args.tools)
        scenario = select(f"{REPO_ROOT}/{SCENARIO}", args.duration)[0]
        lock = acquire()    # held for every pair: nothing else runs between them
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with interrupts_raised(), lock:   # the by-hand side too: its Nginx, network and containers removed
            if args.carry_over:
                return carry_over.measure(RUNTIMES if args.runtime == "both" else (args.runtime,), adapters, scenario,
                                          args.carry_over, (HARNESS, BY_HAND), one_side, lock, args.results_root)
            return measure(args, adapters, scenario, lock, measured, [*commands, sys.argv])
    except KeyboardInterrupt:     # Ctrl-C or SIGTERM (the runner raises it): every finished pair is written
        print(f"interrupted: every finished {'run' if args.carry_over else 'pair'} is in "
              f"{'carry-over.json' if args.carry_over else 'overhead.json'}; everything started was removed",
              file=sys.stderr)
        return 130


def measure(args: argparse.Namespace, adapters: list[ToolAdapter], scenario: Scenario, lock: Held,
            measured: list[Measured], commands: list[list[str]]) -> int:
    """Pairs until the goal, into a new folder or (``args.resume``) the resumed one, after its ``measured``;
    ``commands``: every command that measured in it, this one last."""
    root = args.resume.resolve() if args.resume else args.results_root.resolve() / f"{utc_stamp()}-overhead"
    root.mkdir(parents=True, exist_ok=bool(args.resume))
    runtimes = RUNTIMES if args.runtime == "both" else (args.runtime,)
    goal = Goal(args.pairs, args.precision, args.max_pairs)
    print(f"{', '.join(runtimes)}; {', '.join(a.name for a in adapters)}: {goal.describe()} of {args.duration} s",
          flush=True)
    if candidates_off():
        print(f"{CANDIDATES_ENV}={','.join(sorted(candidates_off()))}: measuring without these (issue 53.2)", flush=True)
    if args.by_hand_top:
        print("--by-hand-top: top beside the tool by hand too; the ratio leaves top's cost out", flush=True)
    if args.resume:
        print(f"resuming {root}: " + "; ".join(f"{m.runtime} {m.tool} {len(m.pairs)} pairs" for m in measured),
              flush=True)
    save = lambda: write(root, measured, args, goal, commands)   # noqa: E731 - after every pair
    try:
        for runtime in runtimes:
            measure_runtime(runtime, adapters, scenario, goal, root, lock, measured, save, args.by_hand_top)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if not measured and not any(root.iterdir()):
            root.rmdir()
            return 2
    finally:
        if measured:
            save()
    summaries = [Summary.of(m.runtime, m.tool, m.pairs) for m in measured]
    beside = "; by hand with top beside the tool" if args.by_hand_top else ""
    print("\n".join(s.line() + beside + _short_of(s, goal) for s in summaries) + f"\nwritten: {root / 'overhead.json'}")
    asked = [s for s in summaries if s.runtime in runtimes and s.tool in {a.name for a in adapters}]
    complete = len(asked) == len(runtimes) * len(adapters) and all(s.mean is not None for s in asked)
    return 0 if complete else 1


def _short_of(summary: Summary, goal: Goal, seconds_per_pair: float | None = None) -> str:
    """``; +-0.5% takes ~3,094 pairs ...`` while a check is short of its precision, or when it stopped short (at
    its cap, or interrupted); empty with a pair count asked, once precise, or below MIN_PAIRS_TO_PROJECT."""
    if goal.pairs or summary.precise(goal.precision):
        return ""
    ahead = projection(summary.ratios, goal.precision, seconds_per_pair)
    return f"; {ahead}" if ahead else ""


def write(root: Path, measured: list[Measured], args: argparse.Namespace, goal: Goal,
          commands: list[list[str]]) -> None:
    results = []
    for m in measured:
        summary = Summary.of(m.runtime, m.tool, m.pairs)
        shares = [p.observer_share for p in m.pairs if p.observer_share is not None]
        results.append({**asdict(summary), "precision": summary.precision,
                        "halves": [asdict(h) for h in summary.halves or ()], "drifted": summary.drifted,
                        "line": summary.line(),
                        # at this check's spread, for its precision (null below MIN_PAIRS_TO_PROJECT ratios)
                        "pairs_needed": {"precision": goal.precision,
                                         "pairs": pairs_needed(summary.ratios, goal.precision)},
                        "observer_share_median": statistics.median(shares) if shares else None,
                        "pairs": [{**asdict(p), "ratio": p.ratio} for p in m.pairs],
                        "harness_command": m.harness_command, "by_hand_command": m.by_hand_command})
    summary = {"format": FORMAT, "issue": 53, "scenario": SCENARIO, "duration_s": args.duration, "pairs_asked": args.pairs,
               "goal": goal.describe(), "confidence": CONFIDENCE,
               "interval": f"percentile bootstrap of the ratios' geometric mean ({RESAMPLES} resamples, seed {SEED}); "
                           f"none below {MIN_PAIRS} pairs", "candidates_off": sorted(candidates_off()),
               "by_hand_top": args.by_hand_top,
               "load": os.getloadavg(), "command": commands[0], "commands": commands, "results": results}
    (root / "overhead.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
