"""Scripted flows (issue 37): log in, carry the token, call the API, against the api target (targets/api).

A flow is defined once here, for every tool that runs it and for the target that serves it: the credentials are
rendered into the target's configuration, and the target's log of its API requests (API_LOG in the file server's
folder, one `step status` line per request) is read back into the server's counts per step and status.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.files import lines_since

USERNAME, PASSWORD = "lth-user", "lth-password"   # the API accepts any username with this password
API_LOG = "api.log"
# The API's access log line, one write per request (read as soon as a run ends): `login 200`.
API_LOG_FORMAT = "$lth_step $status"


@dataclass(frozen=True)
class Flow:
    name: str
    login_method: str
    login_path: str
    login_body: str          # the JSON the tools send, as sent
    login_content_type: str
    token_field: str         # where the token is in the login's JSON answer
    get_path: str
    token_header: str        # the token goes here, as is (`Bearer <token>` is accepted too)


LOGIN = Flow(name="login", login_method="POST", login_path="/api/auth/login",
             login_body=json.dumps({"username": USERNAME, "password": PASSWORD}, separators=(",", ":")),
             login_content_type="application/json", token_field="token",
             get_path="/api/contact?size=20&page=0", token_header="Authorization")
FLOWS = {LOGIN.name: LOGIN}


@dataclass(frozen=True)
class ApiCounts:
    """What the target answered, per step and status."""
    logins_ok: int = 0
    logins_refused: int = 0   # 401: wrong password, or a body that is not the credentials' JSON
    gets_ok: int = 0
    gets_refused: int = 0     # 401: no token, or one this stack did not issue
    other: int = 0            # any other step or status (405, 499, ...)

    @property
    def tokens_issued(self) -> int:
        return self.logins_ok


_COUNTED = {("login", "200"): "logins_ok", ("login", "401"): "logins_refused",
            ("get", "200"): "gets_ok", ("get", "401"): "gets_refused"}


def read_api_counts(path: Path, since: int = 0) -> ApiCounts:
    """The counts of the API log from byte offset ``since`` (its size when a run began) on; no log yet, none."""
    counts = Counter(_COUNTED.get(tuple(line.split()), "other") for line in lines_since(path, since) if line.strip())
    return ApiCounts(**counts)
