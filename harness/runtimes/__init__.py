"""Where tools and target run: ``host`` (bare metal + a network namespace) or ``docker``."""
from pathlib import Path

from harness.errors import HarnessError
from harness.runtimes.base import Runtime, Session

RUNTIMES = ("docker", "host")


def make_runtime(name: str, results_dir: Path, target_host: str | None = None) -> Runtime:
    if target_host:
        if name != "host":
            raise HarnessError(f"--target-host is not supported with --runtime {name} yet: use --runtime host "
                               "(Nginx is started there over ssh), or leave --target-host unset")
        from harness.runtimes.remote import RemoteTargetRuntime
        return RemoteTargetRuntime(target_host)
    if name == "host":
        from harness.runtimes.host import HostRuntime
        return HostRuntime()
    if name == "docker":
        from harness.runtimes.docker import DockerRuntime
        return DockerRuntime(results_dir)
    raise HarnessError(f"unknown runtime {name!r}; allowed: {', '.join(RUNTIMES)}")


__all__ = ["RUNTIMES", "Runtime", "Session", "make_runtime"]
