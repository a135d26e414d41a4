#!/usr/bin/env bash
# Build a Debian bookworm base image without any image registry:
# debootstrap a minimal root filesystem and `docker import` it.
# Used only when `debian:bookworm-slim` cannot be pulled; on a normal machine
# the Dockerfiles build FROM the official image instead.
set -euo pipefail
IMAGE="${1:-lth-base:bookworm-2}"
MIRROR="${LTH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "base image $IMAGE already present"; exit 0
fi
command -v debootstrap >/dev/null || { echo "error: debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }

rootfs="$(mktemp -d /tmp/lth-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase --include=netbase,ca-certificates bookworm "$rootfs" "$MIRROR" >/dev/null
# Same sources as the official image, so `apt-get update` inside builds works.
cat > "$rootfs/etc/apt/sources.list" <<SRC
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
SRC
# Certificate authorities the host trusts beyond Debian's (e.g. a TLS-intercepting proxy in front
# of the registries): without them pip/npm/Maven/Go fail inside `docker build`.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null
fi
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
tar -C "$rootfs" -c . | docker import --change 'CMD ["/bin/bash"]' - "$IMAGE" >/dev/null
echo "built base image $IMAGE"
