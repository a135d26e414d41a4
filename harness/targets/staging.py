"""Staging a Setup into a folder: the file server's configuration and its extras (TLS, HTTP/2, the backend
delay, the api target's njs), a proxy's rendered configuration, and what the rows say about the stack."""
from __future__ import annotations

import re
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jinja2

from harness import PREFIX
from harness.cpus import format_cpus
from harness.errors import HarnessError
from harness.flows import API_LOG, API_LOG_FORMAT, PASSWORD
from harness.targets.certificate import Certificate
from harness.targets.discovery import FILE_SERVER, get
from harness.targets.file_server import TARGET_FILE, Target, stage as stage_file_server
from harness.targets.setup import SERVED_AS, Setup

LOAD_PORT, TLS_PORT, UPSTREAM_PORT, H2C_PORT = 80, 443, 8080, 81
# An HTTP/2 stack's file server logs each request of another HTTP version on the tools' port, but the harness's
# own (User-Agent lth-*: file_server.py HARNESS_AGENT, the RTT probe's): a tool's fallback, counted per run.
PROTOCOL_LOG = "protocol.log"
# Behind a proxy, the HTTP version its client spoke (HTTP/2.0, HTTP/1.1), in this request header to the file server.
PROTO_HEADER = "X-Lth-Client-Protocol"
ECHO_MODULE = Path("/usr/lib/nginx/modules/ngx_http_echo_module.so")   # Debian's libnginx-mod-http-echo
JS_MODULE = Path("/usr/lib/nginx/modules/ngx_http_js_module.so")       # Debian's libnginx-mod-http-js (njs)
UNDELAYED = "/lth-undelayed"   # the file without the backend delay, for the RTT probe
DELAY_LEVELS = 256   # a uniform delay range is drawn from the first two hex digits of $request_id


def served_folder() -> Path:
    """An empty folder for the file server, directly under /tmp. Nginx walks the served file's path at every
    request (open_file_cache is off), so the runtimes serve it as deep as a copy by hand at /srv/target: 2
    components deeper, below a stack's folder, oha lost 1.6% on the host and Docker (docs/overhead.md)."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}-target-"))


@dataclass(frozen=True)
class Process:
    role: str               # "upstream" (the file server) or "proxy"
    argv: list[str]
    workers: int | None = None   # the file server's worker_processes (None: Nginx's `auto`)


@dataclass(frozen=True)
class Stack:
    """A setup staged into a folder: the processes to start (file server first) and where the load goes."""
    setup: Setup
    processes: list[Process]
    target: Target
    files: Path             # the file server's folder (its prefix)

    @property
    def has_proxy(self) -> bool:
        return len(self.processes) > 1


def stage(setup: Setup, folder: Path, load_host: str, upstream_host: str, certificate: Certificate | None,
          cpus: dict[str, tuple[int, ...]] | None = None, files: Path | None = None) -> Stack:
    """Write every configuration of ``setup`` under ``folder``: the file server in ``files/``, a proxy in
    ``proxy/``. ``load_host`` is the address the tools load; ``upstream_host`` the file server's, as the
    proxy reaches it (the same address when both run in one place). ``cpus``: each server's CPUs
    (CpuSplit.stack_cpus), an Nginx's worker count (file_server.nginx_conf); None: Nginx's own `auto`.
    ``files``: the file server's folder elsewhere (an empty one), in place of ``folder/files``."""
    workers = {role: len(cpu_set) for role, cpu_set in cpus.items()} if cpus else {}
    adapter = get(setup.target)
    if setup.tls and certificate is None:
        raise HarnessError("a TLS setup needs a certificate (make_certificate)")
    files = files or folder / "files"
    files.mkdir(parents=True, exist_ok=True)
    behind_proxy = adapter.is_proxy
    stage_file_server(files, port=UPSTREAM_PORT if behind_proxy else LOAD_PORT, workers=workers.get("upstream"))
    _file_server_extras(files, setup, certificate if setup.tls and not behind_proxy else None, behind_proxy)
    api_log = _api_extras(files, setup, adapter.folder) if adapter.flows else None
    upstream = Process("upstream", ["nginx", "-p", f"{files}/", "-c", str(files / "nginx.conf")],
                       workers.get("upstream"))
    port = TLS_PORT if setup.tls else LOAD_PORT
    undelayed = f"{UNDELAYED}/{TARGET_FILE}" if setup.delay_ms else None
    h2c_port = H2C_PORT if setup.protocol == "h2c" else None
    protocol = {"protocol": setup.protocol, "h2c_port": h2c_port,
                "protocol_log": files / PROTOCOL_LOG if setup.checked else None}
    _readable(files)
    if not behind_proxy:
        _readable(folder)
        return Stack(setup, [upstream], Target(load_host, port, status_port=LOAD_PORT, tls=setup.tls,
                                               undelayed_path=undelayed, api_log=api_log, **protocol), files)
    proxy_dir = folder / "proxy"
    (proxy_dir / "tmp").mkdir(parents=True)
    config = proxy_dir / adapter.config
    template = jinja2.Template((adapter.folder / f"{adapter.config}.j2").read_text(), undefined=jinja2.StrictUndefined)
    config.write_text(template.render(port=port, tls=setup.tls, upstream=f"{upstream_host}:{UPSTREAM_PORT}",
                                      cert=certificate and certificate.cert, key=certificate and certificate.key,
                                      pem=certificate and certificate.pem, protocol=setup.protocol,
                                      h2c_port=h2c_port, proto_header=PROTO_HEADER,
                                      workers=workers.get("proxy", "auto")) + "\n")
    argv = [part.format(prefix=proxy_dir, config=config) for part in adapter.command]
    _readable(folder)
    return Stack(setup, [upstream, Process("proxy", argv)],
                 Target(load_host, port, status_port=UPSTREAM_PORT, status_host=upstream_host, tls=setup.tls,
                        undelayed_path=undelayed, **protocol), files)


# Files only the servers' master (root) reads, at start-up: the api target's token secret is in this one.
PRIVATE_FILES = frozenset({"lth-http-api.conf"})


def _readable(folder: Path) -> None:
    """The servers' workers run as an unprivileged user: every folder and file must be readable by them, but a
    secret (PRIVATE_FILES), which only the master reads, by its owner alone."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o600 if path.name in PRIVATE_FILES else 0o644)


def _file_server_extras(files: Path, setup: Setup, certificate: Certificate | None, behind_proxy: bool) -> None:
    """The lth-*.conf files targets/nginx/nginx.conf includes: TLS on 443, HTTP/2, and the backend delay."""
    server: list[str] = []
    http: list[str] = []
    if certificate is not None:
        h2 = " http2" if setup.protocol == "h2" else ""   # ALPN offers h2 and http/1.1: a fallback is logged
        server += [f"listen {TLS_PORT} ssl{h2} backlog=8192;", f"ssl_certificate {certificate.cert};",
                   f"ssl_certificate_key {certificate.key};"]
    if setup.protocol == "h2c" and not behind_proxy:
        # Prior knowledge only: HTTP/1.1 is refused here. sendfile off: Nginx 1.22 sends an h2c response's body by
        # sendfile() after its HEADERS frame and the two meet Nagle and delayed ACKs: h2load at 20 connections of
        # one stream got 460 requests/s with it, 71,600 without (2026-11-27, 2 cores, loopback).
        server += [f"listen {H2C_PORT} http2 backlog=8192;", "sendfile off;"]
    if setup.checked:
        http += _protocol_log_format(behind_proxy, SERVED_AS[setup.protocol])
        server.append(f"access_log {PROTOCOL_LOG} lth_protocol if=$lth_off_protocol;")
    if setup.delay_ms is not None:
        if not ECHO_MODULE.is_file():
            raise HarnessError(f"backend_delay_ms needs Nginx's echo module ({ECHO_MODULE}, Debian package "
                               "libnginx-mod-http-echo): run `make deps`")
        (files / "lth-main.conf").write_text(f"load_module {ECHO_MODULE};\n")
        http.append(_delay_map(*setup.delay_ms))
        # echo_exec to the static file keeps its Content-Length (an HTTP/1.0 keep-alive client such as ab
        # needs it; echo_location's subrequest output is chunked) and counts one request at stub_status.
        server += ["location = /style.css { echo_sleep $lth_delay_s; echo_exec @lth_file; }",
                   f"location @lth_file {{ try_files /{TARGET_FILE} =404; }}",
                   f"location {UNDELAYED}/ {{ alias {files}/html/; }}"]   # the RTT probe's path
    if http:
        (files / "lth-http.conf").write_text("\n".join(http) + "\n")
    if server:
        (files / "lth-server.conf").write_text("\n".join(server) + "\n")


def _protocol_log_format(behind_proxy: bool, version: str) -> list[str]:
    """$lth_off_protocol: 1 for a tool's request in another HTTP version than ``version`` (the harness's own,
    User-Agent lth-*, left out). Direct, the file server sees the version on the tools' port; behind a proxy, which
    speaks HTTP/1.1 to it, the version the proxy's client spoke, in PROTO_HEADER."""
    expected = version.replace(".", "\\.")
    if behind_proxy:
        spoken = f"$http_{PROTO_HEADER.lower().replace('-', '_')}"
        return [f"log_format lth_protocol '$server_port {spoken}';",
                f'map "{spoken} $http_user_agent" $lth_off_protocol {{',
                f'    "~^{expected} " 0;',
                '    "~ lth-[a-z-]+$" 0;',                               # HARNESS_AGENT, lth-rtt-probe
                "    default 1;", "}"]
    return ["log_format lth_protocol '$server_port $server_protocol';",
            'map "$server_port $server_protocol $http_user_agent" $lth_off_protocol {',
            f'    "~^{LOAD_PORT} " 0;',                                    # stub_status and the checks on port 80
            f'    "~^\\d+ {expected} " 0;',
            '    "~ lth-[a-z-]+$" 0;',
            "    default 1;", "}"]


def _api_extras(files: Path, setup: Setup, folder: Path) -> Path:
    """The api target's additions to the file server (targets/api/api.conf.j2 into lth-{main,http,server}-api.conf):
    njs, the login and the token check, and the API's log, whose path it returns. The tokens' secret is made
    here, per staging: a token another stack issued is refused."""
    if not JS_MODULE.is_file():
        raise HarnessError(f"the api target needs Nginx's njs module ({JS_MODULE}, Debian package "
                           "libnginx-mod-http-js): run `make deps`")
    (files / "api").mkdir()
    for name in ("api.js", "contact.json"):
        shutil.copy(folder / name, files / "api" / name)
    template = jinja2.Template((folder / "api.conf.j2").read_text(), undefined=jinja2.StrictUndefined)
    parts = template.make_module({"module": JS_MODULE, "files": files, "secret": secrets.token_hex(16),
                                  "password": PASSWORD, "log": API_LOG, "log_format": API_LOG_FORMAT,
                                  "http2": setup.checked, "protocol_log": PROTOCOL_LOG})
    for part in ("main", "http", "server"):
        (files / f"lth-{part}-api.conf").write_text(f"{getattr(parts, part)()}\n")
    return files / API_LOG


def _delay_map(low_ms: float, high_ms: float) -> str:
    """$lth_delay_s: fixed, or uniform over [low, high] in DELAY_LEVELS steps keyed by $request_id's
    first two hex digits (random per request)."""
    if low_ms == high_ms:
        return f"map $request_id $lth_delay_s {{ default {low_ms / 1000:.3f}; }}\n"
    step = (high_ms - low_ms) / (DELAY_LEVELS - 1)
    lines = [f"    ~^{level:02x} {(low_ms + level * step) / 1000:.3f};" for level in range(DELAY_LEVELS)]
    return "map $request_id $lth_delay_s {\n" + "\n".join(lines) + f"\n    default {low_ms / 1000:.3f};\n}}\n"


def version_of(output: str) -> str:
    """The version in a server's version output (nginx -v, haproxy -v, caddy version)."""
    match = re.search(r"\d+\.\d+(\.\d+)?", output)
    return match.group(0) if match else "unknown"


def stack_facts(stack: Stack, cpus: dict[str, tuple[int, ...]], versions: dict[str, str]) -> dict:
    """What the rows say about the target: target_stack (what runs on which CPUs) and target_version.
    ``versions``: {target id: version} of the servers in the stack."""
    proxy = get(stack.setup.target) if stack.has_proxy else None
    workers = stack.processes[0].workers
    upstream = (f"{FILE_SERVER} {versions.get(FILE_SERVER, '?')}"
                + (f" ({workers} worker{'s' * (workers != 1)})" if workers else "")
                + f" on CPUs {format_cpus(cpus['upstream'])}")
    if proxy is None:
        described = upstream
    else:
        described = f"{proxy.id} {versions.get(proxy.id, '?')} on CPUs {format_cpus(cpus['proxy'])} -> {upstream}"
        if cpus["proxy"] == cpus["upstream"]:
            described += " (proxy and file server share the target's CPUs: too few cores to give each its own)"
    if get(stack.setup.target).flows:
        described = f"{stack.setup.target}: {described} with the njs API (POST /api/auth/login, GET /api/contact)"
    if stack.setup.tls:
        described += f"; TLS ends at {proxy.id if proxy else FILE_SERVER} (self-signed, not verified)"
    if stack.setup.checked:
        port = {"h3": f"UDP {TLS_PORT}", "h2c": H2C_PORT}.get(stack.setup.protocol, TLS_PORT)
        described += (f"; {SERVED_AS[stack.setup.protocol][:-2]} ({stack.setup.protocol}) at "
                      f"{proxy.id if proxy else FILE_SERVER} on port {port}")
    if stack.setup.delay_ms:
        described += f"; {stack.setup.describe().split(', ')[-1]} at the file server (echo_sleep)"
    return {"target_stack": described, "target_version": versions.get(stack.setup.target)}
