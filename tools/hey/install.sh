#!/usr/bin/env bash
# Install of hey, on the host and in the image: built from the Go module proxy (tools/_lib/go.sh;
# tool.toml: version, package, binary). Idempotent: exits at once when installed.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/go.sh"
go_install
# hey has no version flag: the adapter's version_command runs this (it fails when hey is missing).
BIN="$(manifest_get binary)"
printf '#!/bin/sh\ntest -x %s && echo "hey v%s (%s)"\n' "$BIN" "$(manifest_get version)" "$(manifest_get package)" > "$BIN-version"
chmod 0755 "$BIN-version"
