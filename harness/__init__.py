"""lth: run HTTP load-testing tools side by side under the same conditions."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TOOLS_DIR = REPO_ROOT / "tools"
DOCKER_DIR = REPO_ROOT / "docker"
TARGETS_DIR = REPO_ROOT / "targets"
TARGET_DIR = TARGETS_DIR / "nginx"   # the Nginx file server: its config and the served file
# Everything the harness creates (namespaces, veths, containers, networks, images) starts with this.
PREFIX = "lth"
