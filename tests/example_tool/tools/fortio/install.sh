#!/usr/bin/env bash
# Install of fortio, on the host and in the image: built from the Go module proxy (tools/_lib/go.sh;
# tool.toml: version, package, binary; go.mod and go.sum: scripts/go-lock.sh fortio). Idempotent.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/go.sh"
go_install
