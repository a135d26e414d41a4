#!/usr/bin/env bash
# Install of Apache JMeter (non-GUI) into the manifest's home, on the host and in the image's build
# stage, assembled from Maven Central artifacts with maven-dependency-plugin (pom.xml next to this
# script): no binary-distribution download. Needs a JDK 17 and Maven (Debian packages). Idempotent.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/maven.sh"
VERSION="$(manifest_get version)"
HOME_DIR="$(manifest_get home)"
M2_REPO=${LTH_M2_REPO:-/opt/lth/m2}     # shared Maven cache (gatling uses it too)
HERE="$TOOL_DIR"
STAMP="$VERSION $(cat "$HERE/pom.xml" "$HERE/jmeter.sh" | md5sum | cut -c1-12)"   # a changed assembly means a rebuild

if [ "$(cat "$HOME_DIR/.lth-version" 2>/dev/null)" = "$STAMP" ] && command -v java >/dev/null; then
  exit 0
fi

jdk_and_maven

work="$(mktemp -d /tmp/lth-jmeter-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp "$HERE/pom.xml" "$work/"
mvn -B -q -ntp -Dstyle.color=never -f "$work/pom.xml" -Dmaven.repo.local="$M2_REPO" -Djmeter.version="$VERSION" \
    -Djmeter.home="$work/home" package
mkdir -p "$work/home/lib/junit"                     # JMeter's launcher expects it
install -m 0755 "$HERE/jmeter.sh" "$work/home/bin/jmeter"
echo "$STAMP" > "$work/home/.lth-version"
rm -rf "$HOME_DIR" && mkdir -p "$(dirname "$HOME_DIR")" && mv "$work/home" "$HOME_DIR"
echo "jmeter $VERSION installed in $HOME_DIR"
