"""Where tools and target run: ``host`` (bare metal + a network namespace) or ``docker``."""
from pathlib import Path

from harness.errors import HarnessError
from harness.runtimes.base import Runtime, Session

RUNTIMES = ("docker", "host")


GENERATORS_NEED_A_TARGET_HOST = ("--generator-host needs --target-host: a target on this machine is in a namespace "
                                 "the other host cannot reach; name the machine Nginx should run on (it may be this "
                                 "one's address)")


def make_runtime(name: str, results_dir: Path, target_host: str | None = None,
                 generator_hosts: tuple[str, ...] = ()) -> Runtime:
    if generator_hosts and not target_host:
        raise HarnessError(GENERATORS_NEED_A_TARGET_HOST)
    if target_host and name == "host":
        from harness.runtimes.remote import RemoteTargetRuntime
        return RemoteTargetRuntime(target_host, list(generator_hosts))
    if target_host and name == "docker":
        from harness.runtimes.remote_docker import RemoteDockerRuntime
        return RemoteDockerRuntime(target_host, list(generator_hosts), results_dir)
    if name == "host":
        from harness.runtimes.host import HostRuntime
        return HostRuntime()
    if name == "docker":
        from harness.runtimes.docker import DockerRuntime
        return DockerRuntime(results_dir)
    raise HarnessError(f"unknown runtime {name!r}; allowed: {', '.join(RUNTIMES)}")


__all__ = ["RUNTIMES", "Runtime", "Session", "make_runtime"]
