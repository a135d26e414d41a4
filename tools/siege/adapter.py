"""siege: C, one POSIX thread per simulated user, each with its own keep-alive connection.

Figures come from siege's JSON summary (-j, printed on stdout at the end). siege keeps no
per-request log (-l writes one summary line per run) and reports no percentiles: only the
mean, longest and shortest response time, in seconds with two decimals (10 ms steps).
"""
import json

from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

SIEGERC = "siegerc"
SIEGERC_CLOSE = "siegerc-close"   # keep-alive off: the same settings with connection = close
# siege stops its users a little before -t runs out; below this share of the requested duration
# the shortfall is worth a note.
SHORT_RUN_SHARE = 0.98
RESOLUTION_MS = 10.0  # siege prints seconds with two decimals


def _summary(stdout: str) -> dict:
    """siege's JSON object: from the last line starting with '{' to the last '}' (earlier lines
    may be siege's notices)."""
    lines = stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("{")]
    if not starts:
        raise ParseError("siege printed no JSON summary (-j)")
    text = "\n".join(lines[starts[-1]:])
    try:
        data = json.loads(text[:text.rfind("}") + 1])
    except json.JSONDecodeError as exc:
        raise ParseError(f"siege's JSON summary does not parse: {exc}") from None
    if not isinstance(data, dict) or "transactions" not in data or "elapsed_time" not in data:
        raise ParseError("siege's JSON summary lacks transactions/elapsed_time")
    return data


def _ms(seconds) -> float | None:
    return None if seconds is None else float(seconds) * 1000.0


class Siege(ToolAdapter):
    name = "siege"
    version_args = ["-V"]
    concurrency_model = ("-c VUs users (one thread and one keep-alive connection each, via -R siegerc), "
                         "benchmark mode -b (no delay), -t duration")
    timing_resolution_ms = RESOLUTION_MS  # seconds with two decimals
    # siege reports mean, shortest and longest response time only.
    reports_percentiles = False

    rate_model = 'closed model only: -d is a random think time per user, not an arrival rate'
    keepalive_off = True   # -R siegerc-close: `connection = close`, siege's own default
    tls = True             # siege does not verify the server's certificate
    h2 = h2c = h3 = "siege 4.0.7 speaks HTTP/1.0 and HTTP/1.1 only"
    login_flow = ("siege's URL file may POST fixed bodies, but no answer is read into a later request (no "
                  "variables from responses)")

    def command(self, spec: RunSpec) -> list[str]:
        return [
            self.binary, "-R", str(self.folder / (SIEGERC if spec.keepalive else SIEGERC_CLOSE)), "-b", "-j",
            "-c", str(spec.vus), "-t", f"{spec.duration_s}S", spec.url,
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        data = _summary(output.stdout)
        requests = int(data["transactions"])
        failed = int(data.get("failed_transactions", 0))
        measured_s = float(data["elapsed_time"])
        notes = []
        duration = output.spec.duration_s
        if measured_s < SHORT_RUN_SHARE * duration:
            notes.append(f"siege ran {measured_s:.2f} s of the requested {duration} s (it stops its users "
                         "early); rps is over siege's own elapsed time")
        if requests and data.get("successful_transactions") is not None \
                and int(data["successful_transactions"]) + failed != requests:
            notes.append(f"siege counted {data['successful_transactions']} successful + {failed} failed of "
                         f"{requests} transactions")
        # siege prints times in seconds with 2 decimals, so its response_time (mean) is 0.00 for any
        # mean below 5 ms. Its `concurrency` is total response time / elapsed time (also 2 decimals,
        # but around VUs, so ~0.1% precise): mean = concurrency x elapsed / transactions.
        concurrency = data.get("concurrency")
        mean_ms = (float(concurrency) * measured_s / requests * 1000.0
                   if concurrency is not None and requests > 0 else _ms(data.get("response_time")))
        min_ms = _ms(data.get("shortest_transaction"))
        if min_ms is not None and min_ms < RESOLUTION_MS / 2:
            notes.append("siege's shortest transaction printed as 0.00 s (below its 10 ms resolution): lat_min left empty")
            min_ms = None
        return Metrics(
            requests=requests,
            errors=failed,
            rps=requests / measured_s if measured_s > 0 else None,
            measured_s=measured_s,
            lat_mean_ms=mean_ms,
            lat_min_ms=min_ms,
            lat_max_ms=_ms(data.get("longest_transaction")),
            source="siege -j JSON summary: transactions, failed_transactions, elapsed_time; rps = transactions / "
                   "siege's elapsed_time; mean = siege's concurrency (total response time / elapsed) x "
                   "elapsed_time / transactions; min/max = shortest/longest_transaction (seconds with 2 decimals: "
                   "10 ms resolution); siege reports no percentiles",
            notes=notes,
        )
