"""The fake runtime's "tool" (tests/fake_runtime.py): python fake_tool.py MODE URL DURATION_S.

ok: GETs URL on one keep-alive connection for LOAD_S (the runner does not hold a tool to its duration;
the tests run faster), then prints one JSON summary line; long: as ok for the whole DURATION_S; window: after a start-up of STARTUP_S holding
BALLAST_MB, the load for the whole DURATION_S (top samples it once a second); fail: as ok, then a message
on stderr and exit status 3; hang: never ends; garbage: as ok but prints no summary; wrapped-MODE: MODE under
a wrapper that holds BALLAST_MB (see wrap). Standard library only: it runs as a
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

MODES = ("ok", "long", "window", "fail", "hang", "garbage", "wrapped-long")
WRAPPED_NAME = "lth-fake-tool"   # the wrapped tool's process name (sampled_process)
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


def main(mode: str, url: str, duration_s: float) -> int:
    if mode.startswith("wrapped-"):
        return wrap(mode.removeprefix("wrapped-"), url, duration_s)
    if mode == "hang":
        time.sleep(3600)
    if mode == "window":
        ballast = bytearray(BALLAST_MB * 1024 * 1024)   # a start-up's memory (a JVM, a compile)
        ballast[::4096] = b"x" * len(ballast[::4096])     # touched, so it is resident
        time.sleep(STARTUP_S)
        del ballast
    summary = _load(url, duration_s if mode in ("window", "long") else min(duration_s, LOAD_S))
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
