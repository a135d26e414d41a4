"""What one scenario asks of the target stack (Setup), and the HTTP versions its server checks."""
from __future__ import annotations

from dataclasses import dataclass

from harness.targets.discovery import FILE_SERVER, get

# The scenario protocols the server checks run by run, and the HTTP version it must see for each.
SERVED_AS = {"h2": "HTTP/2.0", "h2c": "HTTP/2.0", "h3": "HTTP/3.0"}


@dataclass(frozen=True)
class Setup:
    """What one scenario asks of the target; runs with the same setup share one started stack."""
    target: str = FILE_SERVER
    tls: bool = False
    delay_ms: tuple[float, float] | None = None
    protocol: str = "http/1.1"

    @classmethod
    def of(cls, scenario) -> "Setup":
        return cls(scenario.target, scenario.tls, scenario.delay_range_ms, scenario.protocol)

    @property
    def checked(self) -> bool:
        """A protocol the server checks (HTTP/2 or HTTP/3): its stack logs the requests in another version."""
        return self.protocol in SERVED_AS

    @property
    def is_default(self) -> bool:
        return self == Setup()

    def describe(self) -> str:
        parts = [f"{self.target} -> {FILE_SERVER}" if get(self.target).is_proxy else self.target]
        if self.tls:
            parts.append("TLS")
        if self.checked:
            parts.append(f"{SERVED_AS[self.protocol][:-2]} ({self.protocol})")
        if self.delay_ms:
            low, high = self.delay_ms
            parts.append(f"backend delay {low:g} ms" if low == high else f"backend delay {low:g}..{high:g} ms uniform")
        return ", ".join(parts)

