#!/usr/bin/env bash
# Install of The Grinder into the manifest's home, on the host and in the image's build stage: its
# jars from Maven Central (pom.xml, Jython 2.5.3 included) in lib/, and in wrap/ the start-up class
# LthGrinder (Grinder rejects Java 17 by a version-string check), the log filter LthQuietRequests and
# logback-worker.xml. Needs a JDK (javac) and Maven: Debian's when missing.
# Fast path, for host and image alike: prebuilt/ (git-ignored; let into the Docker build context by
# tools/.dockerignore) holds a copy of the host's install, used when its stamp matches; this script
# refreshes it after a host install, so the image needs neither Maven nor a compile.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/maven.sh"
HOME_DIR="$(manifest_get home)"
HERE="$TOOL_DIR"
STAMP="$(manifest_get version) $(cat "$HERE/pom.xml" "$HERE/LthGrinder.java" "$HERE/LthQuietRequests.java" "$HERE/logback-worker.xml" | sha256sum | cut -c1-16)"
stamped() { [ "$(cat "$1/version" 2>/dev/null)" = "$STAMP" ]; }
if ! stamped "$HOME_DIR" && stamped "$HERE/prebuilt"; then
  rm -rf "$HOME_DIR" && mkdir -p "$HOME_DIR" && cp -r "$HERE/prebuilt/lib" "$HERE/prebuilt/wrap" "$HERE/prebuilt/version" "$HOME_DIR/"
fi
if ! stamped "$HOME_DIR"; then
  jdk_and_maven
  rm -rf "$HOME_DIR" && mkdir -p "$HOME_DIR/wrap"
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
  cp "$HERE/pom.xml" "$work/"
  mvn -q -B -f "$work/pom.xml" -Dmaven.repo.local="${LTH_M2_REPO:-/opt/lth/m2}" \
    dependency:copy-dependencies -DoutputDirectory="$HOME_DIR/lib"
  javac --release 11 -cp "$HOME_DIR/lib/*" -d "$HOME_DIR/wrap" "$HERE/LthGrinder.java" "$HERE/LthQuietRequests.java"
  cp "$HERE/logback-worker.xml" "$HOME_DIR/wrap/"
  java -cp "$HOME_DIR/wrap:$HOME_DIR/lib/*" LthGrinder --version | grep -qx "The Grinder $(manifest_get version)"
  echo "$STAMP" > "$HOME_DIR/version"
fi
if ! stamped "$HERE/prebuilt"; then
  { rm -rf "$HERE/prebuilt" && mkdir -p "$HERE/prebuilt" && cp -r "$HOME_DIR/lib" "$HOME_DIR/wrap" "$HOME_DIR/version" "$HERE/prebuilt/"; } 2>/dev/null \
    || echo "note: could not copy $HOME_DIR to $HERE/prebuilt/: its Docker image will fetch Grinder itself" >&2
fi
