#!/usr/bin/env bash
# Host install of drill (crates.io, built with cargo into /opt/lth/cargo; ~4-5 min on 2 cores).
# --locked: drill's own Cargo.lock; without it a newer dependency needs a newer rustc.
# drill 0.9.1 needs rustc >= 1.88: rustup's cargo where present, else Debian's cargo-web/rustc-web
# (1.96 in bookworm-security; Debian's plain cargo/rustc 1.63 is too old).
# Also copies the binary to tools/drill/prebuilt/ (git-ignored), which the Dockerfile picks up
# instead of compiling drill again.
set -euo pipefail
VERSION=0.9.1
ROOT=/opt/lth/cargo
HERE="$(cd "$(dirname "$0")" && pwd)"
installed() { [ -x "$ROOT/bin/drill" ] && "$ROOT/bin/drill" --version 2>/dev/null | grep -qx "drill $VERSION"; }
if ! installed; then
  CARGO="$(bash "$HERE/find-cargo.sh")"
  "$CARGO" install --locked --root "$ROOT" drill --version "$VERSION"
  installed
fi
if ! cmp -s "$ROOT/bin/drill" "$HERE/prebuilt/drill" 2>/dev/null; then
  mkdir -p "$HERE/prebuilt" && cp "$ROOT/bin/drill" "$HERE/prebuilt/drill" 2>/dev/null \
    || echo "note: could not copy drill to $HERE/prebuilt/ (read-only checkout?): its Docker image will compile drill" >&2
fi
