"""drill: Rust (tokio current-thread runtime, reqwest), a fixed count of plan iterations.

drill has no duration option and prints its summary (--stats) only after its last iteration. Its
per-request lines cost it ~18% of its throughput, so run.sh runs it --quiet with a count sized by
quiet calibration runs to last the duration, and the figures come from drill's own --stats
summary (drill-stats.txt, --nanosec). The real run's start and end (epoch s) are in
drill-window.txt; the calibration runs before it fall outside the load window.

The login flow (issue 37): run.sh --flow writes the plan in drill's idiom (a `login` request with `assign:
login`, then `api_get` requests carrying `{{ login.body.token }}`; an iteration is one VU's session). drill's
--stats prints a block per plan step name before the global one: the totals stay the global lines (both steps),
and lat_login_* / lat_api_get_* are the `login` and `api_get` blocks' median and 99.0th percentile.
"""
from __future__ import annotations

import math

import re
from pathlib import Path
from urllib.parse import urlsplit

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

STATS, WINDOW, CALIBRATION = "drill-stats.txt", "drill-window.txt", "drill-calibration.txt"
# The global summary: "<label> <value>", e.g. "Median time per request   214000ns" (per-plan-step
# lines repeat the labels after the step's name "lth" and are skipped).
SUMMARY_LINE = re.compile(r"^(Time taken for tests|Total requests|Successful requests|Failed requests|"
                          r"Median time per request|Average time per request|99\.0'th percentile|"
                          r"Max time per request)\s+([\d.]+)(ns| seconds)?$")


# A plan step's line: "<step> <label> <value>", e.g. "login   Median time per request   1759000ns".
STEP_LINE = re.compile(r"^(\S+)\s+(Total requests|Failed requests|Median time per request|99\.0'th percentile)\s+"
                       r"(\d+)(ns)?$")
STEPS = {"login": "lat_login", "api_get": "lat_api_get"}   # run.sh flow_plan's step names -> Metrics columns


def read_steps(path: Path) -> dict[str, dict[str, float]]:
    """drill's per-step blocks: {step name: {label: value}}."""
    steps: dict[str, dict[str, float]] = {}
    for line in path.read_text(errors="replace").splitlines():
        if match := STEP_LINE.match(line.strip()):
            steps.setdefault(match.group(1), {})[match.group(2)] = float(match.group(3))
    return steps


def read_stats(path: Path) -> dict[str, float]:
    found = {}
    for line in path.read_text(errors="replace").splitlines():
        match = SUMMARY_LINE.match(line.strip())
        if match:
            found[match.group(1)] = float(match.group(2))
    return found


def calibration_requests(path: Path) -> int:
    """Requests the calibration runs sent ("iterations N seconds S" per run)."""
    try:
        return sum(int(line.split()[1]) for line in path.read_text(errors="replace").splitlines()
                   if line.startswith("iterations "))
    except (IndexError, ValueError):     # cut short: drill killed mid-write
        raise ParseError(f"{path.name} holds an 'iterations' line without its count") from None


def read_window(path: Path) -> tuple[float, float] | None:
    marks = {}
    for line in path.read_text(errors="replace").splitlines():
        what, _, value = line.partition(" ")
        try:
            marks[what] = float(value)
        except ValueError:
            continue
    if "start" in marks and "end" in marks and marks["end"] > marks["start"]:
        return marks["start"], marks["end"]
    return None


class Drill(ToolAdapter):
    name = "drill"
    concurrency_model = ("concurrency=VUs iterations in flight (one GET each, a shared keep-alive client pool), "
                         "one thread; --quiet, a count sized by calibration runs to last the duration")
    timing_resolution_ms = 0.001  # --stats --nanosec: an HdrHistogram of us (2 significant digits)
    sampled_process = "drill"     # not run.sh's bash, awk or `timeout`

    rate_model = 'closed model only: concurrency users iterating the plan, drill has no arrival-rate option'
    keepalive_off = True   # run.sh --close: the plan's request sends Connection: close (drill has no option)
    tls = True             # run.sh --no-check-certificate, drill's own option
    login_flow = True      # run.sh --flow: the plan's login step assigns the answer, the GETs interpolate its token

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        base = f"{url.scheme}://{url.netloc}"
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        options = [*([] if spec.keepalive else ["--close"]), *(["--no-check-certificate"] if spec.tls else [])]
        if spec.flow is not None:
            f = spec.flow
            options += ["--flow", f.login_path, f.login_body, f.login_content_type, f.token_field, f.get_path,
                        f.token_header, str(spec.relogin_every or 0)]
        return [str(self.folder / "run.sh"), str(spec.out_dir), base, path, str(spec.vus), str(spec.duration_s), *options]

    def parse(self, output: ToolOutput) -> Metrics:
        path, window_path = output.file(STATS), output.file(WINDOW)
        if not path.is_file():
            raise ParseError(f"drill's summary {STATS} is missing (run.sh did not run drill)")
        stats = read_stats(path)
        if "Total requests" not in stats or "Median time per request" not in stats:
            raise ParseError(f"{STATS} holds no --stats summary (drill did not finish its iterations)")
        window = read_window(window_path) if window_path.is_file() else None
        if window is None:
            raise ParseError(f"{WINDOW} holds no start/end marks")
        if not math.isfinite(stats["Total requests"]):
            raise ParseError(f"{STATS}: Total requests {stats['Total requests']} is not a count")
        requests, measured_s = int(stats["Total requests"]), window[1] - window[0]
        calibration = output.file(CALIBRATION)
        notes = [f"Nginx's count includes the {calibration_requests(calibration)} requests of the calibration "
                 "runs before the load window"] if calibration.is_file() else []

        summary = ("Average time per request", "Median time per request", "99.0'th percentile", "Max time per request")
        if missing := [label for label in summary if label not in stats]:
            raise ParseError(f"{STATS} lacks {missing[0]!r} (drill cut short?)")

        def ms(label: str) -> float:
            return stats[label] / 1e6        # --nanosec: ns

        steps = read_steps(path)
        step_labels = (("p50", "Median time per request"), ("p99", "99.0'th percentile"))
        if cut := [step for step in STEPS if step in steps and any(label not in steps[step] for _, label in step_labels)]:
            raise ParseError(f"{STATS}: step {cut[0]!r} lacks its median or 99th percentile (drill cut short?)")
        flow = {f"{column}_{p}_ms": steps[step][label] / 1e6
                for step, column in STEPS.items() if step in steps for p, label in step_labels}
        return Metrics(
            **flow,
            requests=requests, errors=int(stats.get("Failed requests", 0)),
            rps=requests / measured_s, measured_s=measured_s,
            load_start_s=window[0] - output.launched_at if output.launched_at else None,
            lat_mean_ms=ms("Average time per request"), lat_p50_ms=ms("Median time per request"),
            lat_p99_ms=ms("99.0'th percentile"), lat_max_ms=ms("Max time per request"),
            source=f"drill --quiet --stats --nanosec summary ({STATS}): total, failed (not 2xx) requests, median, "
                   "average, 99.0th percentile, max over its HdrHistogram (us, 2 significant digits; no min, "
                   "p75/p90/p95); transport errors are not reported in quiet mode; rps = requests / the time "
                   f"between run.sh's marks around the real run ({WINDOW}), calibration runs excluded"
                   + ("; a flow's steps (lat_login_*, lat_api_get_*): the median and 99.0th percentile of drill's "
                      "per-step blocks `login` and `api_get`" if flow else ""),
            notes=notes,
        )
