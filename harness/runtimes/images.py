"""How the generator image of a tool is built: its own Dockerfile, or its install kind's shared one under
tools/_docker with build args from its manifest (the Docker runtimes build them, harness/runtimes/docker.py)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.tools.manifest import installed_path, read_manifest


SHARED_DOCKERFILES = "_docker"   # tools/_docker/: the generator images' Dockerfiles, one per way of installing
# Each install kind's Dockerfile there: installed in the image itself, or in a build stage whose result
# alone is copied into the image (the kinds that need a toolchain to install but not to run).
KIND_DOCKERFILES = {"apt": "in-image", "pip": "in-image",
                    "go": "build-stage", "cargo": "build-stage", "npm": "build-stage", "maven": "build-stage"}
# Fetched in a layer every tool of the kind shares (tools/_lib/<kind>-toolchain.sh): built once per machine.
KIND_TOOLCHAINS = {kind: f"{kind}-toolchain.sh" for kind in ("go", "cargo", "npm", "maven")}


@dataclass(frozen=True)
class DockerBuild:
    dockerfile: str            # relative to tools/, the build context
    args: dict[str, str]       # build args; compose.yaml takes each as LTH_<ARG> (harness/runtimes/docker.py)


def docker_build(folder: Path) -> DockerBuild:
    """How the generator image of tools/<folder>/ is built: its own Dockerfile when it has one (a tool that
    truly differs), else its install kind's shared one, with build args from its manifest."""
    manifest = read_manifest(folder)
    kind = manifest.get("kind", "")
    args = {"TOOL": folder.name, "RUNTIME_PACKAGES": manifest.get("runtime_packages", "")}
    if (folder / "Dockerfile").is_file():
        return DockerBuild(f"{folder.name}/Dockerfile", args)
    if kind not in KIND_DOCKERFILES:
        raise HarnessError(f"{folder}: no Dockerfile, and install kind {kind!r} has no shared one "
                           f"(tools/README.md: Install and Docker)")
    if KIND_DOCKERFILES[kind] == "build-stage":
        # The host's compiled binary (tools/<id>/prebuilt/<id>, tools/_lib/go.sh and cargo.sh) is what the build
        # stage installs: the toolchain's layer is then dead weight (cargo's installs Debian's rustc in the
        # image: ~50 s on a fresh machine). install.sh fetches the toolchain itself if the binary is not usable.
        prebuilt = (folder / "prebuilt" / folder.name).is_file()
        args |= {"INSTALLED": installed_path(folder, manifest),
                 "TOOLCHAIN": "" if prebuilt else KIND_TOOLCHAINS.get(kind, "")}
    return DockerBuild(f"{SHARED_DOCKERFILES}/{KIND_DOCKERFILES[kind]}.Dockerfile", args)
