# The Maven Central tools' recipe (jmeter, gatling; grinder has its own: a javac step and a prebuilt copy).
# jdk_and_maven: javac and mvn, Debian's openjdk-17-jdk-headless and maven when missing (in the image, only in
# the build stage).
jdk_and_maven() {
  "$LTH_LIB/maven-toolchain.sh"
}

# maven_install INPUT... -- GOAL...: the Maven project in the tool's folder (pom.xml, and src/ when it has one)
# built with `mvn GOAL...` in a scratch folder, the manifest's version and the new home passed as
# -D<id>.version and -D<id>.home (the pom puts the tool's files there); then the caller's `maven_finish WORK`
# adds its own files to WORK/home, and the home replaces the manifest's `home`. Stamped in home/.lth-version
# with the version and a digest of the INPUTs (the files whose change means a rebuild). Idempotent: nothing
# is done when the stamp matches and java is there. Maven's cache: /opt/lth/m2, shared by the Maven tools.
maven_install() {
  local inputs=() version home stamp
  while [ $# -gt 0 ] && [ "$1" != -- ]; do inputs+=("$1"); shift; done
  shift
  version="$(manifest_get version)"; home="$(manifest_get home)"
  stamp="$version $(cat "${inputs[@]}" | md5sum | cut -c1-12)"
  if [ "$(cat "$home/.lth-version" 2>/dev/null)" = "$stamp" ] && command -v java >/dev/null; then
    return 0
  fi
  jdk_and_maven
  MAVEN_WORK="$(mktemp -d "/tmp/lth-$TOOL-build.XXXXXX")"
  trap 'rm -rf "$MAVEN_WORK"' EXIT
  cp "$TOOL_DIR/pom.xml" "$MAVEN_WORK/"
  [ ! -d "$TOOL_DIR/src" ] || cp -r "$TOOL_DIR/src" "$MAVEN_WORK/"
  mvn -B -q -ntp -Dstyle.color=never -f "$MAVEN_WORK/pom.xml" -Dmaven.repo.local="${LTH_M2_REPO:-/opt/lth/m2}" \
      "-D$TOOL.version=$version" "-D$TOOL.home=$MAVEN_WORK/home" "$@"
  maven_finish "$MAVEN_WORK"
  echo "$stamp" > "$MAVEN_WORK/home/.lth-version"
  rm -rf "$home" && mkdir -p "$(dirname "$home")" && mv "$MAVEN_WORK/home" "$home"
  echo "$TOOL $version installed in $home"
}
