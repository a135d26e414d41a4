"""Discovering the targets: ``targets/<id>/target.toml`` (and LTH_EXTRA_TARGETS' folders), each a TargetAdapter."""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness import TARGETS_DIR
from harness.errors import HarnessError

FILE_SERVER = "nginx"


@dataclass(frozen=True)
class TargetAdapter:
    id: str
    folder: Path
    description: str
    role: str                        # "server": serves the file itself; "proxy": in front of the file server
    packages: tuple[str, ...]        # Debian packages: `make deps` installs them, the Dockerfile too
    version_command: tuple[str, ...]
    config: str | None = None        # a proxy's configuration file, rendered from <config>.j2
    command: tuple[str, ...] = ()    # a proxy's argv; {prefix} and {config} are filled in
    protocols: tuple[str, ...] = ("http/1.1",)   # what the tools may speak to it: h2, h2c (issue 38)
    flows: tuple[str, ...] = ()      # the flows whose API it serves (issue 37, harness/flows.py)

    @property
    def is_proxy(self) -> bool:
        return self.role == "proxy"

    @property
    def image(self) -> str:
        """Its Docker image; the file server keeps the name it always had (remote Docker hosts use it)."""
        return "lth-target:latest" if self.id == FILE_SERVER else f"lth-target-{self.id}:latest"


def load(folder: Path) -> TargetAdapter:
    manifest = tomllib.loads((folder / "target.toml").read_text())
    try:
        adapter = TargetAdapter(id=folder.name, folder=folder, description=manifest["description"],
                                role=manifest["role"], packages=tuple(manifest["packages"]),
                                version_command=tuple(manifest["version_command"]),
                                config=manifest.get("config"), command=tuple(manifest.get("command", ())),
                                protocols=("http/1.1", *manifest.get("protocols", ())),
                                flows=tuple(manifest.get("flows", ())))
    except KeyError as exc:
        raise HarnessError(f"{folder}/target.toml: missing key {exc} (see targets/README.md)") from None
    if adapter.role not in ("server", "proxy") or (adapter.is_proxy and not (adapter.config and adapter.command)):
        raise HarnessError(f"{folder}/target.toml: role must be server or proxy, and a proxy needs config and command")
    return adapter


def discover() -> dict[str, TargetAdapter]:
    """targets/ plus any folders in LTH_EXTRA_TARGETS (colon-separated; the test suite's broken proxy)."""
    folders = [TARGETS_DIR, *(Path(p) for p in os.environ.get("LTH_EXTRA_TARGETS", "").split(":") if p)]
    return {manifest.parent.name: load(manifest.parent) for folder in folders
            for manifest in sorted(folder.glob("*/target.toml"))}


def get(target_id: str) -> TargetAdapter:
    available = discover()
    if target_id not in available:
        raise HarnessError(f"unknown target {target_id!r}; available: {', '.join(available)} "
                           "(a folder in targets/, see targets/README.md)")
    return available[target_id]

