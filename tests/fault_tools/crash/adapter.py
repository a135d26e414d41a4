"""Test-only tool: starts, prints a little, then dies of SIGSEGV-like crash (exit 139)."""
from harness.tools import Metrics, RunSpec, ToolAdapter, ToolOutput


class Crash(ToolAdapter):
    name = "fault-crash"
    version_command = ["sh", "-c", "echo 1.0.0"]
    concurrency_model = "none (fault injection)"
    timing_resolution_ms = 0.001

    def command(self, spec: RunSpec) -> list[str]:
        return ["sh", "-c", "echo starting; echo 'Segmentation fault' >&2; kill -SEGV $$"]

    def parse(self, output: ToolOutput) -> Metrics:
        return Metrics(requests=1, rps=1.0)
