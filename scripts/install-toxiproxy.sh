#!/usr/bin/env bash
# Toxiproxy (the latency fallback where the kernel has no sch_netem), built from the Go module
# proxy at a pinned version into /opt/lth/bin. Idempotent.
set -euo pipefail
VERSION=v2.12.0
BIN=/opt/lth/bin/toxiproxy-server
# `go install` builds report version "git": the pinned version is kept beside the binary.
if [ -x "$BIN" ] && [ "$(cat "$BIN.version" 2>/dev/null)" = "$VERSION" ]; then exit 0; fi
command -v go >/dev/null || { echo "deps: toxiproxy needs Go >= 1.22 to build (or a kernel with sch_netem): install Go" >&2; exit 1; }
mkdir -p /opt/lth/bin
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "deps: building toxiproxy $VERSION (Go module proxy)"
GOBIN="$tmp" GOFLAGS=-mod=mod go install "github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION"
install -m 755 "$tmp/server" "$BIN"
echo "$VERSION" > "$BIN.version"
