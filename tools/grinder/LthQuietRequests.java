import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import org.slf4j.Marker;

/**
 * Drops the INFO line The Grinder's HTTP plugin logs for every response
 * ("http://host/path -> 200 OK, 108 bytes"); every other log line is kept. Used by
 * logback-worker.xml; install.sh and the Dockerfile compile it into /opt/lth/grinder/wrap/.
 */
public class LthQuietRequests extends TurboFilter {
    @Override
    public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
        if (level == Level.INFO && format != null && format.endsWith(" bytes") && format.contains(" -> ")) {
            return FilterReply.DENY;
        }
        return FilterReply.NEUTRAL;
    }
}
