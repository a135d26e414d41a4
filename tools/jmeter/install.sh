#!/usr/bin/env bash
# Install of Apache JMeter (non-GUI) into the manifest's home, on the host and in the image's build
# stage (tools/_lib/maven.sh), assembled from Maven Central artifacts with maven-dependency-plugin
# (pom.xml next to this script): no binary-distribution download. Idempotent.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/maven.sh"

maven_finish() {  # $1 = the build folder
  mkdir -p "$1/home/lib/junit"                      # JMeter's launcher expects it
  install -m 0755 "$TOOL_DIR/jmeter.sh" "$1/home/bin/jmeter"
}
maven_install "$TOOL_DIR/pom.xml" "$TOOL_DIR/jmeter.sh" -- package   # a changed assembly means a rebuild
