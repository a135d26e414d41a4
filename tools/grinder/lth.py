# The Grinder 3.11 test script (Jython 2.5): each worker thread is one VU that GETs the URL in a
# loop, without think time, until grinder.lth.durationMs has passed since its own start. The loop
# runs inside ONE Grinder run (grinder.runs = 1): Grinder's HTTP plugin closes a thread's
# connections at the start of every run, so one request per run would reconnect every time.
# grinder.lth.close=true (keep-alive off): every request says "Connection: close", so the server
# closes after the response and the next request connects anew.
from java.lang import System
from HTTPClient import NVPair
from net.grinder.script import Test
from net.grinder.script.Grinder import grinder
from net.grinder.plugin.http import HTTPPluginControl, HTTPRequest

URL = grinder.properties.getProperty("grinder.lth.url")
DURATION_MS = grinder.properties.getLong("grinder.lth.durationMs", 5000)
if grinder.properties.getBoolean("grinder.lth.close", False):
    HTTPPluginControl.getConnectionDefaults().setDefaultHeaders([NVPair("Connection", "close")])

test = Test(1, "GET")
request = HTTPRequest()
test.record(request)


class TestRunner:
    def __call__(self):
        deadline = System.currentTimeMillis() + DURATION_MS
        while System.currentTimeMillis() < deadline:
            request.GET(URL)
