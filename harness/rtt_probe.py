"""Measures the round-trip time to the target from where a tool runs.

Run as a script inside the generator's network namespace:
    python rtt_probe.py HOST PORT PATH [COUNT] [tls]
One keep-alive connection, one warm-up request (it pays for the handshake), then COUNT timed
GETs; prints JSON with the median (the figure the harness records), min and max in ms, and the
median time of CONNECTS fresh TCP handshakes (~ the RTT where the shaper delays the handshake).

Raw sockets with TCP_NODELAY rather than http.client: the probe's own cost is part of what it
measures, and http.client's parsing (and its Nagle-delayed writes) added ~1 ms in a slow VM,
enough to put a 10 ms profile outside the tolerance it is meant to check.
"""
from __future__ import annotations

import json
import socket
import ssl
import statistics
import sys
import time

CONNECTS = 3


def _connect(host: str, port: int, tls: bool = False) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # A TLS target's certificate is the suite's throw-away self-signed one: encrypted, never verified.
    return ssl._create_unverified_context().wrap_socket(sock) if tls else sock


def _exchange(sock: socket.socket, request: bytes) -> None:
    """Send one GET and read its whole response (headers, then Content-Length bytes of body)."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += _recv(sock)
    head, body = data.split(b"\r\n\r\n", 1)
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += _recv(sock)


def _recv(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the target closed the connection")
    return chunk


def probe(host: str, port: int, path: str, count: int = 30, tls: bool = False) -> dict:
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: lth-rtt-probe\r\n\r\n".encode()
    with _connect(host, port, tls) as sock:
        _exchange(sock, request)
        times = []
        for _ in range(count):
            started = time.perf_counter()
            _exchange(sock, request)
            times.append((time.perf_counter() - started) * 1000)
    connects = []
    for _ in range(CONNECTS):
        started = time.perf_counter()
        _connect(host, port).close()
        connects.append((time.perf_counter() - started) * 1000)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "count": count,
            "connect_ms": statistics.median(connects)}


if __name__ == "__main__":
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    print(json.dumps(probe(host, port, path, count, tls=sys.argv[5:6] == ["tls"])))
