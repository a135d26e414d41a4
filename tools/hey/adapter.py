"""hey (rakyll/hey): Go, -c workers sharing one net/http client, each looping requests back to back.

Figures come from hey's text summary, not from its per-request CSV (-o csv): the CSV replaces the
summary, leaves out every request that got no response (so transport errors and the request count
are lost) and, like the summary's latency figures, holds only hey's first 1,000,000 results, which
a 300 s run at ~24k rps exceeds 7 times. The summary's Requests/sec and Total cover the whole run.
"""
import re

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

# hey keeps latencies and status codes of its first million results only (requester/report.go).
MAX_RESULTS = 1_000_000


def _secs(text: str, label: str) -> float | None:
    match = re.search(rf"^\s+{re.escape(label)}:\s+([\d.]+)", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def _section(text: str, title: str) -> str:
    """The lines of one summary section (up to the next blank line)."""
    match = re.search(rf"^{re.escape(title)}:\n((?:[ \t]+\S.*\n?)*)", text, re.MULTILINE)
    return match.group(1) if match else ""


class Hey(ToolAdapter):
    name = "hey"
    @property
    def version_command(self) -> list[str]:
        # hey has no version flag: install.sh writes this two-line script beside the binary.
        return [f"{self.binary}-version"]
    concurrency_model = ("-c VUs workers, one request at a time each, on one shared keep-alive client pool "
                         "(idle pool capped at min(VUs, 500)), -z duration")
    timing_resolution_ms = 0.1  # its summary prints seconds with 4 decimals

    open_model = True
    rate_model = ("-q <rate / VUs>: hey's -q is PER WORKER (each of the -c VUs workers is throttled on its own "
                  "ticker), latency counts from the actual send")
    keepalive_off = True   # -disable-keepalive (net/http Transport.DisableKeepAlives)
    # hey's transport skips certificate checks itself (requester.go: InsecureSkipVerify: true) and,
    # without -h2, stays on HTTP/1.1 over TLS.
    tls = True
    # -h2 (net/http with HTTP/2 configured): ALPN over TLS. The workers share one client, whose transport dials a
    # connection for each request started before the first one is up: a connection per VU (measured: 20 for 20).
    h2 = True
    h3 = "Go's net/http, which hey is built on, has no HTTP/3 (QUIC)"
    h2c = "hey's -h2 is HTTP/2 over TLS only: no prior-knowledge cleartext HTTP/2"
    h2_connections = "per_vu"
    login_flow = ("hey sends one fixed request over and over (-D gives a fixed body): no answer is read into a "
                  "later request")

    def command(self, spec: RunSpec) -> list[str]:
        rate = ["-q", f"{spec.rate_rps / spec.vus:g}"] if spec.rate_rps else []
        keepalive = ([] if spec.keepalive else ["-disable-keepalive"]) + (["-h2"] if spec.protocol == "h2" else [])
        # -t 10: the same 10 s timeout as wrk (hey's default is 20 s).
        return [self.binary, "-z", f"{spec.duration_s}s", "-c", str(spec.vus), *rate, *keepalive, "-t", "10",
                spec.url]

    def parse(self, output: ToolOutput) -> Metrics:
        text = output.stdout
        total_s, rps = _secs(text, "Total"), _secs(text, "Requests/sec")
        if "Summary:" not in text or total_s is None or rps is None:
            raise ParseError("hey printed no summary (Total / Requests/sec missing)")
        # hey v0.1.5 prints "50%% in" (a doubled % from its template), v0.1.4 "50% in".
        pct = {int(p): float(s) * 1000 for p, s in re.findall(r"^\s+(\d+)%{1,2} in ([\d.]+) secs", text, re.MULTILINE)}
        codes = {int(c): int(n) for c, n in re.findall(r"^\s+\[(\d+)\]\s+(\d+) responses", _section(text, "Status code distribution"), re.MULTILINE)}
        transport_errors = sum(int(n) for n in re.findall(r"^\s+\[(\d+)\]\t", _section(text, "Error distribution"), re.MULTILINE))
        kept = sum(codes.values())                      # responses whose latency hey kept
        capped = kept >= MAX_RESULTS
        # Exact when nothing was dropped; else Requests/sec x Total (both printed to 4 decimals: +-2 requests).
        requests = kept + transport_errors if not capped else round(rps * total_s)
        successes = requests - transport_errors
        notes = []
        if capped:
            notes.append(f"latency figures and status codes cover hey's first {MAX_RESULTS:,} responses of "
                         f"{successes:,} only (hey's own cap); requests, rps and transport errors cover the whole run")
        fastest_s = _secs(text, "Fastest")
        if kept > 0 and fastest_s == 0:
            notes.append("Fastest printed as 0.0000 s: below hey's 0.1 ms resolution")
        average_s = _secs(text, "Average")
        # hey's Average sums every response's latency but divides by the kept ones only.
        mean_ms = average_s * 1000 * kept / successes if average_s is not None and successes else None
        has_latency = kept > 0 and all(p in pct for p in (50, 75, 90, 95, 99))
        lat = {f"lat_p{p}_ms": pct[p] for p in (50, 75, 90, 95, 99)} if has_latency else {}
        return Metrics(
            requests=requests,
            errors=transport_errors + sum(n for c, n in codes.items() if not 200 <= c < 400),
            rps=rps,
            measured_s=total_s,
            # hey starts at once (a Go binary); its Total ends before the report is built, so memory
            # taken while sorting and printing the million kept results falls outside the load window.
            load_start_s=0.0,
            lat_min_ms=fastest_s * 1000 if has_latency else None,
            lat_max_ms=_secs(text, "Slowest") * 1000 if has_latency else None,
            lat_mean_ms=mean_ms if has_latency else None,
            **lat,
            source=("hey's text summary (0.1 ms resolution): Requests/sec, Total; latency distribution "
                    "(hey's own rule: the 1-based rank ceil(p/100 x n) + 1, one above nearest-rank), Fastest, Slowest, Average "
                    "(corrected to every response); requests = status codes + error distribution"),
            notes=notes,
        )
