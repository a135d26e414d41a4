#!/usr/bin/env bash
# Host install of wrk (Debian package).
set -euo pipefail
command -v wrk >/dev/null && exit 0
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends wrk netbase
