#!/usr/bin/env bash
# Host install of The Grinder 3.11 into /opt/lth/grinder: its jars from Maven Central (pom.xml,
# Jython 2.5.3 included) in lib/, and in wrap/ the start-up class LthGrinder (Grinder rejects Java
# 17 by a version-string check), the log filter LthQuietRequests and logback-worker.xml.
# Needs a JDK (javac) and Maven: Debian's openjdk-17-jdk-headless and maven when missing.
# Also copies /opt/lth/grinder to tools/grinder/prebuilt/ (git-ignored) for the Dockerfile.
set -euo pipefail
HOME_DIR=/opt/lth/grinder
HERE="$(cd "$(dirname "$0")" && pwd)"
STAMP="3.11 $(cat "$HERE/pom.xml" "$HERE/LthGrinder.java" "$HERE/LthQuietRequests.java" "$HERE/logback-worker.xml" | sha256sum | cut -c1-16)"
copy_prebuilt() {
  if [ "$(cat "$HERE/prebuilt/version" 2>/dev/null)" != "$STAMP" ]; then
    { rm -rf "$HERE/prebuilt" && mkdir -p "$HERE/prebuilt" && cp -r "$HOME_DIR/lib" "$HOME_DIR/wrap" "$HOME_DIR/version" "$HERE/prebuilt/"; } 2>/dev/null \
      || echo "note: could not copy $HOME_DIR to $HERE/prebuilt/: its Docker image will fetch Grinder itself" >&2
  fi
}
if [ "$(cat "$HOME_DIR/version" 2>/dev/null)" = "$STAMP" ]; then copy_prebuilt; exit 0; fi
if ! command -v javac >/dev/null || ! command -v mvn >/dev/null; then
  apt-get update -qq
  mkdir -p /usr/share/man/man1    # openjdk's postinst fails without it on slim images
  DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --no-install-recommends openjdk-17-jdk-headless maven >/dev/null
fi
rm -rf "$HOME_DIR" && mkdir -p "$HOME_DIR/wrap"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cp "$HERE/pom.xml" "$work/"
mvn -q -B -f "$work/pom.xml" -Dmaven.repo.local="${LTH_M2:-/opt/lth/m2}" \
  dependency:copy-dependencies -DoutputDirectory="$HOME_DIR/lib"
javac --release 11 -cp "$HOME_DIR/lib/*" -d "$HOME_DIR/wrap" "$HERE/LthGrinder.java" "$HERE/LthQuietRequests.java"
cp "$HERE/logback-worker.xml" "$HOME_DIR/wrap/"
java -cp "$HOME_DIR/wrap:$HOME_DIR/lib/*" LthGrinder --version | grep -qx "The Grinder 3.11"
echo "$STAMP" > "$HOME_DIR/version"
copy_prebuilt
