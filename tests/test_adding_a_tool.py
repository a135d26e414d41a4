"""Adding a tool is one folder and the steps of tools/README.md ("Adding a tool, step by step"), nothing
else to edit: the worked examples in tests/example_tool/ are copied into a throw-away clone, and the guide's
commands run there as typed: for the compiled one its lock (scripts/go-lock.sh), then make deps, make
readme-tools, make test-tools, then make bench-quick with the new tools in both runtimes.

The examples, tools the suite does not ship, each with its parser test and a fixture from a real run:
- httperf (Debian's package): a wrapped tool without a duration option;
- fortio (Go, from the Go module proxy): a compiled tool, shipped without its go.mod and go.sum, which
  scripts/go-lock.sh makes here from tool.toml as a new user would; its binary is removed first, so that
  `make deps` compiles it from that lock (~80 s on 2 cores with an empty Go build cache, a few seconds with
  the machine's warm one), and its Docker image copies that binary (tools/<id>/prebuilt).
Both share one clone, one `make test-tools` and one `make bench-quick` per runtime: the compiled tool adds
the lock, its compile and 2 runs of 3 s per runtime to the apt tool's walk."""
import csv
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.memory import NOT_MEASURED

from conftest import DURATION_AS_TYPED, MAKE_ENVIRONMENT, make_as_typed, require_root_tools, throwaway_clone

EXAMPLE = Path(__file__).resolve().parent / "example_tool"
VERSIONS = {"httperf": ("0.9.0", "Debian"), "fortio": ("1.68.2", "Go module proxy")}   # their tool.toml
TOOLS = tuple(VERSIONS)
COMPILED = "fortio"
pytestmark = [pytest.mark.e2e, pytest.mark.as_typed, pytest.mark.tools(*TOOLS)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    require_root_tools("ip", "nginx", "make", "git")
    clone = throwaway_clone(tmp_path_factory.mktemp("add-a-tool") / "load-tool-harness")
    shutil.copytree(EXAMPLE, clone, dirs_exist_ok=True)     # tools/<id>/ and its test + fixture, for each example
    assert not (clone / "tools" / COMPILED / "go.mod").exists()     # made below, by the guide's command
    return clone


def step(clone, *arguments: str):
    result = make_as_typed(clone, *arguments)
    assert result.returncode == 0, f"make {' '.join(arguments)}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


def script(clone, *argv: str):
    """A command of the guide that is not a make target, as typed in the clone."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_ENVIRONMENT}
    result = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{' '.join(argv)}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def guide(clone):
    """The guide's steps 2-6, in order (each test below checks one outcome)."""
    folder = clone / "tools" / COMPILED
    lock = script(clone, "scripts/go-lock.sh", COMPILED)                         # step 2: the Go tool's lock
    binary = Path(re.search(r'^binary = "(.*)"$', (folder / "tool.toml").read_text(), re.M).group(1))
    for stale in (binary, binary.with_name(binary.name + ".version")):       # an earlier run's install
        stale.unlink(missing_ok=True)
    deps = {tool: step(clone, "deps", f"TOOLS={tool}", "RUNTIME=host") for tool in TOOLS}       # step 4
    return {"lock": lock, "deps": deps, "binary": binary,
            "readme": step(clone, "readme-tools"), "tool_checks": step(clone, "test-tools")}


def test_the_go_lock_is_made_from_the_manifest_and_the_tool_compiled_from_it(clone, guide):
    folder = clone / "tools" / COMPILED
    go_mod = (folder / "go.mod").read_text()
    assert f"module lth.local/{COMPILED}-build" in go_mod and "\ntool fortio.org/fortio\n" in go_mod
    assert re.search(r"^\tfortio\.org/fortio v1\.68\.2\b", go_mod, re.M), go_mod
    assert "fortio.org/fortio v1.68.2 h1:" in (folder / "go.sum").read_text()
    assert f"wrote tools/{COMPILED}/go.mod and tools/{COMPILED}/go.sum" in guide["lock"].stdout
    # make deps compiled it in the background and said when that was done; the binary is the lock's version
    output = guide["deps"][COMPILED].stdout
    assert re.search(rf"^deps: compile of {COMPILED} done after \d+ s", output, re.M), output[-2000:]
    assert f"{COMPILED}: building fortio.org/fortio@v1.68.2" in Path("/var/log/lth-deps-compile.log").read_text()
    assert guide["binary"].with_name(guide["binary"].name + ".version").read_text().strip() == "v1.68.2"
    assert (folder / "prebuilt" / COMPILED).is_file()                  # the image copies it
    assert "\ntools/*/prebuilt/\n" in (clone / ".gitignore").read_text()   # and git leaves it out


def test_the_readme_table_gets_the_new_tools(clone, guide):
    assert "rewritten" in guide["readme"].stdout
    table = (clone / "README.md").read_text()
    for tool, (version, origin) in VERSIONS.items():
        assert f"| `{tool}` | {version} ({origin}) |" in table


def test_the_tool_checks_are_green_with_the_new_tools_and_run_their_parser_tests(clone, guide):
    """Every test `make test-tools` collects in the clone passed, the examples' parser tests among them."""
    output = guide["tool_checks"].stdout
    passed = re.search(r"(\d+) passed", output)
    assert passed and " failed" not in output and " error" not in output, output[-2000:]
    collected = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-m", "pytest", "--collect-only", "-q",
                                "-m", "not e2e", "tests/tools", "tests/test_registry.py"],
                               cwd=clone, capture_output=True, text=True).stdout.splitlines()
    ids = [line for line in collected if "::" in line]
    for tool in TOOLS:
        assert any(line.startswith(f"tests/tools/test_{tool}.py::") for line in ids), collected[-20:]
    assert int(passed.group(1)) == len(ids), (passed.group(0), len(ids))


@pytest.mark.parametrize("runtime", ["host", "docker"])
def test_the_new_tools_run_ok_as_typed(clone, guide, runtime):
    step(clone, "bench-quick", f"TOOLS={','.join(TOOLS)}", f"DURATION={DURATION_AS_TYPED}",
         *([f"RUNTIME={runtime}"] if runtime == "host" else []))
    rows = list(csv.DictReader((clone / "results" / "latest" / "runs.csv").open()))
    assert sorted((r["tool"], r["runtime"], r["status"]) for r in rows) == \
        sorted([(tool, runtime, "ok") for tool in TOOLS] * 2), [(r["tool"], r["status"], r["notes"]) for r in rows]
    for row in rows:
        assert row["tool_version"] == VERSIONS[row["tool"]][0] and float(row["rps"]) > 0
        # Nginx counted the tool's requests, give or take one per VU: httperf's in flight when SIGINT stops it,
        # fortio's warm-up request per connection before its timed load
        requests, served = int(row["requests"]), int(row["server_requests"])
        assert abs(served - requests) <= int(row["vus"]) + 0.01 * served, (row["tool"], row["vus"], requests, served)
        assert float(row["mem_avg_mb"]) > 0 and "mem_per_vu_kb" not in row     # sampled; per VU: the slope below
    # fortio's percentiles come from its buckets: a p50 is there, at or above the declared bucket width
    for row in (r for r in rows if r["tool"] == COMPILED):
        assert float(row["timing_resolution_ms"]) == 0.1 and float(row["lat_p50_ms"]) >= 0.1, row
    # the new tools are in the scorecard; memory per VU needs three VU levels at one RTT, which the quick run lacks
    card = {r["tool"]: r for r in csv.DictReader((clone / "results" / "latest" / "report" / "scorecard.csv").open())}
    for tool in TOOLS:
        assert card[tool]["mem_per_vu_kb"].startswith(NOT_MEASURED) and card[tool]["req_per_cpu_s"], card[tool]
