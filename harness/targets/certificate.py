"""The suite's throw-away self-signed TLS certificate (the tools are told not to verify it)."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.files import write_atomic


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path
    pem: Path     # both in one file (HAProxy's crt)


def make_certificate(folder: Path) -> Certificate:
    """A throw-away self-signed certificate for this suite (the tools are told not to verify it)."""
    if shutil.which("openssl") is None:
        raise HarnessError("a TLS scenario needs openssl to make its throw-away certificate: run `make deps`")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    result = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                             "-subj", "/CN=lth-target", "-keyout", str(key), "-out", str(cert)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise HarnessError(f"openssl could not make the TLS certificate: {result.stderr.strip()[-200:]}")
    pem = folder / "both.pem"
    write_atomic(pem, cert.read_text() + key.read_text(), mode=0o600)
    # The key only for its owner: the servers that read it start as root (Nginx's master, HAProxy, Caddy;
    # the target container runs as root too). The certificate is public.
    cert.chmod(0o644)
    key.chmod(0o600)
    return Certificate(cert, key, pem)

