"""Adding a tool is one folder and the steps of tools/README.md ("Adding a tool, step by step"), nothing
else to edit: the worked example in tests/example_tool/ (httperf: a wrapped tool without a duration
option, its parser test and a fixture from a real run) is copied into a throw-away clone, and the guide's
commands run there as typed: make deps, make readme-tools, make test-tools, then make bench-quick with the
new tool in both runtimes."""
import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.memory import NOT_MEASURED

from conftest import DURATION_AS_TYPED, make_as_typed, require_root_tools, throwaway_clone

EXAMPLE = Path(__file__).resolve().parent / "example_tool"
TOOL = "httperf"
pytestmark = [pytest.mark.e2e, pytest.mark.as_typed, pytest.mark.tools(TOOL)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    require_root_tools("ip", "nginx", "make", "git")
    clone = throwaway_clone(tmp_path_factory.mktemp("add-a-tool") / "load-tool-harness")
    shutil.copytree(EXAMPLE, clone, dirs_exist_ok=True)     # tools/httperf/ and its test + fixture
    return clone


def step(clone, *arguments: str):
    result = make_as_typed(clone, *arguments)
    assert result.returncode == 0, f"make {' '.join(arguments)}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def guide(clone):
    """The guide's steps 4-6, in order (each test below checks one outcome)."""
    step(clone, "deps", f"TOOLS={TOOL}", "RUNTIME=host")
    return {"readme": step(clone, "readme-tools"), "tool_checks": step(clone, "test-tools")}


def test_the_readme_table_gets_the_new_tool(clone, guide):
    assert "rewritten" in guide["readme"].stdout
    assert f"| `{TOOL}` | 0.9.0 (Debian) |" in (clone / "README.md").read_text()


def test_the_tool_checks_are_green_with_the_new_tool_and_run_its_parser_test(clone, guide):
    """Every test `make test-tools` collects in the clone passed, the example's parser test among them."""
    output = guide["tool_checks"].stdout
    passed = re.search(r"(\d+) passed", output)
    assert passed and " failed" not in output and " error" not in output, output[-2000:]
    collected = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-m", "pytest", "--collect-only", "-q",
                                "-m", "not e2e", "tests/tools", "tests/test_registry.py"],
                               cwd=clone, capture_output=True, text=True).stdout.splitlines()
    ids = [line for line in collected if "::" in line]
    assert any(line.startswith(f"tests/tools/test_{TOOL}.py::") for line in ids), collected[-20:]
    assert int(passed.group(1)) == len(ids), (passed.group(0), len(ids))


@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_the_new_tool_runs_ok_as_typed(clone, guide, runtime):
    step(clone, "bench-quick", f"TOOLS={TOOL}", f"DURATION={DURATION_AS_TYPED}",
         *([f"RUNTIME={runtime}"] if runtime == "host" else []))
    rows = list(csv.DictReader((clone / "results" / "latest" / "runs.csv").open()))
    assert {(r["tool"], r["runtime"], r["status"]) for r in rows} == {(TOOL, runtime, "ok")} and len(rows) == 2
    for row in rows:
        assert row["tool_version"] == "0.9.0" and float(row["rps"]) > 0
        requests, served = int(row["requests"]), int(row["server_requests"])
        assert abs(served - requests) <= 0.02 * served, (requests, served)
        assert float(row["mem_avg_mb"]) > 0 and row["mem_per_vu_kb"] == ""     # sampled; per VU: the slope below
    # the new tool is in the scorecard; its memory per VU needs three VU levels at one RTT, which the quick run lacks
    card = {r["tool"]: r for r in csv.DictReader((clone / "results" / "latest" / "report" / "scorecard.csv").open())}
    assert card[TOOL]["mem_per_vu_kb"].startswith(NOT_MEASURED) and card[TOOL]["req_per_cpu_s"], card[TOOL]
