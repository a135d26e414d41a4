#!/bin/sh
# Minimal stand-in for JMeter's bin/jmeter start script, which the Maven Central artifacts do not
# ship. install.sh copies it to /opt/lth/jmeter/bin/jmeter. The harness runs java itself (see
# adapter.py, which passes the stock script's heap/GC options); this is for `jmeter --version` and
# for hand use.
exec java ${JVM_ARGS:--Xms1g -Xmx1g -XX:MaxMetaspaceSize=256m} -jar "$(dirname "$(readlink -f "$0")")/ApacheJMeter.jar" "$@"
