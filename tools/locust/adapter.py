"""Locust: Python + gevent, one greenlet per user; three variants of one adapter.

locust        FastHttpUser (geventhttpclient), one process
locust-http   HttpUser (python-requests), one process
locust-multi  FastHttpUser, Locust's own master + one worker process per core (--processes -1)

Figures come from Locust's --json-file (its final RequestStats, per entry): request and failure
counts, first/last request timestamps, exact min/max/total response time and the response-time
histogram. Locust keeps no per-request log: its histogram buckets are whole milliseconds below
100 ms and two significant digits above, so the percentiles are bucket values.
"""
from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

import numpy as np

from harness.stats import latency_metrics
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

OUTPUT_PREFIX = "locust"                   # --csv and --json-file prefix inside spec.out_dir
JSON_FILE = f"{OUTPUT_PREFIX}.json"        # Locust appends .json to --json-file


class Locust(ToolAdapter):
    timing_resolution_ms = 1  # percentiles: histogram buckets of whole ms below 100 ms

    def __init__(self, name: str = "locust", user_class: str = "FastUser", processes: int | None = None,
                 concurrency_model: str = "-u VUs FastHttpUser users spawned at once (-r VUs), no wait time, "
                                          "one keep-alive connection each, one process") -> None:
        self.name = name
        self.user_class = user_class
        self.processes = processes
        self.concurrency_model = concurrency_model

    def variants(self) -> list[ToolAdapter]:
        return [
            self,
            Locust("locust-http", "DefaultUser", None,
                   "-u VUs HttpUser (python-requests) users spawned at once (-r VUs), no wait time, "
                   "one keep-alive session each, one process"),
            Locust("locust-multi", "FastUser", -1,
                   "-u VUs FastHttpUser users spawned at once (-r VUs), no wait time, split over one "
                   "worker process per core (--processes -1) plus a master"),
        ]

    open_model = True
    rate_model = ("wait_time = constant_throughput(rate / VUs) per user (the *PacedUser classes): pacing of -u VUs "
                  "users, a late task starts at once without catching up, latency counts from the actual send")
    # locustfile.py: --lth-close sends Connection: close with every request (neither client has a
    # keep-alive switch); --lth-insecure turns HttpUser's certificate check off (FastHttpUser has none).
    keepalive_off = True
    tls = True
    h2 = h2c = "FastHttpUser (geventhttpclient) and HttpUser (python-requests) speak HTTP/1.1 only"

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        path = url.path or "/"
        if url.query:
            path += f"?{url.query}"
        prefix = str(spec.out_dir / OUTPUT_PREFIX)
        argv = [
            self.binary, "-f", str(self.folder / "locustfile.py"), "--headless",
            "-H", f"{url.scheme}://{url.netloc}", "--lth-path", path,
            "-u", str(spec.vus), "-r", str(spec.vus), "-t", f"{spec.duration_s}s",
            "--csv", prefix, "--json-file", prefix, "--only-summary",
            # Failed requests are counted in `errors`; they must not turn the run into a failed row.
            "--exit-code-on-error", "0",
        ]
        if self.processes is not None:
            argv += ["--processes", str(self.processes)]
        argv += [*([] if spec.keepalive else ["--lth-close"]), *(["--lth-insecure"] if spec.tls else [])]
        if spec.rate_rps:
            return [*argv, "--lth-user-rate", f"{spec.rate_rps / spec.vus:g}", self.user_class.replace("User", "PacedUser")]
        return [*argv, self.user_class]

    def parse(self, output: ToolOutput) -> Metrics:
        entries = output.json(JSON_FILE, f"locust wrote no {JSON_FILE} (--json-file)")
        if not isinstance(entries, list) or not entries:
            raise ParseError(f"{JSON_FILE} holds no request statistics (no request completed)")
        try:
            return self._metrics(entries, output.launched_at)
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"{JSON_FILE} lacks a field Locust writes: {type(exc).__name__}: {exc}") from None

    def _metrics(self, entries: list[dict], launched_at: float) -> Metrics:
        requests = sum(e["num_requests"] for e in entries)
        errors = sum(e["num_failures"] for e in entries)
        timed = sum(e["num_requests"] - e.get("num_none_requests", 0) for e in entries)
        histogram: Counter[float] = Counter()
        for entry in entries:
            for bucket, count in entry["response_times"].items():
                histogram[float(bucket)] += count
        if requests == 0:
            raise ParseError(f"{JSON_FILE}: no request completed")
        if sum(histogram.values()) != timed:
            raise ParseError(f"{JSON_FILE}: histogram holds {sum(histogram.values())} responses, "
                             f"counters {timed} of {requests} requests")

        first = min(e["start_time"] for e in entries)
        last = max(e["last_request_timestamp"] for e in entries if e.get("last_request_timestamp"))
        measured_s = last - first
        if measured_s <= 0:
            raise ParseError(f"{JSON_FILE}: empty load window (first {first}, last {last})")
        load_start_s = first - launched_at if launched_at > 0 else None

        buckets = np.array(sorted(histogram))
        latencies = np.repeat(buckets, [histogram[b] for b in buckets])
        metrics = latency_metrics(
            latencies, requests=requests, errors=errors, rps=requests / measured_s,
            measured_s=measured_s, load_start_s=load_start_s,
            source="Locust --json-file (final RequestStats): requests, failures; load window = first entry's "
                   "start_time (first response logged) to last_request_timestamp, rps = requests / that "
                   "window (spawn/start-up excluded); min, max, mean exact (min/max/total_response_time); "
                   "p50-p99 nearest-rank over Locust's own response-time histogram, whose buckets are "
                   "rounded (whole ms below 100 ms, 2 significant digits above)",
        )
        # The histogram's min/max/mean are bucket values; Locust also keeps the exact ones.
        metrics.lat_min_ms = float(min(e["min_response_time"] for e in entries if e["min_response_time"] is not None))
        metrics.lat_max_ms = float(max(e["max_response_time"] for e in entries))
        metrics.lat_mean_ms = sum(e["total_response_time"] for e in entries) / timed
        # Keep the ordering min <= p50 ... p99 <= max despite the bucket rounding.
        clamped = []
        for name in ("lat_p50_ms", "lat_p75_ms", "lat_p90_ms", "lat_p95_ms", "lat_p99_ms"):
            value = getattr(metrics, name)
            bounded = min(max(value, metrics.lat_min_ms), metrics.lat_max_ms)
            if bounded != value:
                clamped.append(f"{name[4:7]} bucket {value:g} ms -> {bounded:g} ms")
                setattr(metrics, name, bounded)
        if clamped:
            metrics.notes.append("bucket percentiles outside Locust's exact min/max were bounded by them: "
                                 + ", ".join(clamped))
        if metrics.lat_p50_ms < 3:
            metrics.notes.append(f"p50 {metrics.lat_p50_ms:g} ms is a whole-millisecond bucket (Locust rounds "
                                 "response times below 100 ms to 1 ms): compare sub-ms latencies via lat_mean_ms")
        return metrics
