#!/bin/sh
# npm for the npm-installed tools (artillery, autocannon): Debian's, when missing. npm.sh runs it on the
# host; in an image it runs in the build stage's toolchain layer (tools/_docker/build-stage.Dockerfile,
# TOOLCHAIN), the same for every tool of the kind, so Docker's build cache installs it once per machine.
# The tools run on their own pinned Node (npm.sh), not on this one.
set -eu
command -v npm >/dev/null && exit 0
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends npm ca-certificates >/dev/null
