"""What an adapter receives and returns: the run it is asked for (RunSpec), the tool's output (ToolOutput),
its latencies as a histogram for merging (LatencyHistogram), and the error when that output cannot be read."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.flows import FLOWS, Flow
from harness.store.hdr import LatencyHistogram   # an adapter hands it over; the store keeps it


@dataclass(frozen=True)
class RunSpec:
    url: str          # full URL of the target file, e.g. http://198.18.0.2:80/style.css
    vus: int          # virtual users = concurrent connections held for the whole run
    duration_s: int
    out_dir: Path     # the run's folder; the same absolute path inside a container
    cpus: int         # cores the generator may use
    rate_rps: int | None = None  # open model: send at this arrival rate, vus capping connections (issue 13)
    per_request: bool = False    # one of several generators: keep what latency_histogram() needs
    keepalive: bool = True       # False: a new TCP connection for every request (issue 23)
    protocol: str = "http/1.1"   # issue 38: "h2" (over TLS, ALPN) or "h2c" (cleartext, prior knowledge)
    streams: int = 1             # HTTP/2: requests in flight per connection (vus / streams connections)
    flow: Flow | None = None     # issue 37: each VU runs this flow (log in, GET the API with the token), not GET url
    relogin_every: int | None = None   # the flow: log in again after this many GETs (None: once per VU)

    def to_record(self) -> dict:
        """The spec as the part's record keeps it (harness/store/record.py PartRecord.spec): the flow by its
        name, without out_dir (the folder moves with the results; from_record is given where it is now)."""
        fields = {**asdict(self), "flow": self.flow.name if self.flow else None}
        del fields["out_dir"]
        return fields

    @classmethod
    def from_record(cls, stored: dict, out_dir: Path) -> "RunSpec":
        """The spec to_record stored, the tool's files in ``out_dir``."""
        return cls(**{**stored, "out_dir": out_dir, "flow": FLOWS.get(stored.get("flow") or "")})

    @property
    def http2(self) -> bool:
        return self.protocol in ("h2", "h2c")

    @property
    def connections(self) -> int:
        """The connections asked for: vus over HTTP/1.1, vus / streams over HTTP/2 (at least one)."""
        return max(1, self.vus // self.streams)

    @property
    def base_url(self) -> str:
        """scheme://host:port of the url: where a flow's paths (harness/flows.py) go."""
        scheme, rest = self.url.split("://", 1)
        return f"{scheme}://{rest.split('/', 1)[0]}"

    @property
    def tls(self) -> bool:
        """An https:// URL: TLS to a throw-away self-signed certificate, which the tool must not verify."""
        return self.url.startswith("https://")


@dataclass(frozen=True)
class ToolOutput:
    spec: RunSpec
    stdout: str
    stderr: str
    exit_code: int
    launched_at: float = 0.0          # epoch seconds when the tool's process was started

    def file(self, name: str) -> Path:
        return self.spec.out_dir / name

    def json(self, name: str, missing: str) -> Any:
        """The tool's JSON file ``name``, parsed; a ParseError saying ``missing`` when there is none, or that
        it is not JSON."""
        path = self.file(name)
        if not path.is_file():
            raise ParseError(missing)
        try:
            return json.loads(path.read_bytes())
        except (ValueError, RecursionError) as exc:   # not JSON, not UTF-8 (a tool killed mid-write), nested too deep
            raise ParseError(f"{name} is not JSON: {type(exc).__name__}: {str(exc)[:200]}") from None


class ParseError(Exception):
    """The tool's output could not be turned into metrics."""
