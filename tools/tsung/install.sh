#!/usr/bin/env bash
# Host install of Tsung 1.7.0 (Debian package; pulls Erlang, ~650 MB).
set -euo pipefail
command -v tsung >/dev/null && tsung -v 2>/dev/null | grep -q 1.7.0 && exit 0
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends tsung
tsung -v | grep -q "1.7.0"
