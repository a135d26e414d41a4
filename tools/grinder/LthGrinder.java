/**
 * Starts The Grinder 3.11 agent on a current JVM. Grinder's JVM check parses java.version as
 * "1.x" and rejects "17.0.15" ("requires at least Java SE 6"): this sets java.version to 1.8.0
 * for the agent only (its worker process does not check). `--version` prints Grinder's version.
 * install.sh and the Dockerfile compile it into /opt/lth/grinder/wrap/.
 */
public class LthGrinder {
    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--version")) {
            System.out.println("The Grinder " + net.grinder.common.GrinderBuild.getVersionString());
            return;
        }
        System.setProperty("java.version", "1.8.0");
        net.grinder.Grinder.main(args);
    }
}
