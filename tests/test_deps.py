"""Every id `list-tools` prints works in TOOLS= for the Make targets: scripts/deps.sh resolves it
through the registry (a variant installs its adapter's folder); an unknown id is one line, exit 2."""
import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require_root_tools
from harness.tools.registry import discover

DEPS = REPO / "scripts" / "deps.sh"


def listed_tool_ids() -> list[str]:
    result = subprocess.run([sys.executable, "-m", "harness", "list-tools"], cwd=REPO, capture_output=True,
                            text=True, timeout=300, check=True)
    # The first block is the tool table; the capability matrix and the targets follow a blank line.
    header, *rows = result.stdout.split("\n\n")[0].splitlines()
    assert header.split()[0] == "tool", result.stdout
    return [row.split()[0] for row in rows]


def resolve(tools: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(DEPS), tools], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DEPS_RESOLVE_ONLY": "1"})


@pytest.fixture(scope="module")
def root_only():
    if os.geteuid() != 0:
        pytest.skip("scripts/deps.sh runs as root: run `make test` as root")


@pytest.mark.e2e
def test_every_listed_id_resolves_to_its_adapters_install_folder(root_only):
    adapters = discover()
    ids = listed_tool_ids()
    assert sorted(ids) == sorted(adapters), ids
    result = resolve(",".join(ids))       # one call: each folder once, in the order asked (variants share theirs)
    assert result.returncode == 0, result.stderr
    folders = [Path(folder) for folder in result.stdout.split()]
    assert folders == list(dict.fromkeys(adapters[tool].folder for tool in ids)), result.stdout
    assert all((folder / "install.sh").is_file() for folder in folders), folders


@pytest.mark.e2e
def test_variants_share_one_install(root_only):
    result = resolve("locust,locust-http,locust-multi,wrk")
    assert result.returncode == 0, result.stderr
    assert [Path(f).name for f in result.stdout.split()] == ["locust", "wrk"]


@pytest.mark.e2e
def test_unknown_id_is_one_line_naming_it_and_the_known_ids(root_only):
    result = resolve("wrk,locust-htp")
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "unknown tool locust-htp" in line and "locust-http" in line and "wrk" in line


@pytest.mark.tools("locust-http")
@pytest.mark.e2e
def test_bench_all_with_a_variant_id(tmp_path):
    require_root_tools("ip", "nginx", "make")
    result = subprocess.run(["make", "bench-all", "RUNTIME=host", "TOOLS=locust-http", "DURATION=3",
                             "SCENARIOS=scenarios/shootout.yaml:vu20-rtt0.1", f"RESULTS_ROOT={tmp_path}"],
                            cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (row,) = csv.DictReader((tmp_path / "latest" / "runs.csv").open())
    assert row["tool"] == "locust-http" and row["status"] == "ok" and int(row["requests"]) > 0
    assert (tmp_path / "latest" / "report" / "index.html").is_file()
