"""Where tools and target run: ``host`` (bare metal + a network namespace), ``docker``, or ``swarm``
(services of a Docker swarm, harness/runtimes/swarm.py)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.runtimes.base import Runtime, Session

if TYPE_CHECKING:
    from harness.runtimes.swarm_options import SwarmOptions

RUNTIMES = ("docker", "host", "swarm")


GENERATORS_NEED_A_TARGET_HOST = ("--generator-host needs --target-host: a target on this machine is in a namespace "
                                 "the other host cannot reach; name the machine Nginx should run on (it may be this "
                                 "one's address)")


def make_runtime(name: str, results_dir: Path, target_host: str | None = None,
                 generator_hosts: tuple[str, ...] = (), swarm: "SwarmOptions | None" = None) -> Runtime:
    if generator_hosts and not target_host:
        raise HarnessError(GENERATORS_NEED_A_TARGET_HOST)
    if target_host and name == "host":
        from harness.runtimes.remote import RemoteTargetRuntime
        return RemoteTargetRuntime(target_host, list(generator_hosts))
    if target_host and name == "docker":
        from harness.runtimes.remote_docker import RemoteDockerRuntime
        return RemoteDockerRuntime(target_host, list(generator_hosts), results_dir)
    if name == "swarm":
        from harness.runtimes.swarm import SwarmRuntime
        from harness.runtimes.swarm_options import SwarmOptions
        return SwarmRuntime(swarm or SwarmOptions(), results_dir)
    if name == "host":
        from harness.runtimes.host import HostRuntime
        return HostRuntime()
    if name == "docker":
        from harness.runtimes.docker import DockerRuntime
        return DockerRuntime(results_dir)
    raise HarnessError(f"unknown runtime {name!r}; allowed: {', '.join(RUNTIMES)}")


__all__ = ["RUNTIMES", "Runtime", "Session", "make_runtime"]
