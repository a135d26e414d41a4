"""The host runtime with Nginx on another machine (``--target-host ssh://user@host``).

Tools run here as plain processes, as in the host runtime; Nginx runs on the other host, started
over ssh with the same config (harness/targets/file_server.py stage), bound to the host's address only and
only while the suite lasts. The load crosses the real network between the two machines.

    this machine (tools, RTT probe)  ---- real network ---->  other host: nginx -p /tmp/lth-target-*/

Each figure is measured on one side, so the two clocks never meet: latencies, RPS and the RTT on
the generator's clock, the request count by Nginx's own counter (stub_status, read before and
after the run); Nginx's CPU by a top run there over ssh; the stall test's freeze by one script there.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness import PREFIX
from harness.cpus import CpuSplit, format_cpus
from harness.errors import HarnessError
from harness.processes import signals_deferred
from harness.rtt_probe import TargetMismatch, probe
from harness.runtimes.base import Runtime, Session, run, undone_on_error
from harness.runtimes.generator import DOCKER_SWEEP, READY_TIMEOUT_S, GeneratorHost, generators_up
from harness.runtimes.host import HostSession, local_problems
from harness.runtimes.remote_nginx import RemoteNginx
from harness.runtimes.ssh import SshHost, parse_ssh_url
from harness.runtimes.together import StartBarrier
from harness.sampling import TopSampler
from harness.scenarios import Scenario
from harness.targets.file_server import Target, target_file_sha256
from harness.tools.adapter import ToolAdapter

PROBE = Path(__file__).resolve().parents[1] / "rtt_probe.py"

RTT_PROBES = 50

FACTS_SCRIPT = """addr={address}
echo "hostname=$(hostname)"
echo "kernel=$(uname -r)"
echo "os=$(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME")"
echo "cpu_model=$(awk -F': ' '/^model name/ {{print $2; exit}}' /proc/cpuinfo)"
echo "cores=$(nproc)"
echo "memory_kib=$(awk '/^MemTotal/ {{print $2}}' /proc/meminfo)"
dev=$(ip -o addr show to "$addr" 2>/dev/null | awk '{{print $2; exit}}')
echo "nic=$dev"
echo "nic_speed_mbps=$(cat /sys/class/net/$dev/speed 2>/dev/null)"
echo "nginx_version=$(nginx -v 2>&1)"
echo "docker_version=$(docker version --format '{{{{.Server.Version}}}}' 2>/dev/null)"
echo "user=$(id -un)"
"""
# What a killed harness left there (clean-state --target-host); the pattern is written with `$p`
# unexpanded so that it does not match this script's own command line.
CLEAN_SCRIPT = """p={prefix}
for master in $(pgrep -f "nginx -p /tmp/$p-target-"); do
  kill -KILL $(pgrep -P "$master") "$master" 2>/dev/null && echo "nginx $master and its workers"
done
for d in /tmp/$p-target-*; do
  [ -e "$d" ] && rm -rf "$d" && echo "folder $d"
done
true
"""
CHECK_SCRIPT = 'command -v nginx >/dev/null || echo "nginx missing"; [ "$(id -u)" = 0 ] || echo "not root"; true'


def _number(text: str | None) -> int | None:
    return int(text) if text and re.fullmatch(r"\d+", text) else None


def host_facts(lines: str) -> dict:
    """FACTS_SCRIPT's key=value lines as environment.json records a machine."""
    raw = dict(line.split("=", 1) for line in lines.splitlines() if "=" in line)
    memory = _number(raw.get("memory_kib"))
    return {"hostname": raw.get("hostname"), "kernel": raw.get("kernel"), "os": raw.get("os"),
            "cpu_model": raw.get("cpu_model") or None, "cores": _number(raw.get("cores")),
            "memory_gib": round(memory / 1024**2, 1) if memory else None,
            "nic": raw.get("nic") or None, "nic_speed_mbps": _number(raw.get("nic_speed_mbps")),
            "nginx_version": raw.get("nginx_version"), "docker_version": raw.get("docker_version") or None,
            "ssh_user": raw.get("user")}


def route_device(address: str) -> str:
    """This machine's interface towards ``address`` (where the generator's packets leave)."""
    match = re.search(r"\bdev (\S+)", run(["ip", "route", "get", address], check=False).stdout)
    if not match:
        raise HarnessError(f"no route from this machine to {address}: check the network to the target host")
    return match.group(1)


def nic_speed_mbps(device: str) -> int | None:
    """The link speed the kernel reports (virtual and some wireless devices have none)."""
    try:
        return _number(Path(f"/sys/class/net/{device}/speed").read_text().strip())
    except OSError:
        return None


def remote_split(cpus_target: str | None, cpus_tool: str | None, generators: tuple[str, ...] = ()) -> CpuSplit:
    """With the target on another machine the tool may use every CPU where it runs: here, or the
    generator hosts' (the fewest of them, read over ssh)."""
    if cpus_target or cpus_tool:
        raise HarnessError("--cpus-target/--cpus-tool split this machine's CPUs between Nginx and the tool; with "
                           "--target-host Nginx runs on the other host: leave them out")
    if generators:
        cores = min(int(parse_ssh_url(g, "--generator-host").text("nproc", timeout=30).strip()) for g in generators)
        return CpuSplit(tuple(range(cores)), reason=f"tools on the generator host(s): each may use every CPU there "
                                                    f"(the fewest: {cores})")
    return CpuSplit(tuple(sorted(os.sched_getaffinity(0))),
                    reason="target on another host (--target-host): the tool may use every CPU here")


def clean_remote(url: str) -> list[str]:
    """Remove the Nginx processes, containers and folders a killed harness left on ``url``'s host."""
    host = parse_ssh_url(url)
    answer = host.text(DOCKER_SWEEP) + host.text(CLEAN_SCRIPT.format(prefix=PREFIX))
    return [f"{line} on {host.url}" for line in answer.splitlines() if line]


class RemoteTargetSession(HostSession):
    # Two machines: a latency proxy runs here beside the tool, on this machine's loopback.
    proxy_beside_target = False

    def __init__(self, target: Target, split: CpuSplit, nginx: RemoteNginx, device: str, target_cores: int | None):
        super().__init__(target, split, stack=None)   # Nginx is on the other host
        self.target_cores = target_cores
        self.remote_freeze = nginx.freeze
        # Nothing runs in a namespace here: shaping is a proxy beside the tool, the stall is sent over ssh.
        self.shape_netns, self.target_netns, self.shape_device = [], [], ""
        self.capture_device = device
        self.explicit_target = target.host
        self._remote_nginx = nginx

    def target_pids(self) -> set[int]:
        return set()    # on the other host: sampled there (target_sampler)

    def proxy_place(self) -> tuple[str, str]:
        return "127.0.0.1", self.target.host

    def target_sampler(self) -> TopSampler:
        return self._remote_nginx.sampler()

    def save_logs(self, run_dir: Path) -> None:
        (run_dir / "nginx.log").write_text(self._remote_nginx.log())


class RemoteTargetRuntime(Runtime):
    """Nginx on ``url``'s host; the tools here, or on the ``generators`` hosts (harness/runtimes/generator.py)."""

    name = "host"

    def __init__(self, url: str, generators: list[str] | None = None):
        self.remote = parse_ssh_url(url)
        self._nginx = self._make_target(self.remote)
        self.target = Target(self.remote.address)
        self.generators = [self._make_generator(parse_ssh_url(g, "--generator-host")) for g in generators or []]
        self._adapters: list[ToolAdapter] = []
        self._rtt: list[dict] = []
        self._target_cores: int | None = None

    # What runs where; the Docker runtime's subclass (remote_docker.py) puts each in a container.
    def _make_target(self, ssh: SshHost) -> RemoteNginx:
        return RemoteNginx(ssh)

    def _make_generator(self, ssh: SshHost) -> GeneratorHost:
        return GeneratorHost(ssh)

    def _local_session(self, adapter: ToolAdapter | None) -> Session:
        """The tool on this machine."""
        return RemoteTargetSession(self.target, self.split, self._nginx, route_device(self.target.host),
                                   self._target_cores)

    @property
    def generator_count(self) -> int:
        return max(1, len(self.generators))

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        if self.generators:
            found = local_problems([], ("ssh",)) + [p for g in self.generators for p in g.problems(adapters)]
        else:
            found = local_problems(adapters, ("ip", "top", "ssh"))
        if found and any("'ssh'" in p for p in found):
            return found
        try:
            answer = self.remote.text(CHECK_SCRIPT, timeout=30)
        except HarnessError as exc:
            return [*found, f"{exc} (the harness needs key-based ssh there, no password prompt)"]
        if "nginx missing" in answer:
            found.append(f"nginx is not installed on {self.remote.url}: apt-get install nginx there")
        if "not root" in answer:
            found.append(f"{self.remote.url}: Nginx must bind port 80 there: log in as root (ssh://root@...)")
        return found

    def prepare(self, adapters: list[ToolAdapter]) -> dict[str, str]:
        self._adapters = adapters
        return {}

    def __enter__(self) -> "RemoteTargetRuntime":
        with undone_on_error(self):
            self._nginx.start()
            self.target.wait_ready()
            self._target_cores = int(self.remote.text("nproc").strip())
            self._generators = generators_up(self.generators, self._adapters)
            self._generators.__enter__()
            self._rtt = self._measure_rtt()
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            if getattr(self, "_generators", None) is not None:
                self._generators.__exit__(None, None, None)
                self._generators = None
            self._nginx.stop()

    def _measure_rtt(self) -> list[dict]:
        """From every generator (here, or each generator host) to the target."""
        args = [self.target.host, str(self.target.port), self.target.path, str(RTT_PROBES),
                "--expect-sha256", target_file_sha256()]
        if not self.generators:
            try:
                return [{"from": "this machine", **probe(self.target.host, self.target.port, self.target.path,
                                                         RTT_PROBES, expect_sha256=target_file_sha256())}]
            except TargetMismatch as exc:
                raise HarnessError(f"RTT probe to {self.target.url}: {exc}") from None
        found = []
        for session in self.sessions(None):
            result = session.run_python(PROBE, args)
            if result.returncode != 0:
                raise HarnessError(f"RTT probe from {session.generator.ssh.url} to {self.target.url} failed: "
                                   f"{(result.stderr.strip().splitlines() or ['no message'])[-1]}")
            found.append({"from": session.generator.ssh.url, **json.loads(result.stdout)})
        return found

    def sessions(self, adapter: ToolAdapter | None) -> list[Session]:
        """One session per generator; with several, their tools start together (a barrier)."""
        if not self.generators:
            return [self._local_session(adapter)]
        barrier = StartBarrier(len(self.generators), READY_TIMEOUT_S) if len(self.generators) > 1 else None
        # The first generator's session samples the target: one top there, not one per generator.
        return [g.session(adapter, self.target, self.split, barrier, self._nginx if i == 0 else None,
                          self._target_cores if i == 0 else None)
                for i, g in enumerate(self.generators)]

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        yield self.sessions(adapter)[0]

    def cpu_columns(self) -> tuple[str, str]:
        """Two machines: each side has all of its own machine's CPUs (no pool is shared)."""
        target = format_cpus(tuple(range(self._target_cores))) if self._target_cores else ""
        return target, format_cpus(self.split.available)

    def describe(self) -> dict:
        facts = host_facts(self.remote.text(FACTS_SCRIPT.format(address=shlex.quote(self.remote.address))))
        described = {"target": f"nginx on {self.remote.url}, bound to {self.remote.address}:80, started over ssh",
                     "nginx_version": facts["nginx_version"],
                     "target_host": {"url": self.remote.url, "address": self.remote.address, **facts}}
        if not self.generators:
            device = route_device(self.remote.address)
            return {**described, "generator_nic": device, "generator_nic_speed_mbps": nic_speed_mbps(device)}
        return {**described, "generator_hosts": [
            {"url": g.ssh.url, "address": g.ssh.address,
             **host_facts(g.ssh.text(FACTS_SCRIPT.format(address=shlex.quote(g.ssh.address)))), "nginx_version": None}
            for g in self.generators]}

    def started_facts(self) -> dict:
        """The RTT between the hosts: HTTP keep-alive GETs of the target file (harness/rtt_probe.py)
        from each generator to the other host's Nginx, before any run."""
        method = {"method": "harness/rtt_probe.py: keep-alive GETs from the generator"}
        if len(self._rtt) == 1:
            return {"rtt_between_hosts": {**self._rtt[0], **method}}
        return {"rtt_between_hosts": [{**r, **method} for r in self._rtt]}

    # netem would have to change a real NIC's root qdisc on a machine the harness does not own (and
    # a killed run would leave the delay there); Toxiproxy beside the tool changes nothing outside it.
    netem_refused = ("with --target-host the RTT is shaped on the generator side by Toxiproxy (on that machine's "
                     "loopback); netem would change a real NIC's queueing discipline there: use --shaper toxiproxy or auto")

    def unsupported_reason(self, scenario: Scenario) -> str | None:
        if reason := super().unsupported_reason(scenario):
            return reason
        parts = len(self.generators)
        if parts > 1 and (scenario.vus < parts or (scenario.rate_rps or parts) < parts):
            return (f"{parts} generator hosts need at least one VU{' and 1 request/s' if scenario.rate_rps else ''} "
                    f"each: the scenario has {scenario.vus} VUs" + (f", {scenario.rate_rps} requests/s" if scenario.rate_rps else ""))
        return None
