"""Measures the round-trip time to the target from where a tool runs.

Run as a script inside the generator's network namespace:
    python rtt_probe.py HOST PORT PATH [COUNT]
One keep-alive connection, one warm-up request (it pays for the handshake), then COUNT timed
GETs; prints JSON with the median (the figure the harness records), min and max in ms.
"""
from __future__ import annotations

import http.client
import json
import statistics
import sys
import time


def probe(host: str, port: int, path: str, count: int = 30) -> dict:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        conn.getresponse().read()
        times = []
        for _ in range(count):
            started = time.perf_counter()
            conn.request("GET", path)
            conn.getresponse().read()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "count": count}


if __name__ == "__main__":
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    print(json.dumps(probe(host, port, path, count)))
