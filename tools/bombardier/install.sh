#!/usr/bin/env bash
# Host install of bombardier v1.2.6: built from the Go module proxy (no GitHub download) with a pinned Go
# toolchain (go-toolchain.sh, itself fetched from the module proxy), from the scratch module next to
# this script: go.mod requires github.com/codesenberg/bombardier@v1.2.6 as a `tool`, go.sum pins every dependency
# (-mod=readonly: nothing is resolved at build time). Static binary (CGO_ENABLED=0) at /opt/lth/bin/bombardier;
# the Dockerfile runs this same script in a build stage. Idempotent: exits at once when installed.
set -euo pipefail
VERSION=v1.2.6
PKG=github.com/codesenberg/bombardier
BIN=/opt/lth/bin/bombardier
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -x "$BIN" ] && [ "$(cat "$BIN.version" 2>/dev/null)" = "$VERSION" ] && exit 0

missing=()
for cmd in curl unzip openssl; do command -v "$cmd" >/dev/null || missing+=("$cmd"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends curl unzip ca-certificates >/dev/null
fi
GO="$("$HERE/go-toolchain.sh")"

work="$(mktemp -d /tmp/lth-bombardier-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp "$HERE/go.mod" "$HERE/go.sum" "$work/"
echo "bombardier: building $PKG@$VERSION with $("$GO" env GOVERSION) (Go module proxy)"
# Module and build caches under /opt/lth/go (shared by the Go-built tools), not in $HOME.
(cd "$work" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
   GOMODCACHE=/opt/lth/go/mod GOCACHE=/opt/lth/go/cache \
   "$GO" build -trimpath -ldflags "-X main.version=$VERSION" -o "$work/bombardier" "$PKG")
"$work/bombardier" --version 2>&1 | grep -q "version $VERSION"
install -D -m 0755 "$work/bombardier" "$BIN"
echo "$VERSION" > "$BIN.version"
