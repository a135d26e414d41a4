"""The harness's Locust test: every user GETs one URL in a loop, no think time.

Pick the client with the user class on the command line: FastUser (FastHttpUser,
geventhttpclient) or DefaultUser (HttpUser, python-requests). Both keep their connection alive.
The path comes from --lth-path (the base URL from -H), so one file serves every target.
"""
from locust import FastHttpUser, HttpUser, constant, events, task


@events.init_command_line_parser.add_listener
def _add_arguments(parser):
    parser.add_argument("--lth-path", default="/", help="path requested by every user (lth harness)")


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
