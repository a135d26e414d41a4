#!/usr/bin/env bash
# The netem VM tier's own machine (make test-netem): Debian's stock kernel, which has sch_netem,
# booted by virtme-ng under QEMU with this machine's root file system (tests/test_netem_vm.py).
# Everything from Debian's apt and PyPI, idempotently:
#   qemu-system-x86, busybox-static (virtme-ng's initramfs), udev (names the virtio ports the
#   command's output comes back on), kmod (depmod);
#   the kernel package linux-image-amd64 depends on, unpacked into /opt/lth/vm-kernel, its modules
#   copied to /lib/modules/<version> (where virtme-ng looks for them);
#   virtme-ng (pinned) in its own venv, /opt/lth/vng.
set -euo pipefail
VNG_VERSION=1.42
KERNEL_DIR=/opt/lth/vm-kernel
VNG_DIR=/opt/lth/vng
die() { echo "install-vm: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it installs packages and kernel modules)"

packages=(qemu-system-x86 busybox-static udev kmod python3-venv)
missing=()
for pkg in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-vm: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get could not install ${missing[*]}"
fi

if [ ! -f "$KERNEL_DIR/version" ]; then
  package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$package" ] || { apt-get update -qq; package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'); }
  [ -n "$package" ] || die "apt knows no linux-image-amd64: add Debian's main archive to the sources"
  echo "install-vm: downloading $package (Debian's stock kernel, with sch_netem)"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download "$package" 2>/dev/null) || die "apt-get download $package failed"
  rm -rf "$KERNEL_DIR.new" && mkdir -p "$KERNEL_DIR.new"
  dpkg-deb -x "$tmp"/*.deb "$KERNEL_DIR.new"
  version=$(ls "$KERNEL_DIR.new/lib/modules")
  [ -f "$KERNEL_DIR.new/lib/modules/$version/kernel/net/sched/sch_netem.ko" ] || die "$package has no sch_netem.ko"
  echo "$version" > "$KERNEL_DIR.new/version"
  rm -rf "$KERNEL_DIR" && mv "$KERNEL_DIR.new" "$KERNEL_DIR"
fi
version=$(cat "$KERNEL_DIR/version")
if [ ! -f "/lib/modules/$version/modules.dep" ]; then
  mkdir -p /lib/modules                      # cp -r into a missing /lib/modules makes the wrong tree
  rm -rf "/lib/modules/$version"
  cp -a "$KERNEL_DIR/lib/modules/$version" /lib/modules/
  depmod "$version"
fi

if [ "$("$VNG_DIR/bin/vng" --version 2>/dev/null | awk '{print $NF}')" != "$VNG_VERSION" ]; then
  echo "install-vm: installing virtme-ng $VNG_VERSION into $VNG_DIR"
  rm -rf "$VNG_DIR"
  python3 -m venv "$VNG_DIR"
  "$VNG_DIR/bin/pip" install -q "virtme-ng==$VNG_VERSION" || die "pip could not install virtme-ng $VNG_VERSION"
fi
