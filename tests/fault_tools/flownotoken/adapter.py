"""Test-only tool: wrk running the login flow with the token put in a header the API does not read, so every GET
goes out without its token: the broken script the API's counts must catch (issue 37)."""
from dataclasses import replace

from harness import REPO_ROOT
from harness.tools import RunSpec
from harness.tools.manifest import read_manifest
from tools.wrk.adapter import Wrk


class FlowNoToken(Wrk):
    name = "fault-flow-no-token"

    @property
    def manifest(self) -> dict[str, str]:
        return read_manifest(REPO_ROOT / "tools" / "wrk")

    def command(self, spec: RunSpec) -> list[str]:
        if spec.flow is None:
            return super().command(spec)
        return super().command(replace(spec, flow=replace(spec.flow, token_header="X-Lth-Not-The-Token")))
