"""Where tools and target run: ``host`` (bare metal + a network namespace) or ``docker``."""
from pathlib import Path

from harness.errors import HarnessError
from harness.runtimes.base import Runtime, Session

RUNTIMES = ("docker", "host")


def make_runtime(name: str, results_dir: Path) -> Runtime:
    if name == "host":
        from harness.runtimes.host import HostRuntime
        return HostRuntime()
    if name == "docker":
        from harness.runtimes.docker import DockerRuntime
        return DockerRuntime(results_dir)
    raise HarnessError(f"unknown runtime {name!r}; allowed: {', '.join(RUNTIMES)}")


__all__ = ["RUNTIMES", "Runtime", "Session", "make_runtime"]
