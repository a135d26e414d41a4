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
