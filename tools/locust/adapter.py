"""Locust: Python + gevent, one greenlet per user; three variants of one adapter.

locust        FastHttpUser (geventhttpclient), one process
locust-http   HttpUser (python-requests), one process
locust-multi  FastHttpUser, Locust's own master + one worker process per core (--processes -1)

Figures come from Locust's --json-file (its final RequestStats, per entry): request and failure
counts, first/last request timestamps, exact min/max/total response time and the response-time
histogram. Locust keeps no per-request log: its histogram buckets are whole milliseconds below
100 ms and two significant digits above, so the percentiles are bucket values.

The login flow (issue 37): locustfile.py's FastFlowUser / DefaultFlowUser (on_start logs in, the token
stays on the user, the task GETs with it, --lth-relogin-every by a counter). Its two steps are named
requests, so --json-file holds one entry per step: the totals are over both entries (as without a flow),
and lat_login_* / lat_api_get_* are the same bucket percentiles over the "login" and "api_get" entries.
"""
from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

import numpy as np

from harness.stats import PERCENTILES, histogram_metrics, latency_metrics, percentile_field
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

# The flow's named requests (locustfile.py LoginFlow): its two entries in --json-file.
STEPS = {"login": "lat_login", "api_get": "lat_api_get"}
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
    h2 = h2c = h3 = "FastHttpUser (geventhttpclient) and HttpUser (python-requests) speak HTTP/1.1 only"
    login_flow = True   # locustfile.py FastFlowUser / DefaultFlowUser: the flow as Locust users, one token each

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        path = url.path or "/"
        if url.query:
            path += f"?{url.query}"
        if spec.flow is not None:
            path = spec.flow.get_path
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
        if spec.flow is not None:   # a scenario refuses a flow with rate_rps (harness/scenarios.py)
            f = spec.flow
            return [*argv, "--lth-login-path", f.login_path, "--lth-login-body", f.login_body,
                    "--lth-login-content-type", f.login_content_type, "--lth-token-field", f.token_field,
                    "--lth-token-header", f.token_header, "--lth-relogin-every", str(spec.relogin_every or 0),
                    self.user_class.replace("User", "FlowUser")]
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
        for name in map(percentile_field, PERCENTILES):     # p99.9 too: its bucket may pass the exact max
            value = getattr(metrics, name)
            bounded = min(max(value, metrics.lat_min_ms), metrics.lat_max_ms)
            if bounded != value:
                clamped.append(f"{name[4:-3].replace('_', '.')} bucket {value:g} ms -> {bounded:g} ms")
                setattr(metrics, name, bounded)
        if clamped:
            metrics.notes.append("bucket percentiles outside Locust's exact min/max were bounded by them: "
                                 + ", ".join(clamped))
        self._steps(metrics, entries)
        if metrics.lat_p50_ms < 3:
            metrics.notes.append(f"p50 {metrics.lat_p50_ms:g} ms is a whole-millisecond bucket (Locust rounds "
                                 "response times below 100 ms to 1 ms): compare sub-ms latencies via lat_mean_ms")
        return metrics

    def _steps(self, metrics: Metrics, entries: list[dict]) -> None:
        """A flow's per-step p50 and p99: the same nearest rank over each named entry's histogram, bounded by its
        exact min/max; a bucket below 1 ms (Locust's 0: under 0.5 ms) is left empty, as the runner does for the
        overall figures."""
        by_name = {e["name"]: e for e in entries}
        if not set(STEPS) <= set(by_name):
            return
        emptied = []
        for name, column in STEPS.items():
            entry = by_name[name]
            if not entry["response_times"] or entry["min_response_time"] is None:
                continue
            step = histogram_metrics({float(bucket): count for bucket, count in entry["response_times"].items()})
            for p in ("p50", "p99"):
                value = min(max(getattr(step, f"lat_{p}_ms"), entry["min_response_time"]), entry["max_response_time"])
                if value < self.timing_resolution_ms:
                    emptied.append(f"{column}_{p}_ms")
                    value = None
                setattr(metrics, f"{column}_{p}_ms", value)
        metrics.source += ("; a flow's steps (lat_login_*, lat_api_get_*): the same bucket percentiles over the "
                           "named entries \"login\" and \"api_get\" (locustfile.py LoginFlow)")
        if emptied:
            metrics.notes.append("step percentiles in Locust's 0 ms bucket (under 0.5 ms), left empty: " + ", ".join(emptied))
