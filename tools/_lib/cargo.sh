# cargo_install: the manifest's `package` crate at `version` from crates.io into the root of its
# `binary` (/opt/lth/cargo), with `cargo install --locked` (the crate's own Cargo.lock: without it a
# newer dependency needs a newer rustc) and a cargo new enough (cargo-toolchain.sh); ~5-15 min on 2 cores.
# Fast path, for host and image alike: prebuilt/<id> (git-ignored; in the image's build context, which
# tools/.dockerignore does not exclude) is used when it reports the manifest's version.
# install.sh copies the host's binary there, so the image (same Debian release and glibc) runs the
# host's binary instead of compiling it again.
cargo_install() {
  local bin version prebuilt
  bin="$(manifest_get binary)"; version="$(manifest_get version)"; prebuilt="$TOOL_DIR/prebuilt/$TOOL"
  reports_version() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx "$TOOL $version"; }
  if ! reports_version "$bin" && reports_version "$prebuilt"; then
    install -D -m 0755 "$prebuilt" "$bin"
  fi
  if ! reports_version "$bin"; then
    "$("$LTH_LIB/cargo-toolchain.sh")" install --locked --root "${bin%/bin/*}" "$(manifest_get package)" --version "$version"
    reports_version "$bin" || fail "$bin does not report version $version"
  fi
  if ! cmp -s "$bin" "$prebuilt"; then
    { mkdir -p "$TOOL_DIR/prebuilt" && cp "$bin" "$prebuilt"; } 2>/dev/null \
      || echo "note: could not copy $TOOL to $TOOL_DIR/prebuilt/ (read-only checkout?): its Docker image will compile it" >&2
  fi
}
