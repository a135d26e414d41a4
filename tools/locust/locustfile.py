"""The harness's Locust test: every user GETs one URL in a loop, no think time.

Pick the client with the user class on the command line: FastUser (FastHttpUser,
geventhttpclient) or DefaultUser (HttpUser, python-requests). Both keep their connection alive
unless --lth-close is given. The path comes from --lth-path (the base URL from -H), so one file
serves every target.

The login flow (harness/flows.py, issue 37): FastFlowUser and DefaultFlowUser log in on_start (POST
--lth-login-path with --lth-login-body), keep the token of the JSON answer on the user, and GET --lth-path
with it in --lth-token-header; with --lth-relogin-every N a user logs in again after every N GETs. The two
steps are named requests ("login", "api_get"), so Locust's stats time them apart.
"""
import urllib3
from locust import FastHttpUser, HttpUser, constant, constant_throughput, events, task

# Keep-alive off: the server closes after each response, and both clients then drop the connection
# and connect again for the next request.
CLOSE = {"Connection": "close"}


@events.init_command_line_parser.add_listener
def _add_arguments(parser):
    parser.add_argument("--lth-path", default="/", help="path requested by every user (lth harness)")
    parser.add_argument("--lth-user-rate", type=float, default=0.0,
                        help="requests/s per user for the Paced classes (lth harness: rate / users)")
    parser.add_argument("--lth-close", action="store_true",
                        help="send Connection: close with every request: a new connection each (lth harness)")
    parser.add_argument("--lth-insecure", action="store_true",
                        help="do not verify the server's TLS certificate (lth harness; FastHttpUser never does)")
    # The login flow (the *FlowUser classes): --lth-path is the API's GET.
    parser.add_argument("--lth-login-path", default="/api/auth/login", help="the flow's login (lth harness)")
    parser.add_argument("--lth-login-body", default="", help="the login's body, sent as is (lth harness)")
    parser.add_argument("--lth-login-content-type", default="application/json",
                        help="the login body's Content-Type (lth harness)")
    parser.add_argument("--lth-token-field", default="token", help="the token's field in the login's JSON answer")
    parser.add_argument("--lth-token-header", default="Authorization", help="the header the token goes in, as is")
    parser.add_argument("--lth-relogin-every", type=int, default=0,
                        help="log in again after this many GETs (0: once per user; lth harness)")


def _paced(user) -> float:
    # constant_throughput keeps its state on the user: one task start every 1/rate s, no catch-up.
    return constant_throughput(user.environment.parsed_options.lth_user_rate)(user)


def _fast_options(user, environment):
    """FastHttpUser's options, before its __init__ (insecure = True, its default: no certificate check)."""
    if environment.parsed_options.lth_close:
        user.default_headers = CLOSE     # FastHttpUser.__init__ hands these to its session


def _session_options(user, environment):
    """HttpUser's options, on the session its __init__ made."""
    options = environment.parsed_options
    if options.lth_close:
        user.client.headers.update(CLOSE)          # replaces requests' Connection: keep-alive
    if options.lth_insecure:
        user.client.verify = False
        # requests would warn on stderr for every unverified request.
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)


class FastUser(FastHttpUser):
    wait_time = constant(0)

    def __init__(self, environment):
        _fast_options(self, environment)
        super().__init__(environment)

    @task
    def get(self):
        self.client.get(self.environment.parsed_options.lth_path)


class DefaultUser(HttpUser):
    wait_time = constant(0)

    def __init__(self, environment):
        super().__init__(environment)
        _session_options(self, environment)

    @task
    def get(self):
        self.client.get(self.environment.parsed_options.lth_path)


class LoginFlow:
    """The login flow's steps, on the user (a mixin: its task is listed by each *FlowUser, as Locust collects
    only the @task methods of User classes and would add FastUser's plain GET to a subclass of it).

    Each user keeps its own token and count of GETs since its login: per-user state is plain attributes."""
    token = None
    gets_since_login = 0

    def on_start(self):
        options = self.environment.parsed_options
        self.get_path, self.relogin_every = options.lth_path, options.lth_relogin_every
        self.token_header = options.lth_token_header
        self.login()

    def login(self):
        options = self.environment.parsed_options
        self.gets_since_login, self.token = 0, None
        with self.client.post(options.lth_login_path, data=options.lth_login_body, name="login",
                              headers={"Content-Type": options.lth_login_content_type},
                              catch_response=True) as response:
            try:
                self.token = response.json()[options.lth_token_field]
            except Exception:  # noqa: BLE001 - a refused login (401 JSON without it) or not JSON: no token
                response.failure(f"no {options.lth_token_field!r} in the login's answer (status {response.status_code})")

    def api_get(self):
        if self.relogin_every and self.gets_since_login >= self.relogin_every:
            self.login()
        self.gets_since_login += 1
        # Without a token (a failed login) the GET goes without it: the API refuses it, and the run shows it.
        self.client.get(self.get_path, name="api_get",
                        headers={self.token_header: self.token} if self.token is not None else None)


class FastFlowUser(LoginFlow, FastHttpUser):
    wait_time = constant(0)
    tasks = [LoginFlow.api_get]

    def __init__(self, environment):
        _fast_options(self, environment)
        super().__init__(environment)


class DefaultFlowUser(LoginFlow, HttpUser):
    wait_time = constant(0)
    tasks = [LoginFlow.api_get]

    def __init__(self, environment):
        super().__init__(environment)
        _session_options(self, environment)


class FastPacedUser(FastUser):
    """Rate scenarios (issue 13): FastUser paced to --lth-user-rate task starts per second."""
    wait_time = _paced


class DefaultPacedUser(DefaultUser):
    wait_time = _paced
