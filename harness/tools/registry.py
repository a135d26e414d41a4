"""Discovers tool adapters: every ``tools/<name>/adapter.py`` that defines a ToolAdapter subclass."""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType

from harness import TOOLS_DIR
from harness.errors import HarnessError
from harness.tools.adapter import ToolAdapter


def _import_adapter(adapter_file: Path) -> ModuleType:
    """``<dir>/<id>/adapter.py`` is the module ``<dir name>.<id>.adapter``: ``tools.wrk.adapter``. A
    folder of extra tools (LTH_EXTRA_TOOLS) is imported the same way, its parent appended to
    sys.path so that names already importable (``tools``, ``harness``) keep meaning the repository's."""
    tools_dir = adapter_file.parent.parent
    if tools_dir != TOOLS_DIR and str(tools_dir.parent) not in sys.path:
        sys.path.append(str(tools_dir.parent))
    module = importlib.import_module(f"{tools_dir.name}.{adapter_file.parent.name}.adapter")
    if Path(module.__file__).resolve() != adapter_file.resolve():   # another checkout's, or a name clash
        raise ImportError(f"{module.__name__} is {module.__file__}, not {adapter_file}")
    return module


def _tool_dirs(tools_dir: Path) -> list[Path]:
    """tools/ plus any folders in LTH_EXTRA_TOOLS (colon-separated; the test suite's fault tools)."""
    extra = [Path(p) for p in os.environ.get("LTH_EXTRA_TOOLS", "").split(":") if p]
    return [tools_dir, *extra]


def discover(tools_dir: Path = TOOLS_DIR) -> dict[str, ToolAdapter]:
    adapters: dict[str, ToolAdapter] = {}
    adapter_files = [f for d in _tool_dirs(tools_dir) for f in sorted(d.glob("*/adapter.py"))]
    for adapter_file in adapter_files:
        try:
            module = _import_adapter(adapter_file)
        except Exception as exc:  # noqa: BLE001 - one broken adapter must not hide the others
            print(f"warning: skipping {adapter_file}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ToolAdapter) and not inspect.isabstract(cls) and cls.__module__ == module.__name__:
                for adapter in cls().variants():
                    adapter.folder = adapter_file.parent
                    adapters[adapter.name] = adapter
    return adapters


def select(names: str | None, tools_dir: Path = TOOLS_DIR) -> list[ToolAdapter]:
    """Resolve a comma-separated list of tool ids (None or 'all' = every tool)."""
    available = discover(tools_dir)
    if names is None or names == "all":
        return list(available.values())
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted:
        raise HarnessError(f"--tools {names!r} names no tool: give tool ids (lth tools) or 'all'")
    twice = sorted({n for n in wanted if wanted.count(n) > 1})
    if twice:   # a second run of the pair would empty the first one's folder
        raise HarnessError(f"--tools {names}: {', '.join(twice)} is named twice; name each tool once "
                           f"(--repeat N runs every tool N times)")
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise HarnessError(f"unknown tool {', '.join(unknown)}; available: {', '.join(sorted(available))}")
    return [available[n] for n in wanted]


def install_folders(names: str | None, tools_dir: Path = TOOLS_DIR) -> list[Path]:
    """The tool folders whose install.sh the selected ids need: variants (locust-http) map to their
    adapter's folder, each folder once, in the order asked."""
    folders = dict.fromkeys(adapter.folder for adapter in select(names, tools_dir))
    return [folder for folder in folders if (folder / "install.sh").is_file()]
