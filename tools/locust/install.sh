#!/usr/bin/env bash
# Install of Locust (PyPI, pinned with hashes in requirements.lock) into its own venv under the
# manifest's home, never the harness's venv, on the host and in the image (tool.toml: version, home).
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
VERSION="$(manifest_get version)"
PREFIX="$(manifest_get home)"
VENV=$PREFIX/venv
[ -x "$VENV/bin/locust" ] && [ "$(cat "$PREFIX/version" 2>/dev/null)" = "$VERSION" ] && exit 0
# Debian's own python3 (not a pyenv/conda shim that happens to be on PATH).
PY=/usr/bin/python3
if [ ! -x "$PY" ] || ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
  apt_install python3 python3-venv ca-certificates
fi
rm -rf "$VENV" "$PREFIX/version"
mkdir -p "$PREFIX"
"$PY" -m venv "$VENV"
# Behind a TLS-intercepting proxy whose CA this machine does not hold (the official Debian image
# holds only Debian's), pip cannot verify PyPI's certificate: the retry skips that check for PyPI's
# two hosts only. Every file is still checked against its sha256 in the lock file (--require-hashes),
# so what gets installed is the same.
set -- --disable-pip-version-check --no-cache-dir --no-deps --require-hashes -r "$TOOL_DIR/requirements.lock"
"$VENV/bin/pip" install -q --retries 1 "$@" \
  || "$VENV/bin/pip" install -q --trusted-host pypi.org --trusted-host files.pythonhosted.org "$@"
"$VENV/bin/locust" --version | grep -q "locust $VERSION" || fail "installed, but not version $VERSION"
echo "$VERSION" > "$PREFIX/version"
