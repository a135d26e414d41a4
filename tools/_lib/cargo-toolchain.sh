#!/usr/bin/env bash
# Prints a cargo whose rustc is new enough (>= 1.88: edition 2024) for the pinned oha and drill,
# installing Debian's cargo-web/rustc-web (1.96 in bookworm-security; 1.85 in plain bookworm is too old) if needed.
set -euo pipefail
MIN=1.88
new_enough() {  # $1 = cargo binary
  local v
  v="$("$1" --version 2>/dev/null | awk '{print $2}')" || return 1
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$MIN" "$v" | sort -V | head -1)" = "$MIN" ]
}
for c in "$(command -v cargo || true)" "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" /usr/bin/cargo; do
  [ -n "$c" ] && [ -x "$c" ] && new_enough "$c" && { echo "$c"; exit 0; }
done
echo "no cargo >= $MIN: installing Debian's cargo-web/rustc-web" >&2
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends cargo-web rustc-web gcc libc-dev make ca-certificates >&2
new_enough /usr/bin/cargo || { echo "Debian's cargo-web is older than $MIN" >&2; exit 1; }
echo /usr/bin/cargo
