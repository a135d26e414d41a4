"""The api target (issue 37's scripted flows): the file server plus an njs API, log in for a token and GET a JSON
page with it. Its staging and the API log's counts without a server; the API itself on a real Nginx on
loopback (e2e: the staged stack, moved to free ports so that it needs no root and meets no other server)."""
import base64
import hashlib
import hmac
import http.client
import json
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import targets
from harness.errors import HarnessError
from harness.flows import API_LOG, FLOWS, PASSWORD, USERNAME, ApiCounts, read_api_counts
from harness.targets import Setup
from harness.targets.file_server import Target

LOGIN = FLOWS["login"]
real_njs = pytest.mark.skipif(shutil.which("nginx") is None or not targets.JS_MODULE.is_file(),
                              reason="needs nginx and Debian's libnginx-mod-http-js (make deps)")


@pytest.fixture
def any_njs(monkeypatch, tmp_path):
    """Staging checks that njs is installed; what is staged does not depend on it."""
    module = tmp_path / "ngx_http_js_module.so"
    module.touch()
    monkeypatch.setattr(targets.staging, "JS_MODULE", module)


def secret_of(files: Path) -> str:
    return re.search(r"js_var \$lth_secret (\w+);", (files / "lth-http-api.conf").read_text()).group(1)


def test_the_flow_is_defined_once_with_the_credentials():
    assert LOGIN.name == "login" and LOGIN.login_method == "POST" and LOGIN.login_path == "/api/auth/login"
    assert json.loads(LOGIN.login_body) == {"username": USERNAME, "password": PASSWORD}
    assert (LOGIN.token_field, LOGIN.token_header) == ("token", "Authorization")
    assert LOGIN.get_path == "/api/contact?size=20&page=0"


def test_the_api_target_is_the_file_server_with_the_api_and_a_secret_per_staging(tmp_path, any_njs):
    api = targets.get("api")
    assert (api.role, api.image, api.is_proxy) == ("server", "lth-target-api:latest", False)
    assert "libnginx-mod-http-js" in api.packages and "libnginx-mod-http-js" in targets.get("nginx").packages
    stack = targets.stage(Setup("api"), tmp_path / "one", "198.18.0.2", "198.18.0.2", None)
    files = tmp_path / "one" / "files"
    assert [p.role for p in stack.processes] == ["upstream"] and stack.target.url == "http://198.18.0.2:80/style.css"
    assert stack.target.api_log == files / API_LOG
    facts = targets.stack_facts(stack, {"upstream": (0,)}, {"nginx": "1.22.1", "api": "1.22.1"})
    assert facts == {"target_stack": "api: nginx 1.22.1 on CPUs 0 with the njs API (POST /api/auth/login, GET "
                                     "/api/contact)", "target_version": "1.22.1"}
    assert (files / "lth-main-api.conf").read_text() == f"load_module {targets.staging.JS_MODULE};\n"
    http = (files / "lth-http-api.conf").read_text()
    assert f'js_var $lth_password "{PASSWORD}";' in http and f"js_import api from {files}/api/api.js;" in http
    server = (files / "lth-server-api.conf").read_text()
    assert "location = /api/auth/login" in server and "location = /api/contact" in server
    assert server.count(f"access_log {API_LOG} lth_api;") == 2 and "protocol.log" not in server
    assert not (files / "lth-server.conf").exists()               # nothing else added to the file server
    other = targets.stage(Setup("api"), tmp_path / "two", "198.18.0.2", "198.18.0.2", None)
    assert len(secret_of(files)) == 32 and secret_of(files) != secret_of(tmp_path / "two" / "files")
    assert other.target.api_log != stack.target.api_log
    assert targets.stage(Setup(), tmp_path / "nginx", "198.18.0.2", "198.18.0.2", None).target.api_log is None


def test_the_token_secret_is_staged_readable_by_its_owner_only(tmp_path, any_njs):
    """Issue 54: the secret's file was made 0644 with the rest (the workers read the served files, not it)."""
    targets.stage(Setup("api"), tmp_path / "stack", "198.18.0.2", "198.18.0.2", None)
    files = tmp_path / "stack" / "files"
    secret_files = [p for p in files.rglob("*") if p.is_file() and secret_of(files) in p.read_text(errors="replace")]
    assert [p.name for p in secret_files] == ["lth-http-api.conf"]
    assert secret_files[0].stat().st_mode & 0o777 == 0o600
    assert (files / "api" / "api.js").stat().st_mode & 0o777 == 0o644


API_JS = Path(targets.get("api").folder) / "api.js"


def test_the_api_compares_the_password_and_the_signature_in_constant_time():
    """Issue 54: `===`/`!==` on the secret values returns at their first differing character."""
    source = API_JS.read_text()
    assert "!same(credentials.password, r.variables.lth_password)" in source
    assert "same(token.slice(dot + 1), sign(r, token.slice(0, dot)))" in source
    assert not re.search(r"[!=]==\s*(r\.variables\.lth_password|sign\()", source)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run api.js's comparison")
def test_the_constant_time_comparison_is_equality():
    same = re.search(r"^function same\(a, b\) \{.*?^\}", API_JS.read_text(), re.S | re.M).group(0)
    cases = [["lth-password", "lth-password"], ["lth-password", "lth-passwore"], ["a", "ab"], ["", ""], [None, "a"],
             ["\u00e9", "e"]]
    script = f"{same}\nconsole.log(JSON.stringify({json.dumps(cases)}.map(([a, b]) => same(a, b))));"
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30, check=True)
    assert json.loads(result.stdout) == [True, False, False, True, False, False]


def test_an_http2_stack_logs_the_apis_requests_in_another_version_too(tmp_path, any_njs):
    certificate = targets.Certificate(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "b.pem")
    targets.stage(Setup("api", tls=True, protocol="h2"), tmp_path / "h2", "198.18.0.2", "198.18.0.2", certificate)
    server = (tmp_path / "h2" / "files" / "lth-server-api.conf").read_text()
    # A location's own access_log replaces the server's: the API's locations name the protocol log again.
    assert server.count("access_log protocol.log lth_protocol if=$lth_off_protocol;") == 2


def test_staging_the_api_without_njs_says_make_deps(tmp_path, monkeypatch):
    monkeypatch.setattr(targets.staging, "JS_MODULE", tmp_path / "missing.so")
    with pytest.raises(HarnessError, match=r"njs module .*libnginx-mod-http-js\): run `make deps`$"):
        targets.stage(Setup("api"), tmp_path / "stack", "198.18.0.2", "198.18.0.2", None)


def test_the_api_log_is_counted_per_step_and_status_from_an_offset(tmp_path):
    log = tmp_path / API_LOG
    assert read_api_counts(log) == ApiCounts()                     # not written yet
    log.write_text("login 200\nlogin 200\n")
    since = log.stat().st_size
    with log.open("a") as more:
        more.write("login 200\nlogin 401\nget 200\nget 200\nget 200\nget 401\nlogin 405\nget 499\n\n")
    counts = read_api_counts(log, since)
    assert counts == ApiCounts(logins_ok=1, logins_refused=1, gets_ok=3, gets_refused=1, other=2)
    assert counts.tokens_issued == 1 and read_api_counts(log).logins_ok == 3


# --- a real Nginx with njs ---------------------------------------------------------------------------------------
@dataclass
class Served:
    files: Path
    port: int                 # the staged port 80's stand-in (HTTP/1.1, stub_status)
    tls_port: int | None      # 443's
    proc: subprocess.Popen

    def request(self, method: str, path: str, body: str | None = None,
                headers: dict[str, str] | None = None, tls: bool = False) -> tuple[int, str, str]:
        """(status, Content-Type, body) of one request on a new connection."""
        if tls:
            conn = http.client.HTTPSConnection("127.0.0.1", self.tls_port, timeout=5,
                                               context=ssl._create_unverified_context())
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read().decode()
        finally:
            conn.close()

    def login(self, body: str = LOGIN.login_body, tls: bool = False) -> tuple[int, dict]:
        status, _, text = self.request(LOGIN.login_method, LOGIN.login_path, body,
                                       {"Content-Type": LOGIN.login_content_type}, tls)
        return status, json.loads(text)

    def get(self, token: str | None, tls: bool = False) -> tuple[int, str, str]:
        return self.request("GET", LOGIN.get_path, headers={LOGIN.token_header: token} if token else {}, tls=tls)

    def stop(self) -> None:
        """As the harness stops it (SIGTERM)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def on_free_ports(files: Path, tls: bool) -> tuple[int, int | None]:
    """The staged stack's ports 80 and 443, moved to free ones on loopback."""
    port, tls_port = free_port(), free_port() if tls else None
    moves = [("nginx.conf", "listen 80 ", port)] + ([("lth-server.conf", f"listen {targets.TLS_PORT} ", tls_port)]
                                                    if tls else [])
    for name, listen, new in moves:
        conf = (files / name).read_text()
        assert conf.count(listen) == 1, name
        (files / name).write_text(conf.replace(listen, f"listen 127.0.0.1:{new} "))
    return port, tls_port


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """Stage a setup as the harness does and start its Nginx; every one started is stopped at the end. In a folder
    of its own, as the runtimes stage (pytest's tmp_path is its owner's only: a root Nginx's workers are nobody)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="lth-test-api-"))
    tmp_path.chmod(0o755)
    started: list[Served] = []

    def start(setup: Setup, name: str = "stack") -> Served:
        certificate = targets.make_certificate(tmp_path / "certificate") if setup.tls else None
        stack = targets.stage(setup, tmp_path / name, "127.0.0.1", "127.0.0.1", certificate)
        files = tmp_path / name / "files"
        port, tls_port = on_free_ports(files, setup.tls)
        log = (tmp_path / f"{name}.log").open("w")
        proc = subprocess.Popen(stack.processes[0].argv, stdout=log, stderr=subprocess.STDOUT)
        served = Served(files, port, tls_port, proc)
        started.append(served)
        Target("127.0.0.1", port, status_port=port).wait_ready(timeout_s=10)
        return served

    yield start
    for served in started:
        served.stop()
    shutil.rmtree(tmp_path)


def python_token(secret: str, nonce: str) -> str:
    """A token as the API makes it (api.js): `<nonce>.<HMAC-SHA256 of the nonce, base64url without padding>`."""
    signature = hmac.new(secret.encode(), nonce.encode(), hashlib.sha256).digest()
    return f"{nonce}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


@pytest.mark.e2e
@real_njs
def test_log_in_carry_the_token_get_the_page_and_count_each_at_the_server(serve):
    api = serve(Setup("api"))
    status_before = Target("127.0.0.1", api.port, status_port=api.port).counters().requests
    status, answer = api.login()
    assert status == 200 and set(answer) == {LOGIN.token_field}
    token = answer[LOGIN.token_field]
    status, again = api.login(json.dumps({"username": "someone-else", "password": PASSWORD}))
    assert status == 200 and again[LOGIN.token_field] != token             # a new nonce per login
    status, refused = api.login(json.dumps({"username": USERNAME, "password": "wrong"}))
    assert status == 401 and set(refused) == {"error"}
    assert api.login("username=lth-user&password=lth-password")[0] == 401  # not JSON

    status, content_type, page = api.get(token)
    contacts = json.loads(page)["contacts"]
    assert (status, content_type) == (200, "application/json") and 900 <= len(page) <= 1300
    assert len(contacts) == 20 and set(contacts[0]) == {"id", "name", "email"}
    assert api.get(f"Bearer {token}")[0] == 200
    nonce, signature = token.split(".")
    assert api.get(python_token(secret_of(api.files), "made-in-python"))[0] == 200   # the documented format
    forged = f"{nonce}.{'B' if signature[0] == 'A' else 'A'}{signature[1:]}"   # one character of the signature
    other = serve(Setup("api"), "other")
    stale = other.login()[1][LOGIN.token_field]                          # signed with the other stack's secret
    for refused in (None, forged, stale, nonce, f"Bearer {forged}"):
        assert api.get(refused)[:2] == (401, "application/json"), refused
    assert api.request("GET", "/style.css")[0] == 200                   # the file server still serves the file
    # stub_status counts the API's requests: the 4 logins, 3 GETs served, 5 refused, the file, and itself again.
    assert Target("127.0.0.1", api.port, status_port=api.port).counters().requests - status_before == 4 + 3 + 5 + 1 + 1

    # Read while Nginx runs, as the harness does at a run's end: the log is written per request.
    assert read_api_counts(api.files / API_LOG) == ApiCounts(logins_ok=2, logins_refused=2, gets_ok=3, gets_refused=5)
    assert read_api_counts(api.files / API_LOG).tokens_issued == 2
    api.stop()


@pytest.mark.e2e
@real_njs
@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl for the certificate (make deps)")
def test_a_tls_stack_serves_the_api_on_its_443(serve):
    api = serve(Setup("api", tls=True, protocol="h2"))
    status, answer = api.login(tls=True)
    assert status == 200
    status, _, page = api.get(answer[LOGIN.token_field], tls=True)
    assert status == 200 and len(json.loads(page)["contacts"]) == 20
    assert api.get(None, tls=True)[0] == 401
    # HTTP/1.1 on an h2 stack's TLS port is a tool's fallback: logged for the API as for the file.
    api.stop()
    assert (api.files / "protocol.log").read_text().split() == [str(api.tls_port), "HTTP/1.1"] * 3
    assert read_api_counts(api.files / API_LOG) == ApiCounts(logins_ok=1, gets_ok=1, gets_refused=1)
