#!/usr/bin/env bash
# Host install of Gatling 3.15.1 into /opt/lth/gatling from Maven Central: the Maven project next to
# this script (pom.xml + the Java DSL simulation src/test/java/lth/LthSimulation.java) is compiled
# here, once, and its runtime classpath copied, so a benchmark run starts Gatling directly with java
# (no Maven, no compile). Needs a JDK 17 (javac) and Maven (Debian packages). Idempotent.
set -euo pipefail
VERSION=3.15.1
HOME_DIR=/opt/lth/gatling
M2_REPO=${LTH_M2_REPO:-/opt/lth/m2}     # shared Maven cache (jmeter uses it too)
HERE="$(cd "$(dirname "$0")" && pwd)"
# The simulation is part of the install: a changed source means a rebuild.
STAMP="$VERSION $(cat "$HERE/pom.xml" "$HERE/src/test/java/lth/"*.java "$HERE/src/test/resources/"* | md5sum | cut -c1-12)"

if [ "$(cat "$HOME_DIR/.lth-version" 2>/dev/null)" = "$STAMP" ] && command -v java >/dev/null; then
  exit 0
fi

if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
  apt-get update -qq
  mkdir -p /usr/share/man/man1   # openjdk's postinst links man pages; slim images lack the folder
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends \
    openjdk-17-jdk-headless maven ca-certificates netbase >/dev/null
fi

work="$(mktemp -d /tmp/lth-gatling-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp -r "$HERE/pom.xml" "$HERE/src" "$work/"
mvn -B -q -ntp -Dstyle.color=never -f "$work/pom.xml" -Dmaven.repo.local="$M2_REPO" \
    -Dgatling.version="$VERSION" -Dgatling.home="$work/home" test-compile dependency:copy-dependencies
cp -r "$work/target/test-classes" "$work/home/classes"
install -D -m 0755 "$HERE/gatling.sh" "$work/home/bin/gatling"
echo "$STAMP" > "$work/home/.lth-version"
rm -rf "$HOME_DIR" && mkdir -p "$(dirname "$HOME_DIR")" && mv "$work/home" "$HOME_DIR"
echo "gatling $VERSION installed in $HOME_DIR"
