#!/usr/bin/env bash
# Host install of h2load (Debian package nghttp2-client, nghttp2 1.52.0 on Debian 12).
set -euo pipefail
command -v h2load >/dev/null && exit 0
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends nghttp2-client
