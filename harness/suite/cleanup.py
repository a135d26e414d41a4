"""Leaving nothing behind: signal-safe cleanup blocks and the `clean-state` sweep.

Everything the harness creates carries the ``lth`` prefix or label: namespaces and veths
(``lth-*``), the Compose project and its containers/network (label ``lth``), Toxiproxy processes
from /opt/lth/bin, Nginx processes whose prefix is a ``/tmp/lth-target-*`` folder, and tcpdump
processes writing an ``lth-capture*.pcap`` (--capture); also a test's second host (sshd with a
``/tmp/lth-testhost-*`` config). A target on another host (--target-host) is cleaned there:
``clean-state --target-host URL`` (harness/runtimes/remote.py clean_remote).
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psutil

from harness import PREFIX
from harness.processes import run


def _harness_processes() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "/opt/lth/bin/toxiproxy-server" in cmdline or f"/tmp/{PREFIX}-target-" in cmdline \
                or f"{PREFIX}-capture" in cmdline \
                or f"/tmp/{PREFIX}-testhost-" in cmdline:   # sshd of a test's second host (harness/lab.py)
            found.append(proc)
    return found


def clean_state() -> list[str]:
    """Remove whatever a killed harness left behind; returns what was removed."""
    removed = []
    for proc in _harness_processes():
        try:
            family = [*proc.children(recursive=True), proc]   # nginx workers die with their master
            name = proc.name()
        except psutil.NoSuchProcess:
            continue
        for member in family:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        removed.append(f"process {proc.pid} ({name}) and {len(family) - 1} children")
    for workdir in [*Path(tempfile.gettempdir()).glob(f"{PREFIX}-target-*"),
                    *Path(tempfile.gettempdir()).glob(f"{PREFIX}-testhost-*")]:
        shutil.rmtree(workdir, ignore_errors=True)
        removed.append(f"folder {workdir}")
    for namespace in run(["ip", "netns", "list"], check=False).stdout.split("\n"):
        name = namespace.split(" ")[0]
        if name.startswith(f"{PREFIX}-"):
            run(["ip", "netns", "delete", name], check=False)
            removed.append(f"namespace {name}")
    for line in run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0] if ":" in line else ""
        if name.startswith(f"{PREFIX}-"):
            run(["ip", "link", "delete", name], check=False)
            removed.append(f"link {name}")
    if run(["docker", "version"], check=False, timeout=20).returncode == 0:
        from harness.runtimes.swarm import clean_swarm
        removed += clean_swarm()      # its services first: a network in use cannot go
        containers = run(["docker", "ps", "-aq", "--filter", f"label={PREFIX}"], check=False).stdout.split()
        if containers:
            run(["docker", "rm", "-f", *containers], check=False)
            removed += [f"container {c}" for c in containers]
        networks = run(["docker", "network", "ls", "-q", "--filter", f"label={PREFIX}"], check=False).stdout.split()
        for network in networks:
            run(["docker", "network", "rm", network], check=False)
            removed.append(f"network {network}")
    return removed
