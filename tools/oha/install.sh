#!/usr/bin/env bash
# Host install of oha (crates.io, built with cargo into /opt/lth/cargo; ~9-15 min on 2 cores).
# --locked: oha's own Cargo.lock; without it a newer dependency needs a newer rustc.
# oha 1.16.0 needs rustc >= 1.88: rustup's cargo where present, else Debian's cargo-web/rustc-web
# (1.96 in bookworm-security; Debian's plain cargo/rustc 1.63 is too old).
# Also copies the binary to tools/oha/prebuilt/ (git-ignored), which the Dockerfile picks up
# instead of compiling oha again.
set -euo pipefail
VERSION=1.16.0
ROOT=/opt/lth/cargo
HERE="$(cd "$(dirname "$0")" && pwd)"
installed() { [ -x "$ROOT/bin/oha" ] && "$ROOT/bin/oha" --version 2>/dev/null | grep -qx "oha $VERSION"; }
if ! installed; then
  CARGO="$(bash "$HERE/find-cargo.sh")"
  "$CARGO" install --locked --root "$ROOT" oha --version "$VERSION"
  installed
fi
if ! cmp -s "$ROOT/bin/oha" "$HERE/prebuilt/oha" 2>/dev/null; then
  mkdir -p "$HERE/prebuilt" && cp "$ROOT/bin/oha" "$HERE/prebuilt/oha" 2>/dev/null \
    || echo "note: could not copy oha to $HERE/prebuilt/ (read-only checkout?): its Docker image will compile oha" >&2
fi
