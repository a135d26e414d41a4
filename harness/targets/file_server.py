"""The target as the harness sees it: what it must serve, the check before any run, and the Nginx file
server's counters (this package's __init__ starts the stacks)."""
from __future__ import annotations

import hashlib
import http.client
import ipaddress
import re
import shutil
import socket
import ssl
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness import TARGET_DIR
from harness.errors import HarnessError
from harness.files import lines_since
from harness.flows import ApiCounts, read_api_counts

TARGET_FILE = "style.css"
STATUS_PATH = "/nginx_status"
# The harness's own requests say who sends them (the RTT probe's: lth-rtt-probe), so that an HTTP/2 stack's
# file server leaves them out of its log of the tools' requests in another HTTP version (harness/targets/).
HARNESS_AGENT = "lth-harness"
HARNESS_HEADERS = {"User-Agent": HARNESS_AGENT}


# The harness's own networks (RFC 2544 benchmarking range) and loopback; anything else is
# somebody's server and is refused unless the user opts in explicitly.
ALLOWED_NETWORKS = [ipaddress.ip_network(n) for n in ("198.18.0.0/15", "127.0.0.0/8", "::1/128")]


def ensure_allowed(host: str, allow_external: bool = False, explicit: str | None = None) -> None:
    """``explicit``: the one address the user named with --target-host, allowed for that run only."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if allow_external or (address is not None and any(address in n for n in ALLOWED_NETWORKS)):
        return
    if explicit is not None and address is not None and address == ipaddress.ip_address(explicit):
        return
    raise HarnessError(f"refusing to load {host}: targets must be loopback or the harness's own 198.18.0.0/15 "
                       "networks; pass --allow-external-target if you own that server and mean it")


def stage(prefix: Path, listen_address: str | None = None, port: int = 80, workers: int | None = None) -> None:
    """The Nginx file server's prefix folder: its config, the served file and a tmp folder, readable by
    the workers. ``listen_address`` binds it to that one address (a remote target opens nothing else);
    ``port``: another port than 80 (the file server behind a proxy target); ``workers``: see nginx_conf."""
    (prefix / "nginx.conf").write_text(nginx_conf(listen_address, port, workers))
    shutil.copytree(TARGET_DIR / "html", prefix / "html")
    (prefix / "tmp").mkdir()
    for path in [prefix, *prefix.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def nginx_conf(listen_address: str | None = None, port: int = 80, workers: int | None = None) -> str:
    """targets/nginx/nginx.conf as staged. ``workers``: one per CPU Nginx may run on, in place of its
    `worker_processes auto`, which counts the machine's CPUs, not the ones it is pinned to: on one CPU of two,
    two workers took turns in the scheduler's 4 ms slices (p99 4.3 ms where one worker answered in 0.45 ms)
    and a run's 20 connections split between them at random, 10/10 to 4/16, which moved its rate by ~5%
    (CHANGELOG.md, 2026-11-29, issue 53). None keeps `auto` (Nginx alone on its machine)."""
    conf = (TARGET_DIR / "nginx.conf").read_text()
    if listen_address or port != 80:
        listen = f"{listen_address}:{port}" if listen_address else str(port)
        conf = _replace_once(conf, r"^(\s*listen\s+)80\b", rf"\g<1>{listen}", "`listen 80` line to bind")
    if workers is not None:
        conf = _replace_once(conf, r"^worker_processes auto;", f"worker_processes {workers};",
                             "`worker_processes auto;` line")
    return conf


def _replace_once(conf: str, pattern: str, replacement: str, what: str) -> str:
    conf, count = re.subn(pattern, replacement, conf, flags=re.MULTILINE)
    if count != 1:
        raise HarnessError(f"{TARGET_DIR / 'nginx.conf'}: expected one {what}, found {count}")
    return conf


def expected_body_length() -> int:
    return (TARGET_DIR / "html" / TARGET_FILE).stat().st_size


def target_file_sha256() -> str:
    """What the RTT probe checks the target's answer against, from wherever the tool runs."""
    return hashlib.sha256((TARGET_DIR / "html" / TARGET_FILE).read_bytes()).hexdigest()


@dataclass(frozen=True)
class Counters:
    """Nginx's stub_status totals: connections accepted, requests served (each counts this status request)."""
    accepts: int
    requests: int


@dataclass(frozen=True)
class Target:
    host: str
    port: int = 80          # where the load goes (the target, or a latency proxy in front of it)
    status_port: int = 80   # the Nginx file server itself, for stub_status (plain HTTP)
    status_host: str | None = None   # the file server's address when ``host`` is a proxy (None: host)
    tls: bool = False       # HTTPS on ``port``, to a self-signed certificate (never verified)
    # The RTT probe's path: the file without a scenario's backend delay (the same file otherwise).
    undelayed_path: str | None = None
    protocol: str = "http/1.1"  # what the tools speak (the scenario's protocol); the harness speaks HTTP/1.1
    h2c_port: int | None = None  # h2c: the tools' port, which speaks HTTP/2 only (``port`` stays HTTP/1.1)
    # An HTTP/2 stack: the file server's log of the requests on the tools' port in another HTTP version (the
    # harness's own left out), where this machine can read it (None: not logged, or not readable here).
    protocol_log: Path | None = None
    # The api target: the file server's log of its API requests (harness/flows.py read_api_counts), where this
    # machine can read it (None: no API).
    api_log: Path | None = None

    @property
    def load_port(self) -> int:
        """Where the tools' requests go: the h2c port, else ``port`` (which the harness's requests share)."""
        return self.h2c_port or self.port

    @property
    def probe_path(self) -> str:
        return self.undelayed_path or self.path

    @property
    def path(self) -> str:
        return f"/{TARGET_FILE}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.load_port}{self.path}"

    @property
    def check_url(self) -> str:
        """What the harness's own HTTP/1.1 requests reach (the url but for h2c's port)."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}{self.path}"

    def _connection(self, timeout_s: float = 5.0) -> http.client.HTTPConnection:
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout_s,
                                               context=ssl._create_unverified_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.requests_served()
                socket.create_connection((self.host, self.port), timeout=5.0).close()   # a proxy in front, too
                return
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise HarnessError(f"target {self.host}:{self.port} did not answer within {timeout_s:.0f} s ({exc}); "
                                       "see the target's log in the results folder") from None
                time.sleep(0.2)

    def verify(self) -> None:
        """Refuse a target that does not serve the file with keep-alive (TechEmpower-style check)."""
        expected = expected_body_length()
        conn = self._connection()
        try:
            sockets = []
            for attempt in range(3):
                conn.request("GET", self.path, headers=HARNESS_HEADERS)
                response = conn.getresponse()
                body = response.read()
                if response.status != 200:
                    raise HarnessError(f"target check failed: GET {self.check_url} returned {response.status}, expected 200")
                if len(body) != expected:
                    raise HarnessError(f"target check failed: {self.check_url} body is {len(body)} bytes, expected {expected}")
                if response.will_close:
                    raise HarnessError(f"target check failed: {self.check_url} closes the connection; keep-alive must be on")
                sockets.append(id(conn.sock))
            if len(set(sockets)) != 1:
                raise HarnessError(f"target check failed: {self.check_url} did not reuse the connection (keep-alive)")
        except (OSError, http.client.HTTPException) as exc:
            raise HarnessError(f"target {self.check_url} is unreachable ({exc}); check the runtime's network "
                               "and the target's log") from None
        finally:
            conn.close()

    def counters(self) -> Counters:
        """The file server's stub_status totals (the status request itself included)."""
        conn = http.client.HTTPConnection(self.status_host or self.host, self.status_port, timeout=5.0)
        try:
            conn.request("GET", STATUS_PATH, headers=HARNESS_HEADERS)
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        counters = stub_status_counters(text)
        if counters is None:
            raise HarnessError(f"target {self.host}: unexpected stub_status output {text[:80]!r}")
        return counters

    def protocol_log_size(self) -> int | None:
        """Where the file server's log of other-version requests ends now (None: this target keeps none)."""
        return _size(self.protocol_log)

    def api_log_size(self) -> int | None:
        """Where the API's log ends now (None: not an API target, or not readable here)."""
        return _size(self.api_log)

    def api_counts(self, since: int | None) -> ApiCounts | None:
        """What the API answered per step and status after offset ``since`` (None: no API log here)."""
        return None if since is None or self.api_log is None else read_api_counts(self.api_log, since)

    def off_protocol_requests(self, since: int | None) -> dict[str, int] | None:
        """{HTTP version: requests} the file server logged on the tools' port after offset ``since`` (each line
        of the log is `port version`): requests in another HTTP version than the scenario's."""
        if since is None or self.protocol_log is None:
            return None
        return dict(Counter(line.split(" ", 1)[-1].strip() or "?" for line in lines_since(self.protocol_log, since)))

    def requests_served(self) -> int:
        """Nginx's stub_status request total (it counts this request too)."""
        return self.counters().requests


def _size(log: Path | None) -> int | None:
    """A log's size now (None: no such log; 0: Nginx has not opened it yet, at the first line it writes)."""
    if log is None:
        return None
    try:
        return log.stat().st_size
    except FileNotFoundError:
        return 0


def stub_status_counters(text: str) -> Counters | None:
    """The accepts and requests totals of an Nginx stub_status page (None: not one)."""
    match = re.search(r"^\s*(\d+)\s+\d+\s+(\d+)\s*$", text, re.MULTILINE)
    return Counters(int(match.group(1)), int(match.group(2))) if match else None
