#!/usr/bin/env bash
# Install of ApacheBench (Debian package apache2-utils), on the host and in the image (tool.toml: package, binary).
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
apt_tool
