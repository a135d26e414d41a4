# The Grinder 3.11 test script (Jython 2.5): each worker thread is one VU that GETs the URL in a
# loop, without think time, until grinder.lth.durationMs has passed since its own start. The loop
# runs inside ONE Grinder run (grinder.runs = 1): Grinder's HTTP plugin closes a thread's
# connections at the start of every run, so one request per run would reconnect every time.
# grinder.lth.close=true (keep-alive off): every request says "Connection: close", so the server
# closes after the response and the next request connects anew.
# The login flow (harness/flows.py), when grinder.lth.loginUrl is set: each thread logs in (test 2, "login": a
# POST of grinder.lth.loginBody), keeps the token from the JSON answer (field grinder.lth.tokenField) in its own
# TestRunner (Grinder makes one per worker thread), then GETs grinder.lth.url with the token in header
# grinder.lth.tokenHeader (test 3, "API GET"), logging in again after every grinder.lth.reloginEvery GETs (0: once).
# Each step is its own Test, so the data log times the steps apart (its "Test" column).
from java.lang import String, System
from java.util.regex import Pattern
from HTTPClient import NVPair
from net.grinder.script import Test
from net.grinder.script.Grinder import grinder
from net.grinder.plugin.http import HTTPPluginControl, HTTPRequest

URL = grinder.properties.getProperty("grinder.lth.url")
DURATION_MS = grinder.properties.getLong("grinder.lth.durationMs", 5000)
if grinder.properties.getBoolean("grinder.lth.close", False):
    HTTPPluginControl.getConnectionDefaults().setDefaultHeaders([NVPair("Connection", "close")])
LOGIN_URL = grinder.properties.getProperty("grinder.lth.loginUrl")   # None: the plain GET of URL

if LOGIN_URL is None:
    test = Test(1, "GET")
    request = HTTPRequest()
    test.record(request)
else:
    if grinder.properties.getProperty("grinder.lth.loginMethod", "POST") != "POST":
        raise ValueError("lth.py logs in with a POST only")
    LOGIN_BODY = String(grinder.properties.getProperty("grinder.lth.loginBody")).getBytes("UTF-8")
    LOGIN_HEADERS = [NVPair("Content-Type", grinder.properties.getProperty("grinder.lth.loginContentType"))]
    # The token: the JSON answer's string field, read with a regular expression (Jython 2.5 has no json module).
    TOKEN = Pattern.compile('"' + Pattern.quote(grinder.properties.getProperty("grinder.lth.tokenField"))
                            + '"\\s*:\\s*"([^"]*)"')
    TOKEN_HEADER = grinder.properties.getProperty("grinder.lth.tokenHeader")
    RELOGIN_EVERY = grinder.properties.getInt("grinder.lth.reloginEvery", 0)
    login_request = HTTPRequest()
    Test(2, "login").record(login_request)
    get_request = HTTPRequest()
    Test(3, "API GET").record(get_request)


class TestRunner:
    def __init__(self):
        self.token = None   # this thread's (this VU's) token

    def __call__(self):
        deadline = System.currentTimeMillis() + DURATION_MS
        if LOGIN_URL is not None:
            return self.flow(deadline)
        while System.currentTimeMillis() < deadline:
            request.GET(URL)

    def flow(self, deadline):
        self.login()
        gets = 0   # since this thread's last login
        while System.currentTimeMillis() < deadline:
            if RELOGIN_EVERY and gets >= RELOGIN_EVERY:
                self.login()
                gets = 0
                continue
            get_request.GET(URL, None, [NVPair(TOKEN_HEADER, self.token)])
            gets += 1

    def login(self):
        # The body's bytes as UTF-8 (getText() reads ISO-8859-1 where the answer names no charset).
        answer = login_request.POST(LOGIN_URL, LOGIN_BODY, LOGIN_HEADERS).getData()
        found = TOKEN.matcher(answer is not None and String(answer, "UTF-8") or "")
        # No token (a refused login): the GETs send an empty one, which the API refuses and counts.
        self.token = found.find() and found.group(1) or ""
