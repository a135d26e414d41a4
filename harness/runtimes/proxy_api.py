"""Toxiproxy's HTTP API, called from this machine (harness/network/shaping.py sets the latency through it)."""
from __future__ import annotations

import http.client
import json

from harness.errors import HarnessError


def call_api(host: str, port: int, method: str, path: str, body: dict | None = None) -> dict:
    """One Toxiproxy API call over HTTP from here."""
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request(method, path, body=json.dumps(body) if body else None,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        if response.status >= 300:
            raise HarnessError(f"toxiproxy API {method} {path} returned {response.status}: {data[:200]!r}")
        return json.loads(data) if data else {}
    finally:
        conn.close()
