"""What a suite prints as it goes: each run's announcement with the ETA, its summary and bottleneck lines, a
missed RTT, and the harness's own time around the runs at the end.

Markup ([bold], [red]) only in the harness's own words: text from outside (a path, an error, a host) is
escaped or printed with markup=False, or a `[/x]` in it would raise MarkupError mid-suite.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape

from harness.scenarios import Scenario
from harness.store.results import RunRow
from harness.store.stored import Derived
from harness.tools.adapter import ToolAdapter

console = Console(highlight=False, soft_wrap=True)
SETUP_ESTIMATE_S = 5.0   # per-run overhead assumed for the ETA until one run has been timed


def eta_text(seconds: float) -> str:
    """'01:02:03', and days in front beyond 24 h ('1 d 11:00:00'): a clock of gmtime wrapped at a day."""
    whole = max(0, round(seconds))
    days, rest = divmod(whole, 86_400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days} d {clock}" if days else clock


@dataclass
class Eta:
    """The suite's remaining time: the runs' durations, plus each run's wall time beyond its duration as timed so
    far (SETUP_ESTIMATE_S until one run has been)."""
    durations_s: list[int]
    beyond_s: list[float] = field(default_factory=list)   # each finished run's wall time beyond its duration

    def remaining_s(self, index: int) -> float:
        """Before run ``index`` (from 1)."""
        overhead_s = statistics.mean(self.beyond_s) if self.beyond_s else SETUP_ESTIMATE_S
        return sum(duration_s + overhead_s for duration_s in self.durations_s[index - 1:])

    def finished(self, duration_s: int, wall_s: float) -> None:
        self.beyond_s.append(max(0.0, wall_s - duration_s))


def announce(index: int, eta: Eta, scenario: Scenario, adapter: ToolAdapter, runtime: str) -> None:
    console.print(f"[bold]run {index}/{len(eta.durations_s)}[/] {escape(scenario.id)} · {escape(adapter.name)} · "
                  f"{runtime} ({scenario.duration_s} s) · ETA {eta_text(eta.remaining_s(index))}")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}%"


def summarise(row: RunRow) -> None:
    """A run's outcome: its figures and its bottleneck line, or its status and why."""
    if row.status != "ok":
        console.print(f"   [red]{row.status}[/]: {escape(row.error)}")
        return
    console.print(f"   ok: {row.rps:,.0f} rps, p50 {_ms(row.lat_p50_ms)} ms (RTT {row.rtt_measured_ms:.2f} ms, "
                  f"{row.shaper}), server counted {row.server_requests:,} of {row.requests:,}, "
                  + (f"mem {row.mem_avg_mb:.1f} MiB" if row.mem_avg_mb is not None else "mem not sampled")
                  + (f", wire: {row.wire_requests:,} requests, p50 {_ms(row.wire_p50_ms)} ms"
                     if row.wire_requests is not None else ""), markup=False)
    console.print(bottleneck_line(row), markup=False)


def bottleneck_line(row: RunRow) -> str:
    target = ("target not sampled" if row.target_cpu_pct is None else
              f"target {_pct(row.target_cpu_pct)} on {row.cpus_target or 'all CPUs'}")
    shaper = (f", Toxiproxy {_pct(row.shaper_cpu_pct)} and RTT {_ms(row.rtt_loaded_ms)} ms under the load"
              if row.shaper == "toxiproxy" else "")
    return (f"   CPU: tool {_pct(row.cpu_avg_pct)} on {row.cpus_tool or 'all CPUs'}, {target}{shaper}: "
            f"limited by {row.limited_by}")


def rtt_missed(measured_ms: float, where: str, target_ms: float) -> None:
    console.print(f"   [yellow]warning[/]: measured RTT {measured_ms:.2f} ms from "
                  f"{escape(where)} misses the target {target_ms} ms by more than max(10%, 0.5 ms); "
                  f"row flagged rtt_ok=false")


def overhead(derived: list[Derived], beyond_s: list[float]) -> None:
    """The harness's own time around the runs that ran: the median per run, and by phase (meta.json overhead_s)."""
    phases: dict[str, list[float]] = {}
    for run in derived:
        for name, seconds in run.meta.get("overhead_s", {}).items():
            phases.setdefault(name, []).append(seconds)
    if not phases.get("total"):
        return
    by_phase = ", ".join(f"{name} {statistics.median(values):.2f}" for name, values in phases.items()
                         if name not in ("total", "tool_beyond_duration"))
    console.print(f"harness time per run (median over {len(phases['total'])} runs): {statistics.median(phases['total']):.1f} s "
                  f"around the tool ({by_phase}); {statistics.median(beyond_s):.1f} s beyond the duration "
                  f"with the tool's own start-up and the parsing (meta.json overhead_s)", markup=False)
