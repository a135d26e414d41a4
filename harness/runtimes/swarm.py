"""Docker Swarm (``--runtime swarm --generators N [--swarm-init]``): the target and the generators as
services of the swarm this engine manages, on an overlay network of their own.

    node labelled lth.target=true       the target: a service of lth-target (one task), on the overlay
    nodes labelled lth.generator=true   each run: a replicated job of N tasks of the tool's image (task.py)
    this machine (a manager)            the harness: builds the images, runs each run's coordinator

- Addresses: every network the harness makes is in 198.18.0.0/15 (the overlay: a /24 of 198.18.192.0/20;
  a swarm it initialises: ``--default-addr-pool 198.18.128.0/18``, its ingress included, and a
  docker_gwbridge in 198.18.208.0/20 made before it when there is none). A swarm found with networks
  outside the range is refused.
- The load goes over the overlay to the target task's own address (no VIP, ``--endpoint-mode dnsrr``);
  the harness's own requests (stub_status before and after, the TechEmpower check, the RTT probe) reach
  the target's port published in host mode on its node.
- Each task reaches the run's coordinator on the manager's node address (with a swarm advertised on
  loopback: the docker_gwbridge gateway, this machine as every container on it sees it).
- At the end the state is as found: the services and the network removed; a swarm the harness made is
  left (``docker swarm leave --force``) and a docker_gwbridge it made removed.
- Images: built here as for the Docker runtime; a node other than this one needs them loaded
  (``docker save | docker load``: no registry is used, ``--no-resolve-image``).
"""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from harness import PREFIX
from harness.errors import HarnessError
from harness.processes import signals_deferred
from harness.runtimes.base import Runtime, Session, run, undone_on_error
from harness.runtimes.docker import TARGET_IMAGE, DockerRuntime, docker_available, tool_image
from harness.runtimes.swarm_options import SwarmOptions
from harness.runtimes.task import AGENT, Coordinator, TaskRun, TaskSession
from harness.scenarios import Scenario
from harness.targets.file_server import Target
from harness.tools.adapter import ToolAdapter

BENCH_RANGE = ipaddress.ip_network("198.18.0.0/15")
ADDR_POOL, POOL_MASK = "198.18.128.0/18", 24
OVERLAYS, GWBRIDGES = ipaddress.ip_network("198.18.192.0/20"), ipaddress.ip_network("198.18.208.0/20")
TARGET_LABEL, GENERATOR_LABEL = "lth.target", "lth.generator"
MADE_LABEL = "lth.swarm-made"      # on the node of a swarm the harness initialised: clean-state leaves it
LABEL = f"{PREFIX}-swarm"          # on every service and network the harness makes in a swarm
GWBRIDGE = "docker_gwbridge"
UP_TIMEOUT_S = 120.0
GONE_TIMEOUT_S = 60.0


def docker(*args: str, timeout: float = 120) -> str:
    """``docker ARGS`` here; a failure is one HarnessError line (docker's own error)."""
    result = run(["docker", *args], check=False, timeout=timeout)
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()] or ["no message"]
        raise HarnessError(f"docker {args[0]} {args[1] if len(args) > 1 else ''}".rstrip() + f" failed: {lines[-1]}")
    return result.stdout.strip()


@dataclass(frozen=True)
class SwarmFacts:
    state: str            # docker info's LocalNodeState: inactive, active, pending, error, locked
    manager: bool
    node_id: str
    node_addr: str


def swarm_facts() -> SwarmFacts | None:
    """This engine's swarm membership (None: no engine answers)."""
    if docker_available() is None:
        return None
    answer = run(["docker", "info", "--format", "{{json .Swarm}}"], check=False, timeout=30)
    found = json.loads(answer.stdout or "{}")
    return SwarmFacts(found.get("LocalNodeState", "error"), bool(found.get("ControlAvailable")),
                      found.get("NodeID", ""), found.get("NodeAddr", ""))


def labelled_nodes(label: str) -> list[str]:
    """The ready nodes whose label ``label`` is "true"."""
    found = []
    for node in docker("node", "ls", "-q").split():
        spec = json.loads(docker("node", "inspect", "--format", "{{json .}}", node))
        if spec["Spec"].get("Labels", {}).get(label) == "true" and spec["Status"]["State"] == "ready":
            found.append(spec["Description"]["Hostname"])
    return found


def network_subnets() -> list[ipaddress.IPv4Network]:
    """Every subnet of every network this engine knows (swarm-scoped ones included, on a manager)."""
    ids = docker("network", "ls", "-q").split()
    if not ids:
        return []
    answer = docker("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", *ids)
    return [ipaddress.ip_network(s, strict=False) for s in answer.split() if ":" not in s]


def free_subnet(within: ipaddress.IPv4Network) -> str:
    """A /24 of ``within`` that no network here overlaps."""
    taken = network_subnets()
    for candidate in within.subnets(new_prefix=24):
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate)
    raise HarnessError(f"no free /24 left in {within} for the swarm's network: remove unused networks")


def outside_range(name: str) -> list[str]:
    """The subnets of network ``name`` outside 198.18.0.0/15 (empty: none, or no such network)."""
    answer = run(["docker", "network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", name],
                 check=False).stdout.split()
    return [s for s in answer if ":" not in s and not ipaddress.ip_network(s, strict=False).subnet_of(BENCH_RANGE)]


def swarm_problems(options: SwarmOptions) -> list[str]:
    """Why the swarm runtime cannot start here (empty: it can), each with its fix; nothing is changed."""
    facts = swarm_facts()
    if facts is None:
        return ["no Docker engine answers: start dockerd (`make deps`)"]
    if facts.state == "inactive":
        return [] if options.init else [
            "this Docker engine is in no swarm: pass --swarm-init (a single-node swarm for the suite, left "
            "afterwards) or join one (docker swarm join)"]
    if facts.state != "active":
        return [f"the swarm is not reachable from this engine (its state: {facts.state}): check the managers "
                "(docker info) or leave it (docker swarm leave)"]
    if not facts.manager:
        return ["this engine is a swarm worker: run the harness on a manager (services are created there)"]
    problems = [f"the swarm's {name} network uses {', '.join(bad)}, outside 198.18.0.0/15: remake the swarm with "
                f"--default-addr-pool {ADDR_POOL}" for name in ("ingress", GWBRIDGE) if (bad := outside_range(name))]
    for label, role in ((TARGET_LABEL, "the target"), (GENERATOR_LABEL, "the generators")):
        if not labelled_nodes(label):
            problems.append(f"no ready swarm node has the label {label}=true for {role}: "
                            f"docker node update --label-add {label}=true NODE")
    return problems


@dataclass
class SwarmState:
    """What the harness changed to have a swarm, to undo at the end."""
    initialised: bool = False
    gwbridge_made: bool = False

    def restore(self) -> None:
        if self.initialised:
            run(["docker", "swarm", "leave", "--force"], check=False, timeout=120)
        if self.gwbridge_made:
            for _ in range(20):    # its endpoints go with the swarm, a moment after the leave
                if run(["docker", "network", "rm", GWBRIDGE], check=False).returncode == 0:
                    break
                time.sleep(0.5)


def join_or_init(options: SwarmOptions) -> SwarmState:
    """The swarm to use: this engine's, or (--swarm-init and none) a single-node one on loopback whose
    every network is in 198.18.0.0/15, the node labelled for the target and the generators."""
    facts = swarm_facts()
    state = SwarmState()
    if facts is None or facts.state != "inactive":
        return state
    if run(["docker", "network", "inspect", GWBRIDGE], check=False).returncode != 0:
        subnet = ipaddress.ip_network(free_subnet(GWBRIDGES))
        docker("network", "create", "--subnet", str(subnet), "--gateway", str(next(subnet.hosts())), "--label", LABEL,
               "--opt", f"com.docker.network.bridge.name={GWBRIDGE}",
               "--opt", "com.docker.network.bridge.enable_icc=false",
               "--opt", "com.docker.network.bridge.enable_ip_masquerade=true", GWBRIDGE)
        state.gwbridge_made = True
    try:
        docker("swarm", "init", "--advertise-addr", "127.0.0.1", "--default-addr-pool", ADDR_POOL,
               "--default-addr-pool-mask-length", str(POOL_MASK))
        state.initialised = True
        node = swarm_facts().node_id
        docker("node", "update", "--label-add", f"{TARGET_LABEL}=true", "--label-add", f"{GENERATOR_LABEL}=true",
               "--label-add", f"{MADE_LABEL}=true", node)
    except BaseException:
        state.restore()
        raise
    return state


def coordinator_address() -> str:
    """Where every task reaches this machine: its node address, or on a loopback-advertised swarm the
    docker_gwbridge gateway (this machine, from any container of the node)."""
    address = swarm_facts().node_addr
    if address and not ipaddress.ip_address(address).is_loopback:
        return address
    config = json.loads(docker("network", "inspect", "--format", "{{json .IPAM.Config}}", GWBRIDGE))[0]
    # a gateway docker chose itself is not in the network's record: the subnet's first address
    return config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"], strict=False).hosts()))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def service_tasks(service: str) -> list[dict]:
    ids = docker("service", "ps", "-q", "--no-trunc", service).split()
    return [json.loads(docker("inspect", "--format", "{{json .}}", i)) for i in ids] if ids else []


def wait_gone(service: str) -> None:
    """``docker service rm``, then its containers on this node removed: Docker 20.10 leaves a replicated job's
    running tasks running after their service is removed (a task of ``sleep 1000`` was still up 44 s later),
    and a finished job's containers stay until removed."""
    run(["docker", "service", "rm", service], check=False, timeout=60)
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while containers := run(["docker", "ps", "-aq", "--filter", f"label=com.docker.swarm.service.name={service}"],
                            check=False).stdout.split():
        if time.monotonic() > deadline:
            return
        run(["docker", "rm", "-f", *containers], check=False, timeout=60)
        time.sleep(0.3)    # a task the swarm was still starting shows up a moment later


def clean_swarm() -> list[str]:
    """What a killed harness left in this engine's swarm (clean-state): its services, and a swarm it made
    (the node labelled lth.swarm-made) left with its docker_gwbridge. Its networks go with clean-state's sweep."""
    facts = swarm_facts()
    if facts is None or facts.state != "active" or not facts.manager:
        return []
    removed = []
    for service in run(["docker", "service", "ls", "--format", "{{.Name}}", "--filter", f"label={LABEL}"],
                       check=False).stdout.split():
        wait_gone(service)
        removed.append(f"swarm service {service}")
    labels = run(["docker", "node", "inspect", "--format", "{{json .Spec.Labels}}", facts.node_id], check=False).stdout
    if json.loads(labels or "{}").get(MADE_LABEL) == "true":
        made_bridge = LABEL in run(["docker", "network", "inspect", "--format", "{{json .Labels}}", GWBRIDGE],
                                   check=False).stdout
        for network in run(["docker", "network", "ls", "-q", "--filter", f"label={LABEL}"], check=False).stdout.split():
            run(["docker", "network", "rm", network], check=False)
        SwarmState(initialised=True, gwbridge_made=made_bridge).restore()
        removed.append("the single-node swarm the harness made (docker swarm leave --force)")
    return removed


@dataclass(frozen=True)
class TargetService:
    name: str
    overlay_ip: str       # where the load goes
    node_addr: str        # where the harness reaches the published port
    port: int


class SwarmRuntime(Runtime):
    """The target as a service, each run's generators as a replicated job of N tasks (task.py)."""

    name = "swarm"

    def __init__(self, options: SwarmOptions, results_dir: Path | None = None):
        self.options = options
        self.generator_count = options.generators
        self._builder = DockerRuntime(results_dir)     # the images, built here as on one machine
        self._token = os.urandom(4).hex()
        self._network = f"{LABEL}-{self._token}"
        self._swarm: SwarmState | None = None
        self._target: TargetService | None = None
        self._network_made = False
        self._cpus = 1

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        return self._builder.problems(adapters) or swarm_problems(self.options)

    def prepare(self, adapters: list[ToolAdapter]) -> dict[str, str]:
        return self._builder.prepare(adapters)

    def __enter__(self) -> "SwarmRuntime":
        with undone_on_error(self):
            self._swarm = join_or_init(self.options)
            docker("network", "create", "--driver", "overlay", "--attachable", "--subnet", free_subnet(OVERLAYS),
                   "--label", LABEL, "--label", f"{PREFIX}=swarm", self._network)
            self._network_made = True
            self._target = self._start_target()
            self._cpus = self._generator_cpus()
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            for service in run(["docker", "service", "ls", "--format", "{{.Name}}", "--filter", f"label={LABEL}={self._token}"],
                               check=False).stdout.split():
                wait_gone(service)
            if self._network_made:
                self._remove_network()
            if self._swarm is not None:
                self._swarm.restore()
                self._swarm = None

    def _remove_network(self) -> None:
        deadline = time.monotonic() + GONE_TIMEOUT_S
        while run(["docker", "network", "rm", self._network], check=False).returncode != 0:
            if time.monotonic() > deadline:
                print(f"warning: docker network {self._network} could not be removed", flush=True)
                return
            time.sleep(0.5)
        self._network_made = False

    def _start_target(self) -> TargetService:
        name, port = f"{PREFIX}-target-{self._token}", free_port()
        docker("service", "create", "--detach", "--name", name, "--label", f"{LABEL}={self._token}",
               "--container-label", f"{PREFIX}=swarm-target",
               "--constraint", f"node.labels.{TARGET_LABEL}==true", "--network", self._network,
               "--endpoint-mode", "dnsrr", "--publish", f"mode=host,target=80,published={port}",
               "--no-resolve-image", "--restart-condition", "none", "--init", TARGET_IMAGE)
        task = self._running_task(name)
        overlay = next(a["Addresses"][0].split("/")[0] for a in task["NetworksAttachments"]
                       if a["Network"]["Spec"]["Name"] == self._network)
        node = json.loads(docker("node", "inspect", "--format", "{{json .Status}}", task["NodeID"]))["Addr"]
        service = TargetService(name, overlay, node, port)
        self._checks(service).wait_ready(60)
        return service

    @staticmethod
    def _running_task(service: str) -> dict:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while time.monotonic() < deadline:
            for task in service_tasks(service):
                if task["Status"]["State"] == "running":
                    return task
                if task["Status"]["State"] in ("failed", "rejected", "shutdown"):
                    raise HarnessError(f"swarm: {service} did not start: {task['Status'].get('Err') or task['Status']['State']}")
            time.sleep(0.3)
        raise HarnessError(f"swarm: {service} was not running within {UP_TIMEOUT_S:.0f} s (docker service ps {service})")

    def _checks(self, service: TargetService) -> Target:
        return Target(service.node_addr, service.port, status_port=service.port)

    def _generator_cpus(self) -> int:
        """The fewest CPUs of a generator node (each task may use every CPU of its node)."""
        cpus = []
        for node in docker("node", "ls", "-q").split():
            spec = json.loads(docker("node", "inspect", "--format", "{{json .}}", node))
            if spec["Spec"].get("Labels", {}).get(GENERATOR_LABEL) == "true":
                cpus.append(spec["Description"]["Resources"]["NanoCPUs"] // 10**9)
        return max(1, min(cpus or [1]))

    @property
    def target(self) -> Target:
        """The load's target: the target task's overlay address; stub_status through the published port."""
        t = self._target
        return Target(t.overlay_ip, 80, status_host=t.node_addr, status_port=t.port)

    @contextmanager
    def parts(self, adapter: ToolAdapter) -> Iterator[list[Session]]:
        """The run's N task sessions; the job is created when all N have their command (TaskRun)."""
        job = f"{PREFIX}-generators-{self._token}-{os.urandom(3).hex()}"
        task_run = TaskRun(self.options.generators, adapter, coordinator_address(),
                           lambda coordinator: self._launch(job, tool_image(adapter), coordinator))
        checks = self._checks(self._target)
        try:
            yield [TaskSession(task_run, i, self.target, checks, self._cpus,
                               f"swarm task {i + 1} of {self.options.generators} (replicated job of "
                               f"{tool_image(adapter)}, nodes labelled {GENERATOR_LABEL}=true)", self._version)
                   for i in range(self.options.generators)]
        finally:
            with signals_deferred():
                task_run.close()
                wait_gone(job)

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        with self.parts(adapter) as sessions:
            yield sessions[0]

    def _launch(self, job: str, image: str, coordinator: Coordinator) -> None:
        """The run's replicated job: N tasks of the tool's image, each running task_agent.pl."""
        parts = str(self.options.generators)
        docker("service", "create", "--detach", "--name", job, "--label", f"{LABEL}={self._token}",
               "--container-label", f"{PREFIX}=swarm-generator",
               "--mode", "replicated-job", "--replicas", parts, "--max-concurrent", parts,
               "--restart-condition", "none", "--no-resolve-image", "--network", self._network, "--init",
               "--constraint", f"node.labels.{GENERATOR_LABEL}==true",
               "--env", f"LTH_COORDINATOR={coordinator.address}", "--env", f"LTH_TOKEN={coordinator.token}",
               "--env", "LTH_TASK={{.Task.ID}}", "--env", "LTH_NODE={{.Node.Hostname}}",
               "--entrypoint", "perl", image, "-e", AGENT.read_text())

    def _version(self, adapter: ToolAdapter) -> str:
        result = run(["docker", "run", "--rm", "--network", "none", tool_image(adapter), *adapter.version_command],
                     check=False, timeout=120)
        return adapter.parse_version(result.stdout + result.stderr)

    def cpu_columns(self) -> tuple[str, str]:
        return "", ""

    def unsupported_reason(self, scenario: Scenario) -> str | None:
        if reason := super().unsupported_reason(scenario):
            return reason
        if scenario.needs_shaping:
            return "the swarm runtime shapes no RTT yet (the load crosses the overlay as it is): use rtt_ms 0.1"
        if scenario.stall_ms:
            return "the swarm runtime has no stall test yet (the target's node is not reached by the harness)"
        return None

    def describe(self) -> dict:
        facts = swarm_facts()
        return {"target": f"nginx service of {TARGET_IMAGE} on a node labelled {TARGET_LABEL}=true, on an overlay "
                          "network in 198.18.192.0/20 (loaded at its task's address; stub_status through a port "
                          "published in host mode)",
                "tools": f"a replicated job of {self.options.generators} task(s) of the tool's image per run, on "
                         f"nodes labelled {GENERATOR_LABEL}=true, started together by the harness's coordinator",
                "docker_version": docker_available(), "swarm_state_found": facts.state if facts else None,
                "swarm_init": self.options.init, "generators": self.options.generators}

    def started_facts(self) -> dict:
        subnets = {name: run(["docker", "network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}",
                              name], check=False).stdout.split() for name in ("ingress", GWBRIDGE, self._network)}
        return {"swarm": {"network": self._network, "target_service": self._target.name if self._target else None,
                          "swarm_initialised_by_harness": bool(self._swarm and self._swarm.initialised),
                          "gwbridge_made_by_harness": bool(self._swarm and self._swarm.gwbridge_made),
                          "subnets": subnets}}
