"""Test-only tool: ignores its duration and SIGTERM, so only the harness's deadline ends it."""
from harness.tools import Metrics, RunSpec, ToolAdapter, ToolOutput


class Hang(ToolAdapter):
    name = "fault-hang"
    version_command = ["sh", "-c", "echo 1.0.0"]
    concurrency_model = "none (fault injection)"
    timing_resolution_ms = 0.001

    def command(self, spec: RunSpec) -> list[str]:
        return ["sh", "-c", "trap '' TERM; sleep 3600 & wait; sleep 3600"]

    def parse(self, output: ToolOutput) -> Metrics:
        return Metrics(requests=1, rps=1.0)
