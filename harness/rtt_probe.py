"""Measures the round-trip time to the target from where a tool runs.

Run as a script inside the generator's network namespace:
    python rtt_probe.py HOST PORT PATH [COUNT] [--tls] [--at UNIX_TIME] [--steady RTT_MS BAND_MS]
One keep-alive connection, one warm-up request (it pays for the handshake), then COUNT timed
GETs; prints JSON with the median (the figure the harness records), min and max in ms, and the
median time of CONNECTS fresh TCP handshakes (~ the RTT where the shaper delays the handshake), and
the wall-clock times the timed GETs began and ended (gets_from, gets_to).
--at T: the timed GETs start at the wall-clock time T (at most MAX_WAIT_S away), whatever the
script's own start-up took: the probe under a tool's load (shaping.loaded_probe), whose interpreter
starting on busy cores in a TCG VM took seconds and pushed the probe past the end of the load.
--steady RTT_MS BAND_MS: a probe that misses RTT_MS by more than BAND_MS is probed twice more, and the
median of the three is printed (with "probes": how many ran). In this one process: an interpreter's
start-up in a TCG VM costs seconds, three of them per missed probe in a calibration.

Raw sockets with TCP_NODELAY rather than http.client: the probe's own cost is part of what it
measures, and http.client's parsing (and its Nagle-delayed writes) added ~1 ms in a slow VM,
enough to put a 10 ms profile outside the tolerance it is meant to check.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import socket
import statistics
import sys
import time

CONNECTS = 3
MAX_WAIT_S = 600         # a generator host's clock far ahead must not hold the probe past its run


def _connect(host: str, port: int, tls: bool = False) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if not tls:
        return sock
    import ssl  # here: ~15% of the script's start-up, which a TCG VM under load stretches to seconds

    # A TLS target's certificate is the suite's throw-away self-signed one: encrypted, never verified.
    return ssl._create_unverified_context().wrap_socket(sock)


def _exchange(sock: socket.socket, request: bytes) -> tuple[bytes, bytes]:
    """Send one GET and read its whole response (headers, then Content-Length bytes of body); returns
    the status line and the body."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += _recv(sock)
    head, body = data.split(b"\r\n\r\n", 1)
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += _recv(sock)
    return head.split(b"\r\n", 1)[0], body


def _check(status_line: bytes, body: bytes, url: str, expect_sha256: str | None) -> None:
    """The target's file, as the harness served it (its SHA-256), from where the tool runs: not some
    other server the address reached (issue 34: a generator host checked nothing)."""
    if expect_sha256 is None:
        return
    status = status_line.split(b" ")[1:2]
    if status != [b"200"] or hashlib.sha256(body).hexdigest() != expect_sha256:
        raise TargetMismatch(f"{url} answered {status_line.decode(errors='replace')!r} with {len(body)} bytes "
                             "that are not the harness's target file: not the Nginx the harness started")


class TargetMismatch(Exception):
    pass


def _recv(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the target closed the connection")
    return chunk


def probe(host: str, port: int, path: str, count: int = 30, tls: bool = False, at: float = 0.0,
          expect_sha256: str | None = None) -> dict:
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: lth-rtt-probe\r\n\r\n".encode()
    with _connect(host, port, tls) as sock:
        _check(*_exchange(sock, request), f"{host}:{port}{path}", expect_sha256)
        time.sleep(min(MAX_WAIT_S, max(0.0, at - time.time())))
        times, gets_from = [], time.time()
        for _ in range(count):
            started = time.perf_counter()
            _exchange(sock, request)
            times.append((time.perf_counter() - started) * 1000)
        gets_to = time.time()
    connects = []
    for _ in range(CONNECTS):
        started = time.perf_counter()
        _connect(host, port).close()
        connects.append((time.perf_counter() - started) * 1000)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "count": count,
            "connect_ms": statistics.median(connects), "gets_from": gets_from, "gets_to": gets_to}


def steady(host: str, port: int, path: str, count: int, tls: bool, rtt_ms: float, band_ms: float,
           expect_sha256: str | None = None) -> dict:
    probes = [probe(host, port, path, count, tls, expect_sha256=expect_sha256)]
    if abs(probes[0]["median_ms"] - rtt_ms) > band_ms:
        probes += [probe(host, port, path, count, tls) for _ in range(2)]
    return {**median_probe(probes), "probes": len(probes)}


def median_probe(probes: list[dict]) -> dict:
    """The probe whose median is the median of the probes' (one of three: not the mean of their figures)."""
    return sorted(probes, key=lambda p: p["median_ms"])[len(probes) // 2]


def main(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description="keep-alive GETs timed from where a tool runs")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("path")
    parser.add_argument("count", type=int, nargs="?", default=30)
    parser.add_argument("--tls", action="store_true", help="a TLS target (its certificate is not verified)")
    parser.add_argument("--at", type=float, default=0.0, metavar="UNIX_TIME",
                        help="start the timed GETs at this wall-clock time (after the warm-up GET)")
    parser.add_argument("--steady", type=float, nargs=2, metavar=("RTT_MS", "BAND_MS"),
                        help="probe twice more when the first misses RTT_MS by more than BAND_MS; print the median")
    parser.add_argument("--expect-sha256", metavar="HEX",
                        help="the first GET must answer 200 with a body of this SHA-256 (exit status 3 if not)")
    args = parser.parse_args(argv)
    if args.steady:
        return steady(args.host, args.port, args.path, args.count, args.tls, *args.steady, args.expect_sha256)
    return probe(args.host, args.port, args.path, args.count, args.tls, args.at, args.expect_sha256)


if __name__ == "__main__":
    try:
        print(json.dumps(main(sys.argv[1:])))
    except TargetMismatch as exc:
        sys.stderr.write(f"{exc}\n")
        sys.exit(3)
