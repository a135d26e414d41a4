import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the harness CLI exactly as users do (python -m harness ...)."""
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


# Tests wait for another benchmark on the machine (a developer's) rather than fail on the lock.
os.environ.setdefault("LTH_LOCK_WAIT_S", "900")


def require_root_tools(*commands: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("end-to-end tests need root (network namespaces): run `make test` as root")
    missing = [c for c in commands if shutil.which(c) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}: run `make deps`")


def captured_run(folder: Path) -> tuple["ToolOutput", dict]:
    """A fixture folder captured from a real run (stdout.txt, stderr.txt, meta.json) as the parser
    receives it, with that run's meta.json."""
    import json
    from harness.adapter import RunSpec, ToolOutput
    meta = json.loads((folder / "meta.json").read_text())
    spec = RunSpec(url="http://198.18.0.2:80/style.css", vus=meta["row"]["vus"],
                   duration_s=meta["row"]["duration_s"], out_dir=folder, cpus=2)
    return ToolOutput(spec, (folder / "stdout.txt").read_text(), (folder / "stderr.txt").read_text(), 0), meta
