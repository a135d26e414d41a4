"""The machine a results folder was measured on (kept as environment.json beside runs.csv)."""
from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone

from harness import REPO_ROOT


def _first(path: str, key: str) -> str | None:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def git_commit() -> str:
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""
    commit = git("rev-parse", "HEAD") or "unknown"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def collect(runtime_facts: dict) -> dict:
    mem_kib = _first("/proc/meminfo", "MemTotal")
    return {
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.freedesktop_os_release().get("PRETTY_NAME", platform.platform()),
        "cpu_model": _first("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "memory_gib": round(int(mem_kib.split()[0]) / 1024**2, 1) if mem_kib else None,
        "python": platform.python_version(),
        "harness_commit": git_commit(),
        **runtime_facts,
    }
