"""The harness's Locust test: every user GETs one URL in a loop, no think time.

Pick the client with the user class on the command line: FastUser (FastHttpUser,
geventhttpclient) or DefaultUser (HttpUser, python-requests). Both keep their connection alive.
The path comes from --lth-path (the base URL from -H), so one file serves every target.
"""
from locust import FastHttpUser, HttpUser, constant, constant_throughput, events, task


@events.init_command_line_parser.add_listener
def _add_arguments(parser):
    parser.add_argument("--lth-path", default="/", help="path requested by every user (lth harness)")
    parser.add_argument("--lth-user-rate", type=float, default=0.0,
                        help="requests/s per user for the Paced classes (lth harness: rate / users)")


def _paced(user) -> float:
    # constant_throughput keeps its state on the user: one task start every 1/rate s, no catch-up.
    return constant_throughput(user.environment.parsed_options.lth_user_rate)(user)


class FastUser(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get(self.environment.parsed_options.lth_path)


class DefaultUser(HttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get(self.environment.parsed_options.lth_path)


class FastPacedUser(FastUser):
    """Rate scenarios (issue 13): FastUser paced to --lth-user-rate task starts per second."""
    wait_time = _paced


class DefaultPacedUser(DefaultUser):
    wait_time = _paced
