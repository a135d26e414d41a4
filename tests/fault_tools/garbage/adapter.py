"""Test-only tool: exits 0 but prints output its parser cannot read."""
import json

from harness.tools import Metrics, RunSpec, ToolAdapter, ToolOutput


class Garbage(ToolAdapter):
    name = "fault-garbage"
    version_command = ["sh", "-c", "echo 1.0.0"]
    concurrency_model = "none (fault injection)"
    timing_resolution_ms = 0.001

    def command(self, spec: RunSpec) -> list[str]:
        return ["sh", "-c", "head -c 300 /dev/urandom | base64"]

    def parse(self, output: ToolOutput) -> Metrics:
        return Metrics(requests=json.loads(output.stdout)["requests"])
