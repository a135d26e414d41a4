"""Shared by every test file: running the CLI, the end-to-end tier (marker, tool selection, the check that
nothing is left behind), and the captured tool outputs the parser tests read.

Tiers: `pytest -m "not e2e"` (make test-unit) needs no root, Docker, tools or network; tests marked
``e2e`` run real tools against a real target. LTH_TEST_TOOLS=wrk,ab (make test-e2e TOOLS=...) keeps only
the end-to-end tests of those tools: the ones whose ``tools`` marker they cover, and those of
tests/test_tools_e2e.py.
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
URL = "http://198.18.0.2:80/style.css"
TLS_URL = "https://198.18.0.2:443/style.css"     # a tls scenario's target (issue 23)
# tests/example_tool/ is a tool folder with its tests, copied into a clone by test_adding_a_tool.py.
collect_ignore = ["example_tool"]
if not os.environ.get("LTH_IN_VM"):          # tests/netem_vm runs inside the VM `make test-netem` boots
    collect_ignore.append("netem_vm")


def harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the harness CLI exactly as users do (python -m harness ...)."""
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


# Tests wait for another benchmark on the machine (a developer's) rather than fail on the lock.
os.environ.setdefault("LTH_LOCK_WAIT_S", "900")
# The tests that send Ctrl-C (SIGINT) to a harness need it to take it: a suite started in the background by a
# shell without job control (`make test &` in a script, nohup) inherits SIGINT ignored, and so would every
# harness it starts. A handler here is reset to the default in each child at exec; an ignored signal is not.
signal.signal(signal.SIGINT, signal.default_int_handler)


def require_root_tools(*commands: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("end-to-end tests need root (network namespaces): run `make test` as root")
    missing = [c for c in commands if shutil.which(c) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}: run `make deps`")


# --- the end-to-end tier ---------------------------------------------------------------------------------
def selected_tools() -> set[str] | None:
    """The tool ids LTH_TEST_TOOLS names (None: every tool)."""
    value = os.environ.get("LTH_TEST_TOOLS", "all").strip()
    return None if value in ("", "all") else {t.strip() for t in value.split(",") if t.strip()}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under LTH_TEST_TOOLS, drop the end-to-end tests that run a tool outside the selection."""
    selected = selected_tools()
    if selected is None:
        return
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker("tools")
        (drop if marker and not set(marker.args) <= selected else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# --- tiers: where the suite's time goes (scripts/run-tests.py prints it against the budget) -----------------
def tier(item: pytest.Item) -> str:
    """unit (no e2e marker), as-typed (the README's commands in a throw-away clone), or e2e."""
    if not item.get_closest_marker("e2e"):
        return "unit"
    return "as-typed" if item.get_closest_marker("as_typed") or "bench_quick" in item.fixturenames else "e2e"


_TIER_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tiers = getattr(report, "tier", None)
    if tiers:
        _TIER_SECONDS[tiers] = _TIER_SECONDS.get(tiers, 0.0) + report.duration


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    outcome.get_result().tier = tier(item)      # setup (a shared run's fixture), call and teardown alike


def pytest_sessionfinish(session: pytest.Session) -> None:
    if (path := os.environ.get("LTH_TIER_TIMES")) and _TIER_SECONDS:
        Path(path).write_text(json.dumps(_TIER_SECONDS))


def pytest_terminal_summary(terminalreporter) -> None:
    if _TIER_SECONDS:
        terminalreporter.write_line("time per tier: " + ", ".join(f"{name} {seconds / 60:.1f} min"
                                                                  for name, seconds in sorted(_TIER_SECONDS.items())))


def _lines(argv: list[str]) -> list[str]:
    result = subprocess.run(argv, capture_output=True, text=True)
    return [line for line in result.stdout.splitlines() if line.strip()]


def leftovers() -> list[str]:
    """What a harness run may have left on the machine: namespaces, veths, proxies, captures, targets,
    tool processes, containers, networks, a netem qdisc in the root namespace."""
    from harness.runtimes.docker import docker_available
    found = [f"netns {ns}" for ns in _lines(["ip", "netns", "list"]) if ns.startswith("lth-")]
    found += [f"link {link}" for link in _lines(["ip", "-o", "link", "show"]) if "lth-" in link]
    for pattern in ("toxiproxy-server", "lth-capture", "/tmp/lth-target-"):   # proxy, tcpdump, host nginx
        found += [f"process {pid} ({pattern})" for pid in _lines(["pgrep", "-f", pattern])]
    found += [f"orphaned nginx worker {pid}" for pid in _lines(["pgrep", "-P", "1", "-f", "nginx: worker"])]
    found += [f"folder {path}" for pattern in ("lth-target-*", "lth-generator-*") for path in Path("/tmp").glob(pattern)]
    found += [f"process {pid} ({name})" for name in ("wrk", "ab") for pid in _lines(["pgrep", "-x", name])]
    if docker_available() is not None:
        found += [f"container {c}" for c in _lines(["docker", "ps", "-aq", "--filter", "label=lth"])]
        found += [f"docker network {n}" for n in _lines(["docker", "network", "ls", "-q", "--filter", "label=lth"])]
    if "netem" in "\n".join(_lines(["tc", "qdisc", "show"])):
        found.append("a netem qdisc in the root namespace")
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind(request: pytest.FixtureRequest):
    """After a session that ran end-to-end tests, nothing the harness created may remain (the unit tier
    creates nothing and runs without root, so it is not checked)."""
    yield
    if any(item.get_closest_marker("e2e") for item in request.session.items):
        assert leftovers() == [], "left behind after the end-to-end tests (`make clean-state` removes them)"


# --- the README's commands, as typed, in a throw-away clone ------------------------------------------------
# Make variables a test's own environment must not hand to the make it runs (MAKEFLAGS carries the
# command line of an outer `make test-e2e TOOLS=...`; the rest are the Makefile's `?=` overrides, read from it).
MAKE_ENVIRONMENT = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SVG",
                    *re.findall(r"^([A-Z][A-Z0-9_]*)\s*\?=", (REPO / "Makefile").read_text(), re.M))


def throwaway_clone(dest: Path) -> Path:
    """What `git clone` of this checkout gives, with its uncommitted work: the tracked files and the new ones
    git does not ignore (no .venv, results, prebuilt binaries or caches)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def make_as_typed(clone: Path, *arguments: str, timeout: float = 3600,
                  test_tools: Path | None = None) -> subprocess.CompletedProcess:
    """`make ARGUMENTS` in ``clone`` as a user types it: the clone's own venv and defaults, no variable from
    this environment; the output also goes to clone/make-<target>.log. ``test_tools``: a folder of the test
    suite's own tools (LTH_EXTRA_TOOLS) beside the repository's, for a fault among real runs."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_ENVIRONMENT}
    if test_tools is not None:
        env["LTH_EXTRA_TOOLS"] = str(test_tools)
    result = subprocess.run(["make", *arguments], cwd=clone, env=env, capture_output=True, text=True,
                            timeout=timeout)
    (clone / f"make-{'-'.join(a.replace('/', '_') for a in arguments)}.log").write_text(result.stdout + result.stderr)
    return result


DURATION_AS_TYPED = "3"     # the one override the as-typed tier allows (issue 21)


@dataclass
class TypedRun:
    """One `make bench-quick` in the throw-away clone: what it printed and the results it left."""

    arguments: list[str]
    result: subprocess.CompletedProcess
    minutes: float
    latest: Path                 # clone/results/latest, as the README names it
    folder: Path | None          # where `latest` pointed right after this run (the next run moves it)
    rows: list[dict]

    @property
    def output_all(self) -> str:
        return self.result.stdout + self.result.stderr

    @property
    def output(self) -> str:
        return f"make {' '.join(self.arguments)} (exit {self.result.returncode}):\n" + \
            "\n".join((self.result.stdout + self.result.stderr).splitlines()[-60:])


@pytest.fixture(scope="session")
def bench_quick(tmp_path_factory) -> Callable[[str], TypedRun]:
    """The README's quick start as typed, in one throw-away clone: `make bench-quick DURATION=3`, and the
    same with RUNTIME=host; each runtime once per session, whichever test asks first. Under LTH_TEST_TOOLS
    (make test-e2e TOOLS=...) only those tools run (TOOLS=...), and the as-typed counts are not checked."""
    require_root_tools("ip", "nginx", "make", "git")
    clone = throwaway_clone(tmp_path_factory.mktemp("clone") / "load-tool-harness")
    runs: dict[str, TypedRun] = {}

    def run(runtime: str) -> TypedRun:
        if runtime not in runs:
            arguments = ["bench-quick", f"DURATION={DURATION_AS_TYPED}", *([] if runtime == "docker" else
                                                                           [f"RUNTIME={runtime}"])]
            if selected_tools() is not None:
                arguments.append(f"TOOLS={','.join(sorted(selected_tools()))}")
            started = time.monotonic()
            result = make_as_typed(clone, *arguments)
            latest = clone / "results" / "latest"
            rows = list(csv.DictReader((latest / "runs.csv").open())) if (latest / "runs.csv").is_file() else []
            folder = latest.resolve() if latest.is_symlink() else None
            runs[runtime] = TypedRun(arguments, result, (time.monotonic() - started) / 60, latest, folder, rows)
            print(f"\nmake {' '.join(arguments)}: {runs[runtime].minutes:.1f} min, "
                  f"{sum(r['status'] == 'ok' for r in rows)} of {len(rows)} runs ok")
        return runs[runtime]
    return run


def rederived_differences(stored_csv: Path, folder: Path) -> list[str]:
    """Cells of ``folder``'s (re-derived) runs.csv that differ from ``stored_csv``, column by column."""
    stored, again = (list(csv.DictReader(f.open())) for f in (stored_csv, folder / "runs.csv"))
    if len(again) != len(stored):
        return [f"{len(stored)} rows stored, {len(again)} re-derived"]
    return [f"{s['scenario']} {s['tool']} {column}: stored {s[column]!r}, re-derived {a.get(column)!r}"
            for s, a in zip(stored, again) for column in s if s[column] != a.get(column)]


def assert_rederives(folder: Path, scratch: Path) -> None:
    """`python -m harness rederive` on a copy of ``folder`` gives its runs.csv again, column by column."""
    copy = scratch / f"rederived-{folder.name}"
    shutil.copytree(folder, copy, symlinks=True)
    result = harness("rederive", str(copy), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert rederived_differences(folder / "runs.csv", copy) == []


# --- reports: built once per input and test process, read by every test that only reads the page -----------
@pytest.fixture(scope="session")
def report_of(tmp_path_factory) -> Callable[[list[Path]], Path]:
    """analysis.report.build of ``folders`` (unchanged inputs, e.g. results/sample), its index.html; the charts
    beside it. A test that edits a folder builds its own."""
    from analysis.report import build
    built: dict[tuple[Path, ...], Path] = {}

    def report(folders: list[Path]) -> Path:
        key = tuple(folders)
        if key not in built:
            built[key] = build(list(folders), tmp_path_factory.mktemp("report"))
        return built[key]
    return report


# --- captured tool outputs (tests/fixtures/<tool>/<case>/) --------------------------------------------------
def cases(tool: str, prefix: str = "") -> list[str]:
    """The captured runs of ``tool`` (folder names starting with ``prefix``)."""
    return sorted(p.name for p in (FIXTURES / tool).iterdir() if p.name.startswith(prefix))


def captured_run(folder: Path, out_dir: Path | None = None, launched_at: float = 0.0) -> tuple["ToolOutput", dict]:
    """A fixture folder captured from a real run (stdout.txt, stderr.txt, meta.json) as the parser
    receives it, with that run's meta.json; ``out_dir`` moves the run's other files elsewhere."""
    from harness.tools.output import RunSpec, ToolOutput
    meta = json.loads((folder / "meta.json").read_text())
    spec = RunSpec(url=URL, vus=meta["row"]["vus"], duration_s=meta["row"]["duration_s"], out_dir=out_dir or folder,
                   cpus=2)
    return ToolOutput(spec, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text(), 0,
                      launched_at), meta


def with_stdout(output: "ToolOutput", stdout: str) -> "ToolOutput":
    """The same run with its stdout replaced (a cut or edited copy of the real one)."""
    from harness.tools.output import ToolOutput
    return ToolOutput(output.spec, stdout, output.stderr, 0, output.launched_at)


def command_spec(out_dir: Path, vus: int = 20, duration_s: int = 5, url: str = URL,
                 keepalive: bool = True) -> "RunSpec":
    """The spec the command tests build commands for."""
    from harness.tools.output import RunSpec
    return RunSpec(url=url, vus=vus, duration_s=duration_s, out_dir=out_dir, cpus=2, keepalive=keepalive)


from harness.store.figures import LATENCY_ORDER  # noqa: E402 - the same order the harness checks
ONLY_FROM_EVERY_LATENCY = ("lat_p99_9_ms",)    # harness/stats.py's, where it reads the tool's every latency


def assert_ordered(m, missing: tuple[str, ...] = ()) -> None:
    """Every latency figure is reported but those in ``missing`` (the tool does not print them: e.g. autocannon
    has no p95, which its parser leaves None), and min <= p50 <= p75 <= p90 <= p95 <= p99 <= max."""
    assert set(missing) <= set(LATENCY_ORDER), f"unknown figures in missing: {set(missing) - set(LATENCY_ORDER)}"
    figures = {name: getattr(m, name) for name in LATENCY_ORDER}
    assert [n for n in missing if figures[n] is not None] == [], "a figure said missing is reported"
    assert [n for n, v in figures.items() if v is None and n not in (*missing, *ONLY_FROM_EVERY_LATENCY)] == [], \
        f"figures not reported: {figures}"
    present = [(name, value) for name, value in figures.items() if value is not None]
    for (low, low_value), (high, high_value) in zip(present, present[1:]):
        assert low_value <= high_value, f"{low} {low_value} > {high} {high_value} (the figures: {dict(present)})"


# --- the lab's shared runs (test_generator_hosts_e2e, test_docker_hosts_e2e) -------------------------------------
def rows(results: Path) -> dict[tuple[str, str], dict]:
    """runs.csv under ``results``/latest by (scenario, tool); empty before the suite's first row."""
    path = results / "latest" / "runs.csv"
    return {(r["scenario"], r["tool"]): r for r in csv.DictReader(path.open())} if path.is_file() else {}


@dataclass
class LabRun:
    """A harness run a module's tests share: its results root, exit status and the tail of its output."""
    results: Path
    returncode: int
    output: str

    @classmethod
    def of(cls, results: Path, result: subprocess.CompletedProcess) -> "LabRun":
        return cls(results, result.returncode, result.stdout[-2000:] + result.stderr[-2000:])

    def row(self, scenario: str, tool: str) -> dict:
        return rows(self.results)[(scenario, tool)]

    def part_requests(self, row: dict) -> list[int]:
        meta = json.loads((self.results / "latest" / row["run_dir"] / "meta.json").read_text())
        return [part["requests"] for part in meta["parts"]]
