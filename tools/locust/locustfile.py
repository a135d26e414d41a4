"""The harness's Locust test: every user GETs one URL in a loop, no think time.

Pick the client with the user class on the command line: FastUser (FastHttpUser,
geventhttpclient) or DefaultUser (HttpUser, python-requests). Both keep their connection alive
unless --lth-close is given. The path comes from --lth-path (the base URL from -H), so one file
serves every target.
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


def _paced(user) -> float:
    # constant_throughput keeps its state on the user: one task start every 1/rate s, no catch-up.
    return constant_throughput(user.environment.parsed_options.lth_user_rate)(user)


class FastUser(FastHttpUser):
    wait_time = constant(0)
    # insecure = True, FastHttpUser's default: no certificate check.

    def __init__(self, environment):
        if environment.parsed_options.lth_close:
            self.default_headers = CLOSE     # FastHttpUser.__init__ hands these to its session
        super().__init__(environment)

    @task
    def get(self):
        self.client.get(self.environment.parsed_options.lth_path)


class DefaultUser(HttpUser):
    wait_time = constant(0)

    def __init__(self, environment):
        super().__init__(environment)
        options = environment.parsed_options
        if options.lth_close:
            self.client.headers.update(CLOSE)          # replaces requests' Connection: keep-alive
        if options.lth_insecure:
            self.client.verify = False
            # requests would warn on stderr for every unverified request.
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    @task
    def get(self):
        self.client.get(self.environment.parsed_options.lth_path)


class FastPacedUser(FastUser):
    """Rate scenarios (issue 13): FastUser paced to --lth-user-rate task starts per second."""
    wait_time = _paced


class DefaultPacedUser(DefaultUser):
    wait_time = _paced
