#!/usr/bin/env bash
# Install of Gatling into the manifest's home from Maven Central, on the host and in the image's build
# stage (tools/_lib/maven.sh): the Maven project next to this script (pom.xml + the Java DSL simulation
# src/test/java/lth/LthSimulation.java) is compiled here, once, and its runtime classpath copied, so a
# benchmark run starts Gatling directly with java (no Maven, no compile). Idempotent.
set -euo pipefail
source "$(dirname "$0")/../_lib/common.sh"
source "$LTH_LIB/maven.sh"

maven_finish() {  # $1 = the build folder: the compiled simulation and the start script beside the classpath
  cp -r "$1/target/test-classes" "$1/home/classes"
  install -D -m 0755 "$TOOL_DIR/gatling.sh" "$1/home/bin/gatling"
}
# The simulation is part of the install: a changed source means a rebuild.
maven_install "$TOOL_DIR/pom.xml" "$TOOL_DIR/src/test/java/lth/"*.java "$TOOL_DIR/src/test/resources/"* \
  -- test-compile dependency:copy-dependencies
