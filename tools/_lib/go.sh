# go_install: builds the manifest's `package` at v<version> from the Go module proxy (no GitHub
# download) with the pinned toolchain (go-toolchain.sh), from the scratch module next to install.sh:
# go.mod requires the package's module as a `tool`, go.sum pins every dependency (-mod=readonly:
# nothing is resolved at build time). A static binary (CGO_ENABLED=0) at the manifest's `binary`;
# `version_var`, when set, is the Go variable `-X` sets to v<version> so the tool reports it.
# Idempotent: builds nothing when <binary>.version says v<version>.
# Fast path, for host and image alike, as cargo.sh's: prebuilt/<id> and prebuilt/<id>.version (git-ignored;
# in the image's build context: tools/.dockerignore leaves it in). The host's install leaves its binary there, so
# the image copies it instead of fetching the toolchain and compiling again (k6: ~4 min on 2 cores).
go_install() {
  local prebuilt="$TOOL_DIR/prebuilt/$TOOL" bin version
  bin="$(manifest_get binary)"; version="v$(manifest_get version)"
  at_version() { [ -x "$1" ] && [ "$(cat "$1.version" 2>/dev/null)" = "$version" ]; }
  if ! at_version "$bin" && at_version "$prebuilt"; then
    install -D -m 0755 "$prebuilt" "$bin" && cp "$prebuilt.version" "$bin.version"
  fi
  at_version "$bin" || go_build "$bin" "$version"
  if ! cmp -s "$bin" "$prebuilt" || ! at_version "$prebuilt"; then
    { mkdir -p "$TOOL_DIR/prebuilt" && cp "$bin" "$prebuilt" && cp "$bin.version" "$prebuilt.version"; } 2>/dev/null \
      || echo "note: could not copy $TOOL to $TOOL_DIR/prebuilt/ (read-only checkout?): its Docker image will compile it" >&2
  fi
}

go_build() {  # $1 = the binary to write, $2 = v<version>
  local pkg bin="$1" version="$2" var ldflags="" go work
  pkg="$(manifest_get package)"
  var="$(manifest_get version_var "")"
  [ -z "$var" ] || ldflags="-X $var=$version"
  go="$("$LTH_LIB/go-toolchain.sh")"
  work="$(mktemp -d "/tmp/lth-$TOOL-build.XXXXXX")"
  cp "$TOOL_DIR/go.mod" "$TOOL_DIR/go.sum" "$work/"
  echo "$TOOL: building $pkg@$version with $("$go" env GOVERSION) (Go module proxy)"
  # Module and build caches under /opt/lth/go (shared by the Go-built tools), not in $HOME.
  (cd "$work" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
     GOMODCACHE=/opt/lth/go/mod GOCACHE=/opt/lth/go/cache \
     "$go" build -trimpath -ldflags "$ldflags" -o "$work/$TOOL" "$pkg")
  # The build info names the module version compiled in, whatever the tool's own version flag says.
  "$go" version -m "$work/$TOOL" | awk -v p="$pkg" -v v="$version" '($1 == "mod" || $1 == "dep") && $2 == p && $3 == v { ok = 1 } END { exit !ok }' \
    || fail "the binary built is not $pkg $version"
  install -D -m 0755 "$work/$TOOL" "$bin"
  echo "$version" > "$bin.version"
  rm -rf "$work"
}
