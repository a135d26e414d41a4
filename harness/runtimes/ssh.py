"""Another machine reached over plain SSH (``--target-host ssh://user@host[:port]``, or the name of
a Docker context whose endpoint is such an ssh:// URL: ``docker context create lab --docker
host=ssh://root@lab``).

The harness runs short shell scripts there (start and stop Nginx, read the machine's facts) with
the system's ``ssh`` client, never asking for a password (BatchMode). Keys, users and known hosts
come from the user's own SSH setup; ``LTH_SSH_CONFIG=FILE`` replaces it with one config file (the
tests' second host uses that).
"""
from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import subprocess
from dataclasses import dataclass
from urllib.parse import urlsplit

from harness.errors import HarnessError

SSH_CONFIG_ENV = "LTH_SSH_CONFIG"
CONNECT_TIMEOUT_S = 10
SSH_FAILED = 255     # ssh's own status when it could not connect or log in


@dataclass(frozen=True)
class SshHost:
    url: str            # as the user wrote it: ssh://root@198.18.2.2
    host: str           # the name or address ssh connects to
    address: str        # the IPv4 address the load goes to (host resolved once, here)
    user: str | None = None
    port: int | None = None
    config: str | None = None   # an ssh_config file (-F); default: $LTH_SSH_CONFIG, else the user's
    context: str | None = None  # the Docker context it was named by (its endpoint is ``url``)

    def argv(self, script: str) -> list[str]:
        """``ssh`` running ``script`` with sh on the host."""
        options = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        config = self.config or os.environ.get(SSH_CONFIG_ENV)
        if config:
            options = ["-F", config, *options]
        if self.user:
            options += ["-l", self.user]
        if self.port:
            options += ["-p", str(self.port)]
        return ["ssh", *options, "--", self.host, shlex.join(["sh", "-c", script])]   # "--" ends the options: the command is never parsed as one

    def run(self, script: str, stdin: bytes | None = None, timeout: float = 60,
            check: bool = True) -> subprocess.CompletedProcess:
        """Run ``script`` there; with ``check`` a failure is a HarnessError naming the host."""
        try:
            result = subprocess.run(self.argv(script), input=stdin, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{self.url}: no answer over ssh within {timeout:.0f} s") from None
        if check and result.returncode != 0:
            last = (result.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            what = "ssh failed" if result.returncode == SSH_FAILED else f"remote command failed (exit {result.returncode})"
            raise HarnessError(f"{self.url}: {what}: {last}")
        return result

    def text(self, script: str, timeout: float = 60) -> str:
        return self.run(script, timeout=timeout).stdout.decode(errors="replace")


def parse_ssh_url(text: str, option: str = "--target-host") -> SshHost:
    """``ssh://[user@]host[:port]``, or a Docker context's name (its ssh:// endpoint); the host is
    resolved to the IPv4 address the load will use."""
    context = None
    if "://" not in text:
        context, text = text, _context_endpoint(text, option)
    parts = urlsplit(text)
    if parts.scheme != "ssh" or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise HarnessError(f"{option} {text!r}: write it as ssh://[user@]host[:port] or a Docker context's name")
    try:
        port = parts.port
    except ValueError:
        raise HarnessError(f"{option} {text!r}: the port is not a number") from None
    for part, value in (("user", parts.username), ("host", parts.hostname)):
        if value and value.startswith("-"):
            raise HarnessError(f"{option} {text!r}: the {part} {value!r} starts with '-', which ssh would take as an "
                               "option: write ssh://[user@]host[:port] with neither starting with '-'")
    return SshHost(url=text, host=parts.hostname, address=_ipv4(parts.hostname, text, option),
                   user=parts.username, port=port, context=context)


def _context_endpoint(name: str, option: str) -> str:
    """The ssh:// endpoint of Docker context ``name``: the harness runs docker, top and ps there over
    one ssh setup, so a context must reach its daemon over ssh (not tcp:// or a local socket)."""
    try:
        result = subprocess.run(["docker", "context", "inspect", name, "--format", "{{.Endpoints.docker.Host}}"],
                                capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        raise HarnessError(f"{option} {name!r}: not an ssh:// URL, and no docker CLI answers to look it up as a Docker "
                           "context: write ssh://[user@]host[:port]") from None
    if result.returncode != 0:
        raise HarnessError(f"{option} {name!r}: neither an ssh:// URL nor a Docker context (`docker context ls` lists "
                           "them): write ssh://[user@]host[:port] or create the context")
    endpoint = result.stdout.strip()
    if not endpoint.startswith("ssh://"):
        raise HarnessError(f"{option} {name!r}: Docker context {name} reaches its daemon at {endpoint or 'no host'}; the "
                           "harness runs docker, top and ps there over ssh: use a context made with host=ssh://...")
    return endpoint


def _ipv4(host: str, url: str, option: str) -> str:
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError as exc:
        raise HarnessError(f"{option} {url}: cannot resolve {host} to an IPv4 address ({exc})") from None
