#!/usr/bin/env bash
# Install of Tsung (Debian package, with Erlang/OTP 25; tool.toml: version). Idempotent.
# The package also depends on gnuplot, python3-matplotlib and libtemplate-perl, used only by its report
# scripts (tsung_stats.pl, tsplot), never by `tsung start`: through matplotlib they pull scipy, boost
# and gcc (a 1.6-2 GB image). In an image build (LTH_IMAGE=1, set by the Dockerfile) the Erlang
# dependencies come from apt and tsung itself from dpkg --ignore-depends on those three (~0.3 GB).
# A host uses plain apt: dpkg's unmet dependencies would make every later apt-get on it fail.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
VERSION="$(manifest_get version)"
has_version() { command -v tsung >/dev/null && tsung -v 2>/dev/null | grep -q "$VERSION"; }
has_version && exit 0
if [ "${LTH_IMAGE:-0}" = 1 ]; then
  apt_install erlang-base erlang-crypto erlang-eldap erlang-inets erlang-os-mon erlang-public-key \
    erlang-snmp erlang-ssl erlang-xmerl python3 libjs-jquery libjs-underscore
  (cd /tmp && apt-get download tsung)
  dpkg --ignore-depends=gnuplot,python3-matplotlib,libtemplate-perl -i /tmp/tsung_*.deb >/dev/null
  rm -f /tmp/tsung_*.deb
else
  apt_tool
fi
has_version || fail "installed, but not version $VERSION"
