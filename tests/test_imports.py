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


# --- layers: the run writes the stored run, the derivation reads it (issue 36) -------------------------------
STORE, DERIVATION = "harness.store", "harness.row"
# Definitions both sides use: a tool's adapter, scenarios and the targets they name, CPU lists, files, errors.
SHARED = {"harness", "harness.adapter", "harness.cpus", "harness.errors", "harness.failure", "harness.files",
          "harness.scenarios", "harness.stats", "harness.targets", "harness.target"}
# They run a suite or re-derive one (a run, then its row), or drive such commands (lab hosts, the overhead check).
ORCHESTRATORS = {"harness.runner", "harness.rederive", "harness.capacity_run", "harness.cli", "harness.__main__",
                 "harness.lab", "harness.overhead_check"}


def layer(module: str) -> str:
    if module == STORE or module.startswith(STORE + "."):
        return "store"
    if module == DERIVATION or module.startswith(DERIVATION + "."):
        return "derivation"
    if module in SHARED or not module.startswith("harness"):
        return "shared"
    return "orchestration" if module in ORCHESTRATORS else "run"


ALLOWED = {"store": {"store", "shared"}, "derivation": {"derivation", "store", "shared"},
           "run": {"run", "store", "shared"}, "shared": {"shared", "store"},
           "orchestration": {"orchestration", "run", "derivation", "store", "shared"}}


def wrong_arrows(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} ({layer(module)}) imports {imported} ({layer(imported)})"
                  for module, imports in graph.items() for imported in imports
                  if module.startswith("harness") and layer(imported) not in ALLOWED[layer(module)])


def test_the_run_and_the_derivation_meet_only_in_the_stored_run():
    assert wrong_arrows(import_graph()) == []


@pytest.mark.parametrize(("module", "imported"), [("harness.row.bottleneck", "harness.sampling"),
                                                   ("harness.execution", "harness.row"),
                                                   ("harness.store.record", "harness.row.usage")])
def test_a_planted_wrong_import_is_named(module, imported):
    graph = import_graph()
    graph[module] = graph[module] | {imported}
    assert wrong_arrows(graph) == [f"{module} ({layer(module)}) imports {imported} ({layer(imported)})"]
