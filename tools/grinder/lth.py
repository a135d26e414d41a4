# The Grinder 3.11 test script (Jython 2.5): each worker thread is one VU that GETs the URL in a
# loop, without think time, until grinder.lth.durationMs has passed since its own start. The loop
# runs inside ONE Grinder run (grinder.runs = 1): Grinder's HTTP plugin closes a thread's
# connections at the start of every run, so one request per run would reconnect every time.
from java.lang import System
from net.grinder.script import Test
from net.grinder.script.Grinder import grinder
from net.grinder.plugin.http import HTTPRequest

URL = grinder.properties.getProperty("grinder.lth.url")
DURATION_MS = grinder.properties.getLong("grinder.lth.durationMs", 5000)

test = Test(1, "GET")
request = HTTPRequest()
test.record(request)


class TestRunner:
    def __call__(self):
        deadline = System.currentTimeMillis() + DURATION_MS
        while System.currentTimeMillis() < deadline:
            request.GET(URL)
