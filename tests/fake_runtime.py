"""An in-process runtime for the runner's unit tests: no root, namespaces, Nginx, Docker or load tool.

The target is a small HTTP server on 127.0.0.1 (a random port) that serves the real target's file with
keep-alive and counts requests in stub_status's format; the "tool" is this file run as a Python child
process (``python fake_tool.py MODE URL DURATION [RATE]``), which behaves as MODE says and prints one
JSON summary line that ``FakeTool.parse`` reads; a rate run passes the rate after the duration.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Iterator

import psutil

from harness import TARGET_DIR
from harness.runtimes.base import Runtime, Session
from harness.sampling import PidSource
from harness.store.figures import Metrics
from harness.targets.file_server import STATUS_PATH, TARGET_FILE, Target
from harness.tools.adapter import ToolAdapter
from harness.tools.output import ParseError, RunSpec, ToolOutput

from fake_tool import MODES, WRAPPED_NAME

TOOL = Path(__file__).with_name("fake_tool.py")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"      # keep-alive, as Target.verify demands
    disable_nagle_algorithm = True     # headers and body are two writes: no 40 ms delayed-ACK stall
    body = (TARGET_DIR / "html" / TARGET_FILE).read_bytes()

    def do_GET(self) -> None:
        server: FakeTarget = self.server   # type: ignore[assignment]
        server.count()
        if self.path == STATUS_PATH:
            body = (f"Active connections: 1 \nserver accepts handled requests\n 1 1 {server.requests} \n"
                    "Reading: 0 Writing: 1 Waiting: 0 \n").encode()
        else:
            body = self.body
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class FakeTarget(ThreadingHTTPServer):
    """Nginx's stand-in: the target file, and a request total that counts status requests too."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests = 0
        self._lock = threading.Lock()

    def count(self) -> None:
        with self._lock:
            self.requests += 1

    @property
    def target(self) -> Target:
        port = self.server_address[1]
        return Target("127.0.0.1", port, status_port=port)


class FakeSession(Session):
    cpus = 1
    generator_netns: list[str] = []
    target_netns: list[str] = []
    shape_netns: list[str] = []
    shape_device = capture_device = "lo"

    def __init__(self, target: Target) -> None:
        self.target = target

    def popen(self, argv: list[str], stdout: IO, stderr: IO, run_dir: Path | None = None) -> subprocess.Popen:
        return subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)

    def pids(self, proc: subprocess.Popen) -> PidSource:
        def tree() -> set[int]:
            try:
                return {proc.pid, *(child.pid for child in psutil.Process(proc.pid).children(recursive=True))}
            except psutil.NoSuchProcess:
                return set()
        return tree

    def version(self, adapter: ToolAdapter) -> str:
        return "0.0-fake"


class FakeRuntime(Runtime):
    """``broken``: what prepare() reports as unable to run ({tool: reason})."""

    name = "fake"

    def __init__(self, broken: dict[str, str] | None = None) -> None:
        self.broken = broken or {}
        self.server: FakeTarget | None = None
        self.sessions = 0

    def __enter__(self) -> "FakeRuntime":
        self.server = FakeTarget()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def problems(self, adapters: list[ToolAdapter]) -> list[str]:
        return []

    def prepare(self, adapters: list[ToolAdapter]) -> dict[str, str]:
        return {a.name: self.broken[a.name] for a in adapters if a.name in self.broken}

    @contextmanager
    def session(self, adapter: ToolAdapter) -> Iterator[Session]:
        assert self.server is not None, "the runner enters the runtime before its sessions"
        self.sessions += 1
        yield FakeSession(self.server.target)


class FakeTool(ToolAdapter):
    """A tool whose child process behaves as ``mode`` says (see MODES)."""

    version_command = ["true"]
    concurrency_model = "one keep-alive connection, whatever the VUs"
    timing_resolution_ms = 0.001

    def __init__(self, mode: str, name: str | None = None, open_model: bool = False) -> None:
        assert mode in MODES, mode
        self.mode, self.name, self.open_model = mode, name or f"fake-{mode}", open_model
        self.sampled_process = WRAPPED_NAME if mode.startswith("wrapped-") else None
        self.folder = Path(__file__).parent

    def command(self, spec: RunSpec) -> list[str]:
        rate = [str(spec.rate_rps)] if spec.rate_rps else []
        return [sys.executable, str(TOOL), self.mode, spec.url, str(spec.duration_s), *rate]

    def parse(self, output: ToolOutput) -> Metrics:
        lines = [line for line in output.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise ParseError("no JSON summary line in the fake tool's output")
        data = json.loads(lines[-1])
        latencies = sorted(data["latencies_ms"]) or [None]          # a run of no request has no latency
        pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]   # noqa: E731
        load_start = data["load_started_at"] - output.launched_at if self.mode == "window" else None
        return Metrics(requests=data["requests"], errors=0, rps=data["requests"] / data["measured_s"],
                       measured_s=data["measured_s"], load_start_s=load_start, lat_min_ms=latencies[0],
                       lat_mean_ms=None if None in latencies else sum(latencies) / len(latencies),
                       lat_p50_ms=pick(0.5), lat_p75_ms=pick(0.75), lat_p90_ms=pick(0.9), lat_p95_ms=pick(0.95),
                       lat_p99_ms=pick(0.99), lat_max_ms=latencies[-1], source="the fake tool's JSON line")
