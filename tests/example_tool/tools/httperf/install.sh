#!/usr/bin/env bash
# Install of httperf (Debian package), on the host and in the image (tool.toml: package, binary).
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
apt_tool
