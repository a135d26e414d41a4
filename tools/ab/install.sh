#!/usr/bin/env bash
# Host install of ApacheBench (Debian package apache2-utils).
set -euo pipefail
command -v ab >/dev/null && exit 0
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends apache2-utils
