"""Tsung: Erlang, one Erlang process per user, users started by an arrival phase.

run.sh fills tsung.xml.in (one arrival phase capped at maxnumber=VUs users, each looping GETs
without think time on its persistent HTTP/1.1 connection until the duration has passed since its
own start), runs `tsung -n` with its log dir in the run folder, and stops epmd afterwards.

Figures come from Tsung's JSON statistics (backend="json", log/<date>/tsung.log): request count,
mean, stddev, min and max per dump interval. Tsung computes no percentiles; its only per-request
outputs (dumptraffic="protocol", backend="fullstats") halve its throughput here, so they are off and
p50..p99 stay empty. The load window comes from lth-users.txt, where the session's callbacks
(lth_tsung.erl) note each user's start and end in microseconds: Tsung's own logs have whole
seconds only.

The login flow (RunSpec.flow, harness/flows.py): run.sh's --login-* options keep tsung.xml.in's flow session, in
which each user logs in (a `dyn_variable jsonpath` takes the token from the JSON answer into the user's own
dynamic variables), then GETs the API with the token in the header (`subst="true"`), logging in again after
relogin_every GETs (a `<for>` loop). Each step is a Tsung transaction: its JSON statistics then hold tr_login and
tr_api_get samples (count, mean, stddev, min, max per interval), the per-step times. Tsung computes no percentiles,
so lat_login_p50/p99 and lat_api_get_p50/p99 stay empty; the steps' counts and means are in the row's notes. The
overall figures stay over every request (logins and GETs: the 'request' sample).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from urllib.parse import urlsplit

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

LOG_DIR = "log"                   # run.sh passes -l OUT_DIR/log; Tsung adds a YYYYMMDD-HHMM folder
STATS = "tsung.log"
USERS = "lth-users.txt"           # "start <epoch us>" / "end <epoch us>" per user (lth_tsung.erl)
# Tsung's own start script (/usr/bin/tsung) passes its log and load paths unquoted, some inside Erlang
# strings: a space, a quote, a glob or a brace there splits or breaks them. run.sh escapes what it fills in.
UNSAFE_IN_PATH = re.compile(r"[^A-Za-z0-9._/+@:=~%,-]")


def stats_file(out_dir: Path) -> Path:
    logs = out_dir / LOG_DIR
    folders = sorted(p for p in logs.iterdir() if p.is_dir()) if logs.is_dir() else []
    if not folders or not (folders[-1] / STATS).is_file():
        raise ParseError(f"Tsung wrote no {LOG_DIR}/<date>/{STATS} (did it start?)")
    return folders[-1] / STATS


def read_dumps(path: Path) -> list[dict[str, dict]]:
    """Tsung's JSON stats: one {name: sample} per dump interval."""
    text = path.read_text(errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # An aborted Tsung (killed, or its <load duration> safety net) leaves the JSON unterminated.
        try:
            data = json.loads(text.rstrip().rstrip(",") + "]}]}")
        except json.JSONDecodeError as exc:
            raise ParseError(f"{STATS} is not JSON: {exc}") from None
    return [{s["name"]: s for s in dump.get("samples", [])} for dump in data.get("stats", [])]


# The flow's steps: the transactions of tsung.xml.in's flow session, as Tsung names their samples.
STEPS = {"login": "tr_login", "api_get": "tr_api_get"}


def combine_requests(dumps: list[dict[str, dict]]) -> dict[str, float]:
    """Totals over the dump intervals of Tsung's 'request' sample (per-interval count, mean and
    population stddev; min and max are carried over, so the last dump's are the run's)."""
    combined = combine_sample(dumps, "request")
    if combined is None:
        raise ParseError(f"{STATS} holds no request sample (no request completed)")
    return combined


def combine_sample(dumps: list[dict[str, dict]], name: str) -> dict[str, float] | None:
    """The same totals for any of Tsung's timed samples (request, tr_<transaction>...); None when none was timed."""
    intervals = [d[name] for d in dumps if name in d]
    count = sum(int(s["value"]) for s in intervals)
    if not intervals or count == 0:
        return None
    mean = sum(s["value"] * s["mean"] for s in intervals) / count
    second_moment = sum(s["value"] * (s["stddev"] ** 2 + s["mean"] ** 2) for s in intervals) / count
    last = intervals[-1]
    return {"count": count, "mean": mean, "stddev": math.sqrt(max(second_moment - mean ** 2, 0.0)),
            "min": float(last["min"]), "max": float(last["max"])}


def counter_totals(dumps: list[dict[str, dict]]) -> dict[str, int]:
    """Cumulative counters (http_<status>, error_*, users_count, ...) as of the last dump."""
    totals: dict[str, int] = {}
    for dump in dumps:
        for name, sample in dump.items():
            if "total" in sample:
                totals[name] = int(sample["total"])
    return totals


def user_window(path: Path) -> tuple[list[float], list[float]]:
    starts, ends = [], []
    for line in path.read_text(errors="replace").splitlines():
        what, _, micros = line.partition(" ")
        if what in ("start", "end") and micros.strip().isdigit():
            (starts if what == "start" else ends).append(int(micros) / 1e6)
    return starts, ends


class Tsung(ToolAdapter):
    name = "tsung"
    version_args = ["-v"]
    reports_percentiles = False
    concurrency_model = ("arrival phase capped at maxnumber=VUs users (Poisson arrivals, all within ~1% of the "
                         "duration), each looping GETs without think time on one persistent connection until "
                         "the duration has passed since its own start")
    timing_resolution_ms = 0.001  # ms with 3 decimals in its JSON statistics

    rate_model = 'supports an open model (arrival phases, each arrival a new user session); not wired in this harness yet'
    keepalive_off = True   # run.sh --close: <http_header name="Connection" value="close"/>; Tsung reconnects
    tls = True             # run.sh --ssl: <server type="ssl"/> (Erlang's ssl client, no verification set)
    h2 = h2c = h3 = "Tsung's HTTP client speaks HTTP/1.0 and HTTP/1.1 only"
    login_flow = True      # run.sh --login-*: tsung.xml.in's flow session (dyn_variable jsonpath, subst, <for>)

    def folder_problem(self, folder: Path) -> str | None:
        unsafe = "".join(sorted(set(UNSAFE_IN_PATH.findall(str(folder)))))
        if unsafe:
            return f"Tsung's own start script cannot take a path holding {unsafe!r} (it leaves its paths unquoted)"
        return None

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        port = url.port or (443 if spec.tls else 80)
        options = [*([] if spec.keepalive else ["--close"]), *(["--ssl"] if spec.tls else [])]
        if spec.flow is not None:   # the same server (spec.base_url); PATH is the API's GET, the login in options
            f = spec.flow
            path = f.get_path
            options += ["--login-path", f.login_path, "--login-method", f.login_method, "--login-body", f.login_body,
                        "--login-content-type", f.login_content_type, "--token-field", f.token_field,
                        "--token-header", f.token_header, "--relogin-every", str(spec.relogin_every or 0)]
        return [str(self.folder / "run.sh"), str(spec.out_dir), url.hostname or "", str(port), path,
                str(spec.vus), str(spec.duration_s), *options]

    def parse(self, output: ToolOutput) -> Metrics:
        dumps = read_dumps(stats_file(output.spec.out_dir))
        req = combine_requests(dumps)
        counters = counter_totals(dumps)
        failed_status = sum(v for k, v in counters.items()
                            if k.startswith("http_") and k[5:].isdigit() and not 200 <= int(k[5:]) < 400)
        errors = failed_status + sum(v for k, v in counters.items() if k.startswith("error_"))
        notes = []
        if counters.get("error_abort"):
            notes.append("Tsung aborted the test (its <load duration> safety net or a signal): the requests of "
                         "its last statistics interval (up to 0.5 s) are missing from its counts")
        users = counters.get("users_count")
        if users is not None and users < output.spec.vus:
            notes.append(f"only {users} of {output.spec.vus} users started")

        users_path = output.file(USERS)
        starts, ends = user_window(users_path) if users_path.is_file() else ([], [])
        if starts and ends:
            first, last = min(starts), max(ends)
            measured_s = last - first
            load_start_s = first - output.launched_at if output.launched_at > 0 else None
            window = f"load window = first user start to last user end ({USERS}, noted by lth_tsung.erl)"
        else:
            measured_s, load_start_s = float(output.spec.duration_s), None
            window = "load window = the configured duration (no user start/end times were noted)"
            notes.append(f"no user start/end times in {USERS}: rps uses the configured duration")
        if measured_s <= 0:
            raise ParseError(f"{USERS}: empty load window")
        steps = ""
        timed = {step: combine_sample(dumps, sample) for step, sample in STEPS.items()}
        if any(timed.values()):   # the flow's session ran (its transactions are in Tsung's own output)
            notes.append("per step (Tsung's transactions; means only, Tsung computes no percentiles): " + ", ".join(
                f"{step} {t['count']:,} timed, mean {t['mean']:.3f} ms, max {t['max']:.3f} ms" if t else
                f"{step} none timed" for step, t in timed.items()))
            steps = (f"; the flow's steps are its transactions ({', '.join(STEPS.values())}: count, mean, max, in the "
                     "notes; no per-step percentiles)")
        return Metrics(
            requests=req["count"], errors=errors, rps=req["count"] / measured_s, measured_s=measured_s,
            load_start_s=load_start_s,
            lat_min_ms=req["min"], lat_mean_ms=req["mean"], lat_max_ms=req["max"],
            source=f"Tsung's JSON statistics ({STATS}, backend=json): requests = sum of the 'request' sample's "
                   "per-interval counts, mean = their weighted mean, min/max = Tsung's; errors = http_<4xx/5xx> "
                   f"and error_* counters; {window}, rps = requests / that window (Erlang VM start-up "
                   f"excluded); no percentiles (Tsung computes none){steps}",
            notes=notes,
        )
