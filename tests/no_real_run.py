"""The bad-input tests' guard: whatever comes after validation (the runtime made, the pre-flight, the lock,
a results folder created) stops the harness at once with ReachedARealRun, so a bad input that slipped
through never starts a real run (load, Docker, namespaces) on this machine.

tests/guarded_python.py puts the same guard into the `python -m harness` that make starts (PY=...)."""
from __future__ import annotations

import importlib
from collections.abc import Callable

# Where a suite starts, in the order `runner.opened` reaches them (and the lab's hosts, made before its
# suite): bad input is refused before the first.
GUARDED = (("harness.lab", "lab"), ("harness.suite.runner", "make_runtime"), ("harness.suite.preflight", "check"),
           ("harness.suite.runner", "acquire"), ("harness.store.results", "ResultsFolder.create"))


class ReachedARealRun(BaseException):
    """A BaseException: the runner's `except Exception` around a run must not swallow it."""


def install(setattr_: Callable[[object, str, object], None]) -> None:
    """Guard each of GUARDED; ``setattr_``: pytest's monkeypatch.setattr, or setattr in a throw-away process."""
    for module, attribute in GUARDED:
        owner = importlib.import_module(module)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr_(owner, name, _stop(f"{module}.{attribute}"))


def _stop(where: str) -> Callable[..., None]:
    def stopped(*_: object, **__: object) -> None:
        raise ReachedARealRun(f"reached {where}: the input was not refused before a real run would start")
    return stopped
