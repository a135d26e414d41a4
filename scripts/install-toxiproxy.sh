#!/usr/bin/env bash
# Toxiproxy (the latency fallback where the kernel has no sch_netem), built from the Go module
# proxy at a pinned version into /opt/lth/bin. Idempotent.
set -euo pipefail
VERSION=v2.12.0
BIN=/opt/lth/bin/toxiproxy-server
# `go install` builds report version "git": the pinned version is kept beside the binary.
if [ -x "$BIN" ] && [ "$(cat "$BIN.version" 2>/dev/null)" = "$VERSION" ]; then exit 0; fi
# The Go tools' pinned toolchain (from the Go module proxy): a plain Debian has no Go, and bookworm's is too old.
go="$("$(dirname "$0")/../tools/_lib/go-toolchain.sh")"
mkdir -p /opt/lth/bin
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "deps: building toxiproxy $VERSION with $("$go" env GOVERSION) (Go module proxy)"
GOBIN="$tmp" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE=/opt/lth/go/mod GOCACHE=/opt/lth/go/cache \
  "$go" install "github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION"
install -m 755 "$tmp/server" "$BIN"
echo "$VERSION" > "$BIN.version"
