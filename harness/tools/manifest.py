"""tools/<id>/tool.toml, the manifest each tool's install.sh, adapter and Docker image read
(keys: tools/README.md)."""
from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from harness.errors import HarnessError


@cache
def read_manifest(folder: Path) -> dict[str, str]:
    """tools/<id>/tool.toml: the tool's pinned version, install kind and paths (keys: tools/README.md),
    which its install.sh reads too; empty for a folder without one."""
    path = folder / "tool.toml"
    return tomllib.loads(path.read_text()) if path.is_file() else {}


def installed_path(folder: Path, manifest: dict[str, str]) -> str:
    """What a build stage installed, to copy into the image: the manifest's `installed`, else its `home`,
    else the folder of its `binary` (the Go tools' /opt/lth/bin: the binary and what install.sh put beside it)."""
    path = manifest.get("installed") or manifest.get("home") or str(Path(manifest.get("binary", "")).parent)
    if not Path(path).is_absolute():
        raise HarnessError(f"{folder}/tool.toml: set `installed`, the absolute path its build stage installs")
    return path
