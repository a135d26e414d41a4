"""Checks before a suite starts, all reported at once (TechEmpower-style): a long unattended run
should fail in the first second, not after three hours."""
from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from harness import targets
from harness.errors import HarnessError
from harness.runtimes.ssh import parse_ssh_url
from harness.store.results import ResultsFolder, read_environment
from harness.store.safe import links_on_the_way
from harness.targets import Setup
from harness.tools import capabilities

if TYPE_CHECKING:
    from harness.runtimes import Runtime
    from harness.suite.plan import Plan

MIN_FREE_DISK_GB = 1.0
FD_MARGIN = 256           # files the tool needs besides its sockets


def _writable(root: Path) -> str | None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root):
            pass
    except OSError as exc:
        return f"results folder {root} is not writable ({exc.strerror}): pass a writable --results-root"
    return None


def _disk(root: Path) -> str | None:
    free_gb = shutil.disk_usage(root).free / 1024**3
    if free_gb < MIN_FREE_DISK_GB:
        return f"only {free_gb:.1f} GiB free under {root}: raw tool logs need at least {MIN_FREE_DISK_GB} GiB"
    return None


def _open_files(max_vus: int) -> str | None:
    """Raise the soft limit to the hard one (tools inherit it); complain if even that is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < max_vus + FD_MARGIN:
        return f"open-file limit {hard} is below {max_vus + FD_MARGIN} for {max_vus} VUs: raise it (ulimit -n)"
    return None


def _ephemeral_ports(max_vus: int) -> str | None:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except OSError:
        return None
    if high - low + 1 < 2 * max_vus:
        return (f"ephemeral port range {low}-{high} is too small for {max_vus} VUs: "
                "widen net.ipv4.ip_local_port_range")
    return None


def check_resume(plan: "Plan") -> None:
    """A wrong --resume is bad input: said before the runtime is made, the pre-flight and the lock."""
    if plan.resume is None:
        return
    ResultsFolder.open(plan.resume, plan.runtime)
    if problem := _other_target(plan):
        raise HarnessError(problem)
    if problem := _links(plan):
        raise HarnessError(problem)


def _links(plan: "Plan") -> str | None:
    """A link where the suite writes (a run's folder, runs.csv): a shared folder's planted link would make
    it empty or write what the link points at (harness/store/safe.py follows none, mid-suite)."""
    written = [plan.resume / name for name in ("runs.csv", "environment.json", "capacity.json")]
    written += [plan.resume / s.id / t.name / ("" if r == 1 else f"repeat-{r}") for s, t, r in plan.runs]
    if problem := links_on_the_way(plan.resume, written):
        return (f"cannot resume {plan.resume}: {problem}; the harness writes only inside a results folder and "
                f"follows no link in it: remove the link, or start a new results folder (leave out --resume)")
    return None


def _other_target(plan: "Plan") -> str | None:
    """The runs a resume adds must hit the target the folder's finished runs hit (--target-host)."""
    recorded = read_environment(plan.resume).get("target_host")
    recorded = recorded if isinstance(recorded, dict) else {}
    asked = parse_ssh_url(plan.target_host).address if plan.target_host else None
    if recorded.get("address") == asked:
        return None
    was = f"--target-host {recorded['url']}" if recorded.get("url") else "a target on this machine"
    return (f"cannot resume {plan.resume}: it was measured against {was}; "
            f"resume it with the same target, or start a new results folder")


def _target_problems(plan: "Plan", runtime: "Runtime") -> list[str]:
    """What the scenarios' targets need on this machine: openssl for TLS; on the host, each server's binary
    and Nginx's echo module for a backend delay (the Docker images carry their own)."""
    setups = {Setup.of(s) for s in plan.scenarios if runtime.unsupported_reason(s) is None}
    found = []
    if any(s.tls for s in setups) and shutil.which("openssl") is None:
        found.append("a TLS scenario needs openssl for its throw-away certificate: run `make deps`")
    if plan.runtime != "host":
        return found
    for target in sorted({targets.get(s.target) for s in setups}, key=lambda t: t.id):
        if shutil.which(target.version_command[0]) is None:
            found.append(f"target {target.id} needs `{target.version_command[0]}` (Debian: "
                         f"{' '.join(target.packages)}): run `make deps`")
    if any(s.delay_ms for s in setups) and not targets.ECHO_MODULE.is_file():
        found.append(f"backend_delay_ms needs Nginx's echo module {targets.ECHO_MODULE} (Debian: "
                     "libnginx-mod-http-echo): run `make deps`")
    return found


def _nothing_supported(plan: "Plan") -> str | None:
    """Every run asks a tool for keep-alive off, TLS or HTTP/2 it cannot do: bad input, said before anything runs
    (mixed with runs that can go ahead, such runs become `unsupported` rows)."""
    reasons = [(tool.name, capabilities.unsupported_reason(s, tool)) for s in plan.scenarios for tool in plan.tools
               if not s.keepalive or s.tls or s.protocol != "http/1.1"]
    if not reasons or len(reasons) < len(plan.scenarios) * len(plan.tools) or not all(r for _, r in reasons):
        return None
    tool, reason = reasons[0]
    return (f"nothing to run: {tool}: {reason}; pick tools that can (make list-tools shows keep-alive off, TLS, h2 "
            "and h2c)")


def check(plan: "Plan", runtime: "Runtime") -> None:
    max_vus = max(s.vus for s in plan.scenarios)
    check_resume(plan)
    root = plan.resume or plan.results_root
    problems = [p for p in (_writable(root), _open_files(max_vus), _ephemeral_ports(max_vus)) if p]
    if not problems:
        problems += [p for p in (_disk(root),) if p]
    if os.geteuid() != 0 and plan.runtime == "docker":
        problems.append("the Docker runtime enters container namespaces (nsenter) and needs root: run as root")
    if problem := _nothing_supported(plan):
        raise HarnessError(problem)
    problems += runtime.problems(plan.tools) + _target_problems(plan, runtime)
    if len(problems) == 1:
        raise HarnessError(problems[0])
    if problems:
        raise HarnessError(f"pre-flight found {len(problems)} problems:\n  - " + "\n  - ".join(problems))
