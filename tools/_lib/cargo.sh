# cargo_install: the manifest's `package` crate at `version` from crates.io into the root of its
# `binary` (/opt/lth/cargo), with `cargo install --locked` (the crate's own Cargo.lock: without it a
# newer dependency needs a newer rustc) and a cargo new enough (cargo-toolchain.sh); ~5-15 min on 2 cores.
# Fast path, for host and image alike: prebuilt/<id> (git-ignored; in the image's build context, which
# tools/.dockerignore does not exclude) is used when it reports the manifest's version.
# install.sh copies the host's binary there, so the image (same Debian release and glibc) runs the
# host's binary instead of compiling it again.
# The manifest's `features` (oha: http3), when it has some, are recorded beside the binary and its prebuilt copy
# (<binary>.features): a binary built without them is built again.
cargo_install() {
  local bin version prebuilt features
  bin="$(manifest_get binary)"; version="$(manifest_get version)"; prebuilt="$TOOL_DIR/prebuilt/$TOOL"
  features="$(manifest_get features "")"
  built() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx "$TOOL $version" \
            && [ "$(cat "$1.features" 2>/dev/null)" = "$features" ]; }
  if ! built "$bin" && built "$prebuilt"; then
    install -D -m 0755 "$prebuilt" "$bin" && cp "$prebuilt.features" "$bin.features" 2>/dev/null || true
  fi
  if ! built "$bin"; then
    "$("$LTH_LIB/cargo-toolchain.sh")" install --locked --force --root "${bin%/bin/*}" "$(manifest_get package)" \
      --version "$version" ${features:+--features "$features"}
    if [ -n "$features" ]; then echo "$features" > "$bin.features"; else rm -f "$bin.features"; fi
    built "$bin" || fail "$bin does not report version $version${features:+ with features $features}"
  fi
  if ! cmp -s "$bin" "$prebuilt" || [ "$(cat "$bin.features" 2>/dev/null)" != "$(cat "$prebuilt.features" 2>/dev/null)" ]; then
    { mkdir -p "$TOOL_DIR/prebuilt" && cp "$bin" "$prebuilt" \
      && if [ -n "$features" ]; then cp "$bin.features" "$prebuilt.features"; else rm -f "$prebuilt.features"; fi; } \
      2>/dev/null \
      || echo "note: could not copy $TOOL to $TOOL_DIR/prebuilt/ (read-only checkout?): its Docker image will compile it" >&2
  fi
}
