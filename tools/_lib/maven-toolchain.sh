#!/bin/sh
# javac and mvn for the Maven Central tools (jmeter, gatling, grinder): Debian's openjdk-17-jdk-headless
# and maven, when missing. maven.sh runs it on the host; in an image it runs in the build stage's
# toolchain layer (tools/_docker/build-stage.Dockerfile, TOOLCHAIN), the same for every tool of the kind,
# so Docker's build cache installs it once per machine. (openjdk's postinst needs the man1 folder.)
set -eu
command -v javac >/dev/null && command -v mvn >/dev/null && exit 0
mkdir -p /usr/share/man/man1
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends openjdk-17-jdk-headless maven \
  ca-certificates netbase >/dev/null
