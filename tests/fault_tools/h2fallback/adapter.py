"""Test-only tool: h2load that claims HTTP/2 over TLS but is always told --h1, so ALPN settles on HTTP/1.1 and
the run is HTTP/1.1 on the wire: the silent fallback the file server's log must catch (issue 38)."""
from dataclasses import replace

from harness import REPO_ROOT
from harness.tools import RunSpec
from harness.tools.manifest import read_manifest
from tools.h2load.adapter import H2load


class H2Fallback(H2load):
    name = "fault-h2-fallback"
    h2 = True
    h2c = "fault injection: h2 only"

    @property
    def manifest(self) -> dict[str, str]:
        return read_manifest(REPO_ROOT / "tools" / "h2load")

    def command(self, spec: RunSpec) -> list[str]:
        return super().command(replace(spec, protocol="http/1.1"))
