# Sourced by every tools/<id>/install.sh, on the host (scripts/deps.sh) and in the tool's Docker
# image (its Dockerfile, tools/_docker/, runs the same install.sh), so both install one recipe.
# Sets TOOL_DIR (the tool's folder), TOOL (its id) and LTH_LIB (this folder); defines manifest_get and
# apt_install. The per-kind recipes (go.sh, cargo.sh, npm.sh, maven.sh) are sourced on demand.
TOOL_DIR="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
TOOL="$(basename "$TOOL_DIR")"
LTH_LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# manifest_get KEY [DEFAULT]: KEY's value in tools/<id>/tool.toml, whose flat `key = "value"` lines
# are the TOML subset both this and the harness (tomllib) read; DEFAULT, or an error, when absent.
manifest_get() {
  local value
  value="$(sed -n "s/^$1[[:space:]]*=[[:space:]]*\"\(.*\)\"[[:space:]]*\$/\1/p" "$TOOL_DIR/tool.toml")"
  if [ -n "$value" ]; then echo "$value"
  elif [ $# -ge 2 ]; then echo "$2"
  else echo "$TOOL_DIR/tool.toml: no $1" >&2; return 1
  fi
}

# apt_install PACKAGE...: Debian packages, quietly (openjdk's postinst needs the man1 folder that
# slim images lack).
apt_install() {
  mkdir -p /usr/share/man/man1
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends "$@" >/dev/null
}

# apt_tool [EXTRA_PACKAGE...]: the manifest's Debian `package` when its `binary` is not on PATH.
apt_tool() {
  command -v "$(manifest_get binary)" >/dev/null && return 0
  apt_install "$(manifest_get package)" "$@"
}

fail() { echo "$TOOL: $*" >&2; exit 1; }
