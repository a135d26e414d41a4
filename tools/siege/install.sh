#!/usr/bin/env bash
# Host install of siege (Debian package, 4.0.7 on Debian 12).
set -euo pipefail
command -v siege >/dev/null && exit 0
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends siege
