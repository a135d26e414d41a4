"""Adapter discovery: tools/<id>/adapter.py is imported as the package module tools.<id>.adapter; a
folder of extra tools (LTH_EXTRA_TOOLS) the same way under its own name; a broken adapter is skipped
with a warning and never hides the others."""
import uuid

import pytest

from harness import TOOLS_DIR
from harness.errors import HarnessError
from harness.tools.registry import discover, select

ADAPTER = '''
from harness.store.figures import Metrics
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec, ToolOutput


class Extra(ToolAdapter):
    name = "{name}"
    version_command = ["true"]
    concurrency_model = "none"
    timing_resolution_ms = 0.001

    def command(self, spec: RunSpec) -> list[str]:
        return ["true"]

    def parse(self, output: ToolOutput) -> Metrics:
        return Metrics()
'''


@pytest.fixture
def extra_tools(tmp_path, monkeypatch):
    """An empty extra tools folder with a name no other test imports (modules stay in sys.modules)."""
    folder = tmp_path / f"extra_{uuid.uuid4().hex}"
    folder.mkdir()
    monkeypatch.setenv("LTH_EXTRA_TOOLS", str(folder))
    return folder


def add_tool(folder, tool_id: str, source: str) -> None:
    (folder / tool_id).mkdir()
    (folder / tool_id / "adapter.py").write_text(source)


def test_every_tool_is_its_package_module():
    adapters = discover()
    assert {type(a).__module__ for a in adapters.values()} == {
        f"tools.{d.name}.adapter" for d in TOOLS_DIR.iterdir() if (d / "adapter.py").is_file()}
    assert all(a.folder == TOOLS_DIR / type(a).__module__.split(".")[1] for a in adapters.values())


def test_a_folder_with_only_an_adapter_is_discovered(extra_tools):
    """No __init__.py and a name that is no identifier: adding a tool needs one file in one folder."""
    add_tool(extra_tools, "my-tool", ADAPTER.format(name="my-tool"))
    adapters = discover()
    assert adapters["my-tool"].folder == extra_tools / "my-tool"
    assert "wrk" in adapters


def test_a_broken_adapter_is_skipped_with_a_warning(extra_tools, capsys):
    add_tool(extra_tools, "broken", "import no_such_module_lth\n")
    add_tool(extra_tools, "syntax", "class (:\n")
    add_tool(extra_tools, "fine", ADAPTER.format(name="fine"))
    adapters = discover()
    err = capsys.readouterr().err
    assert f"warning: skipping {extra_tools / 'broken' / 'adapter.py'}: ModuleNotFoundError" in err
    assert f"warning: skipping {extra_tools / 'syntax' / 'adapter.py'}: SyntaxError" in err
    assert {name for name, a in adapters.items() if a.folder.parent == extra_tools} == {"fine"}
    assert {name for name, a in adapters.items() if a.folder.parent == TOOLS_DIR} >= {"ab", "wrk", "gatling"}


def test_an_extra_folder_named_like_a_package_is_not_mistaken_for_it(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "tools"
    folder.mkdir()
    add_tool(folder, "wrk", ADAPTER.format(name="impostor"))
    monkeypatch.setenv("LTH_EXTRA_TOOLS", str(folder))
    adapters = discover()
    assert "impostor" not in adapters and "wrk" in adapters
    assert f"warning: skipping {folder / 'wrk' / 'adapter.py'}: ImportError" in capsys.readouterr().err


@pytest.mark.parametrize("home, installed", [(None, True), ("missing", False), ("present", True)])
def test_installed_here_needs_the_program_and_the_install_folder(extra_tools, tmp_path, home, installed):
    """Grinder's program is java: java alone on the machine is not Grinder installed (list-tools and the
    host pre-flight said so wrongly)."""
    add_tool(extra_tools, "java-like", ADAPTER.format(name="java-like"))
    if home == "present":
        (tmp_path / home).mkdir()
    if home:
        (extra_tools / "java-like" / "tool.toml").write_text(f'binary = "true"\nhome = "{tmp_path / home}"\n')
    assert discover()["java-like"].installed_here() is installed


@pytest.mark.parametrize("names, message", [
    ("bombardier,bombardier", "--tools bombardier,bombardier: bombardier is named twice; name each tool once"),
    ("wrk, ab,wrk", "wrk is named twice"),
    (",", "--tools ',' names no tool"),
    ("", "--tools '' names no tool"),
])
def test_a_tool_list_names_each_tool_once(names, message):
    """A tool named twice ran twice into one folder (the second run emptied the first's); none ran nothing."""
    with pytest.raises(HarnessError, match=message):
        select(names)
