#!/bin/sh
# Prints the path of a pinned Go toolchain's `go` binary, fetching it once into /opt/lth/go/<version>
# from the Go module proxy: module golang.org/toolchain, the same archive `GOTOOLCHAIN=<version>`
# downloads. No go.dev download, no Debian golang (bookworm's 1.19 is too old for these tools).
# The archive is checked against its go.sum hash (h1:..., as recorded in sum.golang.org).
# Shared by the Go-built tools (hey, vegeta, bombardier, k6): their image (tools/_docker/build-stage.Dockerfile,
# TOOLCHAIN) runs it in a layer the same for each, so Docker's build cache fetches the toolchain once.
set -eu
GO_VERSION=go1.26.8
ROOT=/opt/lth/go/$GO_VERSION
if [ -x "$ROOT/bin/go" ] && [ -f "$ROOT/.lth-verified" ]; then echo "$ROOT/bin/go"; exit 0; fi

case "$(uname -m)" in
  x86_64|amd64) ARCH=amd64; H1='h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=' ;;
  aarch64|arm64) ARCH=arm64; H1='h1:sYL/O6MqS68ML0kjsQ36WoYIpJqkw60TxizWUYUKQMc=' ;;
  *) echo "go-toolchain.sh: no pinned Go toolchain for $(uname -m)" >&2; exit 1 ;;
esac
for cmd in curl unzip openssl; do
  command -v "$cmd" >/dev/null && continue
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends curl unzip openssl ca-certificates >&2
  break
done
# The first proxy of GOPROXY, if one is set (e.g. a company mirror); else the public proxy.
PROXY=$(printf '%s' "${GOPROXY:-}" | cut -d, -f1 | cut -d'|' -f1)
case "$PROXY" in ""|direct|off) PROXY=https://proxy.golang.org ;; esac
MOD="golang.org/toolchain@v0.0.1-$GO_VERSION.linux-$ARCH"

tmp=$(mktemp -d /tmp/lth-go-toolchain.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "go-toolchain.sh: fetching $MOD from $PROXY" >&2
curl -sSfL --retry 3 -o "$tmp/go.zip" "$PROXY/golang.org/toolchain/@v/v0.0.1-$GO_VERSION.linux-$ARCH.zip"
mkdir "$tmp/x" && (cd "$tmp/x" && unzip -q ../go.zip)
# Go's dirhash Hash1: sha256 over the sorted "sha256  name" lines of every file in the zip.
got="h1:$(cd "$tmp/x" && find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum \
          | openssl dgst -sha256 -binary | base64)"
[ "$got" = "$H1" ] || { echo "go-toolchain.sh: $MOD hash $got, expected $H1" >&2; exit 1; }
chmod -R a+rX "$tmp/x/$MOD"
chmod a+x "$tmp/x/$MOD"/bin/* "$tmp/x/$MOD"/pkg/tool/*/*
touch "$tmp/x/$MOD/.lth-verified"
mkdir -p /opt/lth/go && rm -rf "$ROOT" && mv "$tmp/x/$MOD" "$ROOT"
echo "$ROOT/bin/go"
