"""The fake runtime's "tool" (tests/fake_runtime.py): python fake_tool.py MODE URL DURATION_S [RATE].

ok: GETs URL on one keep-alive connection for LOAD_S (the runner does not hold a tool to its duration;
the tests run faster), then prints one JSON summary line; long: as ok for the whole DURATION_S; window: after a start-up of STARTUP_S holding
BALLAST_MB, the load for the whole DURATION_S (top samples it once a second); fail: as ok, then a message
on stderr and exit status 3; hang: never ends; garbage: as ok but prints no summary; zero: a summary of 0 requests, exit 0; wrapped-MODE: MODE under
a wrapper that holds BALLAST_MB (see wrap); post: as ok, then POST_S more seconds of post-run work past its
duration, writing a progress line every 0.5 s (idle in top: only its output grows), then its summary; paced: GETs at RATE a second, evenly, but never more than
PACED_CAP_RPS (see paced); without a RATE, as ok. Standard library only: it runs as a
script, outside the harness's package.
"""
import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

MODES = ("ok", "long", "window", "fail", "hang", "garbage", "zero", "wrapped-long", "paced", "post")
WRAPPED_NAME = "lth-fake-tool"   # the wrapped tool's process name (sampled_process)
STARTUP_S = 2.0
BALLAST_MB = 200
LOAD_S = 0.3
POST_S = 14.0               # past a 1 s run's 8 s grace (tests/test_runner_status.py): two looks working
PACED_CAP_RPS = 90          # the most a paced fake sends a second: its capacity, whatever the rate asked
PACED_LATENCY_MS = 0.05     # what a paced fake reports for every request


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


def paced(url: str, duration_s: float, rate: float) -> dict:
    """GET ``url`` at min(rate, PACED_CAP_RPS) a second, evenly spaced, for ``duration_s``. It reports
    its schedule's window (``duration_s``) and PACED_LATENCY_MS for every request, so its achieved rate is
    exactly min(rate, cap) and its p99 fixed, however busy the machine: the search's steps are known."""
    pace = min(rate, PACED_CAP_RPS)
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    started_at, start, sent = time.time(), time.perf_counter(), 0
    while sent < pace * duration_s:
        time.sleep(max(0.0, start + sent / pace - time.perf_counter()))
        conn.request("GET", parts.path)
        conn.getresponse().read()
        sent += 1
    time.sleep(max(0.0, start + duration_s - time.perf_counter()))
    conn.close()
    return {"requests": sent, "measured_s": duration_s, "load_started_at": started_at,
            "latencies_ms": [PACED_LATENCY_MS] * sent}


def wrap(mode: str, url: str, duration_s: float) -> int:
    """A wrapper holding BALLAST_MB around the real tool, run as WRAPPED_NAME (a link to this Python):
    memory and CPU must count the tool alone, in the run and in its 1-VU baseline."""
    ballast = bytearray(BALLAST_MB * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])
    link = Path(tempfile.mkdtemp(prefix="lth-fake-")) / WRAPPED_NAME
    link.symlink_to(sys.executable)
    try:
        return subprocess.run([str(link), __file__, mode, url, str(duration_s)]).returncode
    finally:
        shutil.rmtree(link.parent)


def main(mode: str, url: str, duration_s: float, rate: float | None = None) -> int:
    if mode == "paced" and rate:
        print(json.dumps(paced(url, duration_s, rate)))
        return 0
    if mode.startswith("wrapped-"):
        return wrap(mode.removeprefix("wrapped-"), url, duration_s)
    if mode == "hang":
        time.sleep(3600)
    if mode == "window":
        ballast = bytearray(BALLAST_MB * 1024 * 1024)   # a start-up's memory (a JVM, a compile)
        ballast[::4096] = b"x" * len(ballast[::4096])     # touched, so it is resident
        time.sleep(STARTUP_S)
        del ballast
    if mode == "zero":           # wrk at 1,000 VUs in a TCG VM on a busy machine: exit 0, "0 requests"
        print(json.dumps({"requests": 0, "measured_s": duration_s, "load_started_at": time.time(), "latencies_ms": []}))
        return 0
    summary = _load(url, duration_s if mode in ("window", "long") else min(duration_s, LOAD_S))
    if mode == "post":
        finish = time.time() + duration_s + POST_S
        while time.time() < finish:
            print("fake: encoding the results", flush=True)
            time.sleep(0.5)
    if mode == "garbage":
        print("fake: nothing a parser could read")
        return 0
    print(json.dumps(summary))
    if mode == "fail":
        print("fake: first line of stderr\nfake: the connection pool broke", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), *map(float, sys.argv[4:5])))
