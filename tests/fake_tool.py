"""The fake runtime's "tool" (tests/fake_runtime.py): python fake_tool.py MODE URL DURATION_S.

ok: GETs URL on one keep-alive connection for LOAD_S (the runner does not hold a tool to its duration;
the tests run faster), then prints one JSON summary line; window: after a start-up of STARTUP_S holding
BALLAST_MB, the load for the whole DURATION_S (top samples it once a second); fail: as ok, then a message
on stderr and exit status 3; hang: never ends; garbage: as ok but prints no summary. Standard library only: it runs as a
script, outside the harness's package.
"""
import http.client
import json
import sys
import time
from urllib.parse import urlsplit

MODES = ("ok", "window", "fail", "hang", "garbage")
STARTUP_S = 2.0
BALLAST_MB = 200
LOAD_S = 0.3


def _load(url: str, duration_s: float) -> dict:
    """GET ``url`` on one keep-alive connection for ``duration_s``."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    started_at, latencies = time.time(), []
    while time.time() - started_at < duration_s:
        sent = time.perf_counter()
        conn.request("GET", parts.path)
        conn.getresponse().read()
        latencies.append((time.perf_counter() - sent) * 1000)
        time.sleep(0.005)
    conn.close()
    return {"requests": len(latencies), "measured_s": time.time() - started_at, "load_started_at": started_at,
            "latencies_ms": latencies}


def main(mode: str, url: str, duration_s: float) -> int:
    if mode == "hang":
        time.sleep(3600)
    if mode == "window":
        ballast = bytearray(BALLAST_MB * 1024 * 1024)   # a start-up's memory (a JVM, a compile)
        ballast[::4096] = b"x" * len(ballast[::4096])     # touched, so it is resident
        time.sleep(STARTUP_S)
        del ballast
    summary = _load(url, duration_s if mode == "window" else min(duration_s, LOAD_S))
    if mode == "garbage":
        print("fake: nothing a parser could read")
        return 0
    print(json.dumps(summary))
    if mode == "fail":
        print("fake: first line of stderr\nfake: the connection pool broke", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
