#!/usr/bin/env bash
# Install of oha, on the host and in the image: crates.io, cargo install --locked into /opt/lth/cargo,
# or the host's binary from prebuilt/ (tools/_lib/cargo.sh; tool.toml: version, package, binary).
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/cargo.sh"
cargo_install
