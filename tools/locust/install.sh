#!/usr/bin/env bash
# Host install of Locust (PyPI, pinned with hashes in requirements.lock) into its own venv,
# never the harness's venv. Same path as in the Docker image, so the command line is identical.
set -euo pipefail
VERSION=2.47.0
PREFIX=/opt/lth/locust
VENV=$PREFIX/venv
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -x "$VENV/bin/locust" ] && [ "$(cat "$PREFIX/version" 2>/dev/null)" = "$VERSION" ] && exit 0
# Debian's own python3 (not a pyenv/conda shim that happens to be on PATH).
PY=/usr/bin/python3
if [ ! -x "$PY" ] || ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends python3 python3-venv >/dev/null
fi
rm -rf "$VENV" "$PREFIX/version"
mkdir -p "$PREFIX"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps --require-hashes \
  -r "$HERE/requirements.lock"
"$VENV/bin/locust" --version | grep -q "locust $VERSION"
echo "$VERSION" > "$PREFIX/version"
