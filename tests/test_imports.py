"""No import circle among the harness's and the analysis's modules (issue 36). Imports inside functions
count too: a function-local import is how the last circle (analysis: charts -> compare -> report ->
charts) was hidden. Read with ast, nothing imported."""
import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "analysis")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module's imports of the packages' modules, wherever in the module they are written."""
    modules = {module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                          for alias in node.names}
        graph[name] = {module for module in found if module in modules and module != name}
    return graph


def test_no_module_reaches_itself_through_its_imports():
    try:
        TopologicalSorter(import_graph()).prepare()
    except CycleError as exc:
        pytest.fail(f"import circle: {' -> '.join(exc.args[1])}")


def test_a_planted_circle_is_found():
    graph = import_graph()
    graph["analysis.load"] = graph["analysis.load"] | {"analysis.report"}    # report imports load
    with pytest.raises(CycleError):
        TopologicalSorter(graph).prepare()


# --- layers (issue 36): each package may import only the ones below it; analysis/ too (issue 50.2) ------------
# The run writes the stored run and the derivation reads it: harness/row/ imports nothing of the run side
# (sampling, runtimes, network, suite), and the run side nothing of harness/row/.
SHARED = {"harness", "harness.cpus", "harness.environment", "harness.errors", "harness.failure", "harness.files",
          "harness.flows", "harness.processes", "harness.rtt_probe", "harness.scenarios", "harness.slo", "harness.stats"}
# They run a suite or re-derive one (a run, then its row), or drive such commands (lab hosts, the overhead check;
# the Kubernetes route's command, whose gather derives the pods' results as the runner derives a run's).
ORCHESTRATORS = {"harness.suite.runner", "harness.suite.run", "harness.suite.rederive", "harness.capacity.run",
                 "harness.cli", "harness.__main__", "harness.lab", "harness.suite.overhead_check",
                 "harness.suite.kubernetes", "harness.suite.kube_results"}
PACKAGE_LAYERS = {"harness.store": "store", "harness.targets": "shared", "harness.tools": "tools",
                  "harness.row": "derivation", "harness.sampling": "sampling", "harness.runtimes": "runtimes",
                  "harness.network": "network", "harness.suite": "suite", "harness.capacity": "capacity"}


def layer(module: str) -> str:
    if module in ORCHESTRATORS:
        return "orchestration"
    if module == "analysis" or module.startswith("analysis."):
        return "analysis"
    if module in SHARED or not module.startswith("harness"):
        return "shared"
    package = next(p for p in PACKAGE_LAYERS if module == p or module.startswith(p + "."))
    return PACKAGE_LAYERS[package]


# analysis/ reads what a run stored (issue 50.2): never how a run was made or its row derived (harness/row,
# harness/suite, the run side); the commands (orchestration) call it.
BELOW = {"shared": {"store"}, "store": set(), "tools": {"store"}, "derivation": {"tools", "store"},
         "analysis": {"tools", "store"},
         "sampling": {"store"}, "capacity": {"store"}, "runtimes": {"tools", "sampling", "store"},
         "network": {"runtimes", "tools", "sampling", "store"},
         "suite": {"network", "runtimes", "tools", "sampling", "store"}}
ALLOWED = {name: {name, "shared", *below} for name, below in BELOW.items()} | {"orchestration": {
    "orchestration", *BELOW, "shared"}}


def wrong_arrows(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} ({layer(module)}) imports {imported} ({layer(imported)})"
                  for module, imports in graph.items() for imported in imports
                  if module.startswith(PACKAGES) and layer(imported) not in ALLOWED[layer(module)])


def test_each_package_imports_only_the_ones_below_it():
    assert wrong_arrows(import_graph()) == []


def test_analysis_imports_nothing_of_the_row_nor_the_suite():
    graph = import_graph()
    reached = {imported for module, imports in graph.items() if layer(module) == "analysis" for imported in imports}
    assert not {m for m in reached if m.startswith(("harness.row", "harness.suite"))}


@pytest.mark.parametrize(("module", "imported"), [("harness.row.bottleneck", "harness.sampling"),
                                                   ("harness.suite.execution", "harness.row"),
                                                   ("harness.store.record", "harness.row.usage"),
                                                   ("analysis.charts", "harness.row.bottleneck"),
                                                   ("analysis.report", "harness.suite.runner"),
                                                   ("harness.store.upgrade", "analysis.load")])
def test_a_planted_wrong_import_is_named(module, imported):
    graph = import_graph()
    graph[module] = graph[module] | {imported}
    assert wrong_arrows(graph) == [f"{module} ({layer(module)}) imports {imported} ({layer(imported)})"]
