#!/usr/bin/env bash
# Makes a Go tool's go.mod and go.sum in tools/<id>/, as `npm install --package-lock-only` makes an npm tool's
# package-lock.json: the scratch module tools/_lib/go.sh builds from (`module lth.local/<id>-build`, `tool
# <package>`, the package's module required at v<version>, every dependency's hash in go.sum), resolved from
# tool.toml's `package` and `version` by the pinned Go toolchain (tools/_lib/go-toolchain.sh) through the Go
# module proxy. It checks that the build will find every package it needs in go.sum (go.sh builds with
# -mod=readonly) and installs nothing. Run as root, from anywhere (the toolchain and module cache are
# /opt/lth/go's, shared with go.sh).
#
# Usage: scripts/go-lock.sh <id>           lock tool.toml's version
#        scripts/go-lock.sh <id> --older   when the proxy refuses a module that version needs (403, 410): try
#                                          the tool's earlier releases, newest first, and write the first that
#                                          locks into tool.toml's `version` as well
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "go-lock: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] && [ "${2:---older}" = --older ] || die "usage: scripts/go-lock.sh <id> [--older]"
id=$1 older=${2:-}
dir=tools/$id
[ -f "$dir/tool.toml" ] || die "no $dir/tool.toml: write the manifest first (tools/README.md, step 2)"
get() { sed -n "s/^$1[[:space:]]*=[[:space:]]*\"\(.*\)\"[[:space:]]*\$/\1/p" "$dir/tool.toml"; }
[ "$(get kind)" = go ] || die "$dir/tool.toml: kind is \"$(get kind)\", not \"go\""
package=$(get package) version=$(get version)
[ -n "$package" ] && [ -n "$version" ] || die "$dir/tool.toml needs package and version"

go=$(tools/_lib/go-toolchain.sh)
export GOTOOLCHAIN=local GOMODCACHE=/opt/lth/go/mod GOCACHE=/opt/lth/go/cache GOFLAGS=-mod=mod
work=$(mktemp -d /tmp/lth-go-lock.XXXXXX)
trap 'rm -rf "$work"' EXIT

# lock VERSION: go.mod and go.sum in $work/<VERSION>/, the go command's output in its log; fails as the go
# command does.
lock() {
  local at="$work/$1"
  mkdir -p "$at"
  (cd "$at" && "$go" mod init "lth.local/$id-build" && "$go" get -tool "$package@v$1" \
     && GOFLAGS=-mod=readonly "$go" list -deps "$package" >/dev/null) >"$at/log" 2>&1
}
# The first module the proxy refused, as the go command reports it ("<module>@<version>: reading <url>: 403 ...").
refused() { grep -oE '[^[:space:]]+@v[^:[:space:]]+: reading [^[:space:]]+: (403|404|410)[^"]*' "$work/$1/log" | head -1; }
# The module holding the package: its path, or the longest prefix the proxy lists versions of.
module_of() {
  local path=$package
  while [ "$path" != "${path%/*}" ]; do
    "$go" list -m -versions "$path" >/dev/null 2>&1 && { echo "$path"; return; }
    path=${path%/*}
  done
  echo "$package"
}
releases_before() {  # the module's releases (no pre-releases) older than $1, newest first
  "$go" list -m -versions "$(module_of)" 2>/dev/null | tr ' ' '\n' | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' \
    | sed 's/^v//' | { cat; echo "$1"; } | sort -uV | sed "/^$1\$/,\$d" | tac
}
write() {  # $1 = the version locked
  cp "$work/$1/go.mod" "$work/$1/go.sum" "$dir/"
  echo "go-lock: wrote $dir/go.mod and $dir/go.sum: $package v$1 and $(grep -c ' h1:' "$dir/go.sum") hashes" \
       "(next: make deps TOOLS=$id RUNTIME=host)"
}

echo "go-lock: resolving $package@v$version with $("$go" env GOVERSION) (Go module proxy)"
if lock "$version"; then write "$version"; exit 0; fi
why=$(refused "$version")
if [ -z "$why" ]; then
  tail -20 "$work/$version/log" >&2
  die "the go command could not resolve $package@v$version (above)"
fi
echo "go-lock: the Go module proxy refuses ${why%%: reading*} (${why##*: }), which $package v$version needs" >&2
if [ "$older" != --older ]; then
  echo "go-lock: pin an older release of $id. Its releases, newest first: $(releases_before "$version" | head -8 | paste -sd' ' -)" >&2
  echo "go-lock: \`scripts/go-lock.sh $id --older\` tries them in turn and writes the first that locks into $dir/tool.toml" >&2
  exit 1
fi
tried=0
for candidate in $(releases_before "$version"); do
  [ $tried -lt 40 ] || break
  tried=$((tried + 1))
  if lock "$candidate"; then
    sed -i "s/^version = \"$version\"\$/version = \"$candidate\"/" "$dir/tool.toml"
    grep -qx "version = \"$candidate\"" "$dir/tool.toml" || die "could not write version = \"$candidate\" into $dir/tool.toml"
    echo "go-lock: $package v$candidate locks: $dir/tool.toml's version is now \"$candidate\" (was \"$version\"; say so in $dir/README.md)"
    write "$candidate"
    exit 0
  fi
  reason=$(refused "$candidate")
  echo "go-lock: v$candidate does not lock: ${reason:-$(tail -1 "$work/$candidate/log")}" >&2
done
die "none of the $tried releases before v$version locks: pick another tool or version by hand"
