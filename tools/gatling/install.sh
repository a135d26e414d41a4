#!/usr/bin/env bash
# Install of Gatling into the manifest's home from Maven Central, on the host and in the image's
# build stage: the Maven project next to this script (pom.xml + the Java DSL simulation
# src/test/java/lth/LthSimulation.java) is compiled here, once, and its runtime classpath copied, so a benchmark run starts Gatling directly with java
# (no Maven, no compile). Needs a JDK 17 (javac) and Maven (Debian packages). Idempotent.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/maven.sh"
VERSION="$(manifest_get version)"
HOME_DIR="$(manifest_get home)"
M2_REPO=${LTH_M2_REPO:-/opt/lth/m2}     # shared Maven cache (jmeter uses it too)
HERE="$TOOL_DIR"
# The simulation is part of the install: a changed source means a rebuild.
STAMP="$VERSION $(cat "$HERE/pom.xml" "$HERE/src/test/java/lth/"*.java "$HERE/src/test/resources/"* | md5sum | cut -c1-12)"

if [ "$(cat "$HOME_DIR/.lth-version" 2>/dev/null)" = "$STAMP" ] && command -v java >/dev/null; then
  exit 0
fi

jdk_and_maven

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
