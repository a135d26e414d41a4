#!/bin/sh
# Launcher for the Gatling home assembled by install.sh (/opt/lth/gatling/bin/gatling).
#   gatling --version         print the Gatling version on the classpath
#   gatling [Gatling args]    run Gatling, e.g. gatling -s lth.LthSimulation -rf /tmp/out (add -Dlth.url=... via JAVA_OPTS)
# The harness runs java itself (adapter.py) with the same classpath and JVM options.
home="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cp="$home/classes:$home/lib/*"
if [ "${1:-}" = "--version" ]; then
  exec java -cp "$cp" lth.Version
fi
exec java -Xmx1G -XX:MaxInlineLevel=20 -XX:MaxTrivialSize=12 \
  --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/jdk.internal.misc=ALL-UNNAMED \
  -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9 ${JAVA_OPTS:-} -cp "$cp" io.gatling.app.Gatling "$@"
