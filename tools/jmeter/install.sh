#!/usr/bin/env bash
# Host install of Apache JMeter 5.6.3 (non-GUI) into /opt/lth/jmeter, assembled from Maven Central
# artifacts with maven-dependency-plugin (pom.xml next to this script): no binary-distribution
# download. Needs a Java 17 runtime and Maven (both Debian packages). Idempotent.
set -euo pipefail
VERSION=5.6.3
HOME_DIR=/opt/lth/jmeter
M2_REPO=${LTH_M2_REPO:-/opt/lth/m2}     # shared Maven cache (gatling uses it too)
HERE="$(cd "$(dirname "$0")" && pwd)"
STAMP="$VERSION $(cat "$HERE/pom.xml" "$HERE/jmeter.sh" | md5sum | cut -c1-12)"   # a changed assembly means a rebuild

if [ "$(cat "$HOME_DIR/.lth-version" 2>/dev/null)" = "$STAMP" ] && command -v java >/dev/null; then
  exit 0
fi

if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  apt-get update -qq
  mkdir -p /usr/share/man/man1   # openjdk's postinst links man pages; slim images lack the folder
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends \
    openjdk-17-jre-headless maven ca-certificates netbase >/dev/null
fi

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
