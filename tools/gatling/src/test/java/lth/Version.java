package lth;

/** Prints the Gatling version on the classpath (for `gatling --version`, the harness's version check). */
public final class Version {
  public static void main(String[] args) {
    System.out.println("Gatling " + io.gatling.commons.util.GatlingVersion.ThisVersion().fullVersion());
  }
}
