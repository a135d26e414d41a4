"""wrk: C, event loop per thread, a fixed pool of keep-alive connections."""
import json

from harness.adapter import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

MARKER = "LTH_JSON "


class Wrk(ToolAdapter):
    name = "wrk"
    version_command = ["wrk", "-v"]
    # The study ran wrk with threads = connections. wrk is an event loop per thread and its own
    # docs advise about one thread per core; 1000 threads on 2 cores measures the scheduler, not
    # wrk. So: threads = min(VUs, cores), connections = VUs (each held open for the whole run).
    concurrency_model = "connections = VUs, threads = min(VUs, cores)"

    # wrk.c corrects its latency histogram after the run (stats_correct with the mean interval per
    # connection), so a closed-loop wrk still shows a stall in its percentiles.
    rate_model = ("closed model only: wrk has no rate option (wrk2's -R adds one; wrk2 is not in this lineup); "
                  "wrk back-fills its histogram for coordinated omission after the run (stats_correct)")

    def command(self, spec: RunSpec) -> list[str]:
        threads = max(1, min(spec.vus, spec.cpus))
        return [
            "wrk", f"-t{threads}", f"-c{spec.vus}", f"-d{spec.duration_s}s", "--timeout", "10s",
            "-s", str(self.folder / "report.lua"), spec.url,
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        line = next((l for l in output.stdout.splitlines() if l.startswith(MARKER)), None)
        if line is None:
            raise ParseError("wrk printed no summary line (report.lua done() hook did not run)")
        data = json.loads(line[len(MARKER):])
        lat = {k: v / 1000.0 for k, v in data["latency_us"].items()}
        measured_s = data["duration_us"] / 1e6
        return Metrics(
            requests=data["requests"],
            errors=sum(data["errors"].values()),
            rps=data["requests"] / measured_s if measured_s else None,
            measured_s=measured_s,
            lat_min_ms=lat["min"], lat_mean_ms=lat["mean"], lat_max_ms=lat["max"],
            lat_p50_ms=lat["p50"], lat_p75_ms=lat["p75"], lat_p90_ms=lat["p90"],
            lat_p95_ms=lat["p95"], lat_p99_ms=lat["p99"],
            source="wrk's own latency histogram (us), printed as JSON by report.lua done(); rps = requests / wrk's duration",
        )
