# jdk_and_maven: javac and mvn for the Maven Central tools (jmeter, gatling, grinder): Debian's
# openjdk-17-jdk-headless and maven when missing (in the image, only in the build stage).
jdk_and_maven() {
  "$LTH_LIB/maven-toolchain.sh"
}
