"""The target check refuses a server that is not the benchmark target (real HTTP servers on loopback)."""
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness import TARGET_DIR
from harness.errors import HarnessError
from harness.targets.file_server import TARGET_FILE, Target, ensure_allowed


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _KeepAlive(_Quiet):
    protocol_version = "HTTP/1.1"


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(handler, body: bytes | None):
        if body is not None:
            (tmp_path / TARGET_FILE).write_bytes(body)
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(tmp_path)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return Target("127.0.0.1", server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()


def test_right_file_with_keep_alive_passes(serve):
    serve(_KeepAlive, (TARGET_DIR / "html" / TARGET_FILE).read_bytes()).verify()


def test_missing_file_is_refused(serve):
    with pytest.raises(HarnessError, match="returned 404"):
        serve(_KeepAlive, None).verify()


def test_wrong_body_is_refused(serve):
    with pytest.raises(HarnessError, match="body is 5 bytes"):
        serve(_KeepAlive, b"hello").verify()


def test_connection_close_is_refused(serve):
    with pytest.raises(HarnessError, match="keep-alive"):
        serve(_Quiet, (TARGET_DIR / "html" / TARGET_FILE).read_bytes()).verify()


def test_unreachable_target_is_one_clear_error():
    with pytest.raises(HarnessError, match="unreachable"):
        Target("127.0.0.1", 9).verify()


@pytest.mark.parametrize("host", ["198.18.0.2", "198.19.200.1", "127.0.0.1", "::1"])
def test_own_networks_and_loopback_are_allowed(host):
    ensure_allowed(host)


@pytest.mark.parametrize("host", ["10.0.0.5", "192.168.1.1", "93.184.216.34", "example.com"])
def test_other_targets_are_refused_without_the_opt_in(host):
    with pytest.raises(HarnessError, match="--allow-external-target"):
        ensure_allowed(host)
    ensure_allowed(host, allow_external=True)
