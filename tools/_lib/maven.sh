# jdk_and_maven: javac and mvn for the Maven Central tools (jmeter, gatling, grinder): Debian's
# openjdk-17-jdk-headless and maven when missing (in the image, only in the build stage).
jdk_and_maven() {
  command -v javac >/dev/null && command -v mvn >/dev/null && return 0
  apt_install openjdk-17-jdk-headless maven ca-certificates netbase
}
