"""Adding a tool needs one folder and no edit elsewhere: a throw-away adapter (with its manifest,
tool.toml) created in a temporary copy of the repository is discovered, listed and run end to end."""
import csv
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, require_root_tools

ADAPTER = '''
import re

from harness.adapter import Metrics, RunSpec, ToolAdapter, ToolOutput


class Throwaway(ToolAdapter):
    name = "throwaway-ab"
    version_args = ["-V"]                      # run with the manifest's binary
    concurrency_model = "ab -c VUs -k, just to prove discovery"
    timing_resolution_ms = 0.001

    def command(self, spec: RunSpec) -> list[str]:
        return [self.binary, "-k", "-q", "-c", str(spec.vus), "-t", str(spec.duration_s), "-n", "10000000", spec.url]

    def parse(self, output: ToolOutput) -> Metrics:
        requests = int(re.search(r"Complete requests:\\s+(\\d+)", output.stdout).group(1))
        rps = float(re.search(r"Requests per second:\\s+([\\d.]+)", output.stdout).group(1))
        return Metrics(requests=requests, rps=rps, errors=0, source="ab text")
'''
MANIFEST = 'version = "2.3"\norigin = "Debian"\nkind = "apt"\npackage = "apache2-utils"\nbinary = "ab"\n'


@pytest.mark.tools("ab")
@pytest.mark.e2e
def test_a_new_tool_folder_is_discovered_and_run(tmp_path):
    require_root_tools("ip", "nginx", "ab")
    copy = tmp_path / "repo"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".venv", ".git", "results", "__pycache__", "*.egg-info"))
    (copy / "tools" / "throwaway-ab").mkdir()
    (copy / "tools" / "throwaway-ab" / "adapter.py").write_text(ADAPTER)
    (copy / "tools" / "throwaway-ab" / "tool.toml").write_text(MANIFEST)

    listed = subprocess.run([sys.executable, "-m", "harness", "list-tools"], cwd=copy, capture_output=True,
                            text=True, timeout=120)
    assert "throwaway-ab" in listed.stdout
    run = subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "host", "--tools", "throwaway-ab",
                          "--scenarios", "scenarios/quick.yaml:vu20-rtt0.1", "--duration", "2",
                          "--results-root", str(tmp_path / "results")], cwd=copy, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    (row,) = csv.DictReader((tmp_path / "results" / "latest" / "runs.csv").open())
    assert row["tool"] == "throwaway-ab" and row["status"] == "ok" and float(row["rps"]) > 0
    assert row["tool_version"] == "2.3"                           # version_command from the manifest's binary
    assert abs(int(row["server_requests"]) - int(row["requests"])) <= 0.02 * int(row["requests"])
