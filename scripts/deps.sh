#!/usr/bin/env bash
# Installs what the harness needs on a Debian/Ubuntu machine, idempotently:
#   system packages (iproute2, procps, nginx, debootstrap, curl, tcpdump), Toxiproxy, a Docker engine with a daemon
#   running (skipped with NEED_DOCKER=0), the host installs of the selected tools
#   (tools/<id>/install.sh; skipped with NEED_TOOLS=0, as for RUNTIME=docker, whose images install them),
#   and the Python venv (.venv, first: the harness resolves the tool ids).
# Usage: scripts/deps.sh [TOOLS]   (TOOLS: comma-separated ids or "all")
#        DEPS_VENV_ONLY=1 scripts/deps.sh   (the venv alone, no root needed: make test-unit)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${1:-all}"
NEED_DOCKER="${NEED_DOCKER:-1}"
NEED_TOOLS="${NEED_TOOLS:-1}"

die() { echo "deps: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || [ "${DEPS_VENV_ONLY:-0}" = 1 ] || die "run as root (the harness creates network namespaces and installs packages): sudo make ..."
command -v apt-get >/dev/null || die "no apt-get: install iproute2, procps, nginx, docker and python3-venv yourself, then rerun"

apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then apt-get update -qq; apt_updated=1; fi
  echo "deps: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get could not install ${missing[*]}: install them by hand and rerun"
}

# Python venv with the harness and its dependencies. uv (PyPI's installer, pinned, kept in the user's cache and
# shared by every clone) makes and fills it: 8 s in a new clone where venv + pip took 2 min 9 s (2026-11-27,
# 2 cores); venv + pip where uv cannot be had.
UV_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/lth-uv"
UV_VERSION=0.13.9
uv_ready() {
  [[ "$("$UV_DIR/bin/uv" --version 2>/dev/null)" == "uv $UV_VERSION"* ]] && return 0
  rm -rf "$UV_DIR" && python3 -m venv "$UV_DIR" && "$UV_DIR/bin/pip" install -q "uv==$UV_VERSION"
}
venv_by_uv() {
  [ -x .venv/bin/python ] || "$UV_DIR/bin/uv" venv -q --python "$(command -v python3)" .venv
  "$UV_DIR/bin/uv" pip install --python .venv/bin/python -e '.[test]'
}
venv_by_pip() {
  [ -x .venv/bin/pip ] || { rm -rf .venv && python3 -m venv .venv; }
  .venv/bin/pip install -e '.[test]'
}
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  echo "deps: installing the harness's Python dependencies into .venv (log: .venv/pip.log)"
  python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
  log=$(mktemp) venv_failed=0
  { uv_ready && venv_by_uv; } >"$log" 2>&1 || venv_by_pip >>"$log" 2>&1 || venv_failed=1
  mkdir -p .venv && mv "$log" .venv/pip.log
  [ "$venv_failed" = 0 ] || { tail -5 .venv/pip.log >&2; die "pip could not install the harness's Python dependencies (.venv/pip.log)"; }
  touch .venv/.installed
fi
[ "${DEPS_VENV_ONLY:-0}" = 1 ] && exit 0

# The harness's registry maps tool ids to install folders (a variant such as locust-http installs its
# adapter's folder): before anything is installed, so an unknown id stops at once with its one line
# (exit status 2). DEPS_RESOLVE_ONLY=1 prints the folders and stops there.
folders=$(.venv/bin/python -m harness install-folders "$TOOLS") || exit 2
if [ "${DEPS_RESOLVE_ONLY:-0}" = 1 ]; then echo "$folders"; exit 0; fi

# Compiles (install kinds go: the Go tools, one shared build cache, k6 ~4 min; cargo: oha and drill, 5-15 min
# each on 2 cores) start now, in the background, and overlap the installs below, which mostly wait on the
# network; they are waited for at the end. The Go toolchain and the cargo they use are fetched (cargo: found or
# installed with apt) first, so that only this script ever runs apt.
compile_pid=""
compile_log=/var/log/lth-deps-compile.log
of_kind() { for folder in $folders; do grep -qx "kind = \"$1\"" "$folder/tool.toml" && echo "$folder"; done || true; }
compiled=$(of_kind go; of_kind cargo)
if [ "$NEED_TOOLS" = 0 ]; then
  # The Docker runtime's images install the tools; the compiled ones are compiled here all the same, as the
  # images' build cache (tools/<id>/prebuilt, tools/_lib/go.sh and cargo.sh): once per machine, overlapping
  # the installs.
  echo "deps: the tools are not installed on this machine: the Docker runtime installs them in their images" \
       "${compiled:+(compiled here once for them: $(echo $compiled | xargs -n1 basename | paste -sd, -))}"
  folders="$compiled"
fi
if [ -n "$compiled" ]; then
  [ -z "$(of_kind go)" ] || tools/_lib/go-toolchain.sh >/dev/null
  [ -z "$(of_kind cargo)" ] || tools/_lib/cargo-toolchain.sh >/dev/null
  names=$(echo $compiled | xargs -n1 basename | paste -sd, -)
  # The compiles hold this lock until they end (flock: inherited by the background job, released when it
  # ends): with NEED_TOOLS=0 nothing here waits for them, the Docker runtime's image builds do
  # (harness/runtimes/docker.py), and so does a host run of a tool not yet installed (harness/runtimes/host.py;
  # both: harness/runtimes/compiles.py). Another deps.sh's compiles still running: they end first.
  exec 9>/var/lock/lth-compile.lock
  flock -n 9 || { echo "deps: waiting for the compile another scripts/deps.sh runs (log: $compile_log)"; flock 9; }
  if [ "$NEED_TOOLS" = 0 ]; then
    echo "deps: compiling $names in the background where missing (log: $compile_log, which ends with a line" \
         "saying done or failed; scripts/wait-compiles.sh waits for it)"
  else
    echo "deps: compiling $names in the background where missing, while the rest installs; this waits for it at" \
         "the end (log: $compile_log)"
  fi
  # The Go tools and the cargo tools in two streams side by side (their downloads overlap); the subshell fails
  # when either stream does, and its last line says "done" or "failed" (scripts/wait-compiles.sh reads it).
  install_each() { for folder in "$@"; do "$folder/install.sh" || { echo "deps: installing $(basename "$folder") failed" >&2; return 1; }; done; }
  ( started=$(date +%s) status=done
    install_each $(of_kind go) & go_stream=$!
    install_each $(of_kind cargo) || status=failed
    wait $go_stream || status=failed
    echo "deps: compile of $names $status after $(( $(date +%s) - started )) s ($(date -u +%H:%M:%SZ))"
    [ $status = done ]
  ) >"$compile_log" 2>&1 &
  compile_pid=$!
  exec 9>&-
fi

apt_install iproute2 procps nginx debootstrap curl ca-certificates git tcpdump

# Docker: use a daemon that answers; otherwise install Debian's engine and start one whose
# networks stay in 198.18.0.0/15 (the harness's own networks use 198.18.0.0/16).
if [ "$NEED_DOCKER" = 1 ] && ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  command -v dockerd >/dev/null || apt_install docker.io
  if ! docker version >/dev/null 2>&1; then
    echo "deps: starting dockerd (log: /var/log/lth-dockerd.log)"
    setsid dockerd --bip 198.19.0.1/24 --default-address-pool base=198.19.128.0/17,size=24 \
      >/var/log/lth-dockerd.log 2>&1 < /dev/null &
    for _ in $(seq 60); do docker version >/dev/null 2>&1 && break; sleep 1; done
    docker version >/dev/null 2>&1 || die "dockerd did not start: see /var/log/lth-dockerd.log"
  fi
fi
if [ "$NEED_DOCKER" = 1 ] && ! docker compose version >/dev/null 2>&1; then
  command -v docker-compose >/dev/null || apt_install docker-compose
fi

# BUILD_IMAGES=1 (make test): the Docker images of the selected tools are built now, in the background, beside
# the installs and the compiles (the compiled tools' images wait for their binaries), instead of by the suite's
# first Docker run after them. On a fresh 2-core machine this took installs + images from 19.0 + ~13.5 min to
# 27.6 (tests/README.md "Ninth pass"): the builds share the compiles' CPUs, so they overlap only in part.
images_pid=""
images_log=/var/log/lth-deps-images.log
if [ "${BUILD_IMAGES:-0}" = 1 ] && [ "$NEED_DOCKER" = 1 ]; then
  echo "deps: building the Docker images in the background (log: $images_log)"
  .venv/bin/python -m harness build-images "$TOOLS" >"$images_log" 2>&1 &
  images_pid=$!
fi

# The two-machine tests make a second host on this machine with its own sshd (harness/lab.py);
# sshd is only ever started by those tests (own config and keys; on a systemd machine Debian's
# package also enables the ssh service: `systemctl disable --now ssh` if unwanted).
[ "${NEED_SSHD:-0}" = 1 ] && apt_install openssh-server openssh-client

# The report test opens the HTML report in a headless browser.
[ "${NEED_BROWSER:-0}" = 1 ] && apt_install chromium fonts-dejavu-core

# The targets' servers (targets/<id>/target.toml `packages`: Nginx's echo module, HAProxy, Caddy) and
# openssl for a TLS scenario's throw-away certificate. The harness starts its own instances in its own
# namespace or containers; Debian's packages would also start and enable system services on a systemd
# machine, so a policy-rc.d keeps them from starting and the new ones are disabled.
target_packages=$(.venv/bin/python -m harness target-packages)
missing_targets=()
for pkg in $target_packages openssl; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing_targets+=("$pkg")
done
if [ ${#missing_targets[@]} -gt 0 ]; then
  policy_made=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; policy_made=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt_install "${missing_targets[@]}"
  if [ $policy_made = 1 ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    for service in haproxy caddy; do
      [[ " ${missing_targets[*]} " == *" $service "* ]] && systemctl disable --now "$service" >/dev/null 2>&1 || true
    done
  fi
fi

# Toxiproxy: the RTT fallback where the kernel has no sch_netem.
scripts/install-toxiproxy.sh || echo "deps: warning: Toxiproxy not installed: RTT shaping then needs netem (--shaper netem)" >&2

# Host installs of the selected tools (folders resolved above); the compiles started above go on meanwhile.
for folder in $folders; do
  [[ $'\n'"$compiled"$'\n' == *$'\n'"$folder"$'\n'* ]] && continue
  "$folder/install.sh" || die "installing $(basename "$folder") failed ($folder/install.sh)"
done
if [ -n "$compile_pid" ] && [ "$NEED_TOOLS" = 0 ]; then
  echo "deps: the compile of $names goes on in the background (log: $compile_log): the images that need it wait" \
       "for it; scripts/wait-compiles.sh waits for it and says whether it was done or failed"
elif [ -n "$compile_pid" ]; then
  echo "deps: waiting for the compile of $names (log: $compile_log)"
  wait "$compile_pid" || { tail -20 "$compile_log" >&2; die "the compile of $names failed: $compile_log"; }
  tail -1 "$compile_log"
fi
if [ -n "$images_pid" ] && ! wait "$images_pid"; then
  tail -5 "$images_log" >&2
  echo "deps: warning: some Docker images were not built ($images_log): the Docker runs build them again" >&2
fi
