"""Who limited a run: the saturation flags, requests per CPU-second and memory per VU.

A side is saturated when its average CPU over the load window reaches 90% of the CPUs it may use
(its set under isolation; every CPU without). Without isolation both sides draw from one pool, so
a run can be CPU-bound with neither flag set: that case is named "shared CPUs".

Toxiproxy can cap a run with neither side saturated and at well under one core of its own (its
per-connection goroutines and timers queue requests): CPU cannot tell, so the RTT is probed through
it while the tool runs (shaping.loaded_probe). When the shaped path's RTT under the load exceeded the
idle RTT by more than max(10%, 0.5 ms) and a closed-model run fell short of its latency bound
(VUs / RTT) by over 10%, with neither side saturated, the run is limited by the "shaper"; its ceiling
at that load, VUs / rtt_loaded_ms, goes into the notes. Nginx's own delay at that moment (probed
straight to it) is not taken off: Toxiproxy runs on Nginx's CPUs, so a slow Nginx there is its doing
too (in a TCG VM Nginx answered in 120 ms with its core at 75%, Toxiproxy 40% of it); the note gives it. For the
same reason the target's CPUs full with Toxiproxy's share in them name the shaper, the target only when Nginx's
share alone fills them.
"""
from __future__ import annotations

from dataclasses import asdict

from harness.cpus import CpuSplit, format_cpus, parse_cpus
from harness.row.usage import Usage, busy_pct, check_span, summarise
from harness.store.limits import CONTENDED, SATURATED, side
from harness.store.record import Execution
from harness.store.results import RunRow


def saturated(cpu_pct: float | None, cpus: int) -> bool | None:
    """None when the CPU was not measured."""
    return None if cpu_pct is None else cpu_pct >= SATURATED * 100 * cpus


def req_per_cpu_s(requests: int | None, cpu_pct: float | None, window_s: float | None) -> float | None:
    """Requests per CPU-second the tool spent in the load window."""
    if requests is None or not cpu_pct or not window_s:
        return None
    return requests / (cpu_pct / 100 * window_s)


def limited_by(row: RunRow, all_cpus: int, contended: bool = False) -> str:
    """Which side limited the run: a code of harness/store/limits.py SIDES (the row's limited_by column)."""
    if row.status != "ok":
        return "n/a"
    capped, target_saturated = shaper_capped(row), row.target_saturated
    if capped and target_saturated and row.shaper_cpu_pct is not None:
        # Toxiproxy beside Nginx filled the target's CPUs (CI's VM: 90% of CPU 0, Toxiproxy 57 of it): the target
        # is the limit only if Nginx alone filled them
        target_saturated = nginx_saturated_alone(row, all_cpus)
    return side(row.tool_saturated, target_saturated, bool(row.cpus_tool), row.cpu_avg_pct,
                row.target_cpu_pct, all_cpus, contended, capped)


def nginx_saturated_alone(row: RunRow, all_cpus: int) -> bool:
    """The target's CPUs full without Toxiproxy's share, which target_cpu_pct counts where it runs beside Nginx."""
    cpus = len(parse_cpus(row.cpus_target)) if row.cpus_target else all_cpus
    return bool(saturated(row.target_cpu_pct - row.shaper_cpu_pct, cpus))


def fill_shaper(row: RunRow, under_load: dict | None, duration_s: float) -> dict:
    """rtt_loaded_ms and shaper_added_ms from the probe taken during the load; what meta.json keeps of it.
    A probe that ended after the tool's duration saw part of the idle tail: not used."""
    if not under_load:
        return {}
    via = under_load.get("via_ms")
    usable = via is not None and under_load.get("ended_s", duration_s + 1) <= duration_s
    if usable and row.rtt_measured_ms is not None:
        row.rtt_loaded_ms = via
        row.shaper_added_ms = via - row.rtt_measured_ms
    why = "" if usable else under_load.get("error") or "the probe did not end within the tool's duration"
    return {"shaper_under_load": {**under_load, **({"not_used": why} if why else {})}}


def shaper_capped(row: RunRow) -> bool:
    """The shaped path was slower under the load than idle, and the closed-model run fell short of VUs / RTT."""
    if row.shaper_added_ms is None or row.rate_target_rps is not None or not row.rtt_measured_ms or not row.rps:
        return False
    latency_bound = row.vus * 1000 / row.rtt_measured_ms
    return row.shaper_added_ms > max(0.1 * row.rtt_target_ms, 0.5) and row.rps < SATURATED * latency_bound


def shaper_note(row: RunRow, under_load: dict | None) -> str:
    if row.limited_by != "shaper" or not row.rtt_loaded_ms:
        return ""
    direct = (under_load or {}).get("direct_ms")
    return (f"limited by the shaper: under this load the RTT through Toxiproxy was {row.rtt_loaded_ms:.1f} ms "
            f"against {row.rtt_measured_ms:.1f} ms idle"
            + (f" (straight to Nginx at that moment {direct:.1f} ms)" if direct is not None else "")
            + f", a ceiling of {row.vus * 1000 / row.rtt_loaded_ms:,.0f} rps for {row.vus} VUs against "
            f"{row.vus * 1000 / row.rtt_measured_ms:,.0f} at the idle RTT"
            + (f"; Toxiproxy's own CPU {row.shaper_cpu_pct:.0f}%" if row.shaper_cpu_pct is not None else ""))


MEMORY_CHECK_TOLERANCE = 0.10


def memory_note(usage: Usage, check_name: str) -> str:
    """A note when the independent reading lies over 10% outside what top read at its frame and the next."""
    if usage.check_mb is None or not usage.check_top_mb or not usage.check_next_top_mb:
        return ""
    diff = check_span(usage.check_top_mb, usage.check_next_top_mb, usage.check_mb)
    if abs(diff) <= MEMORY_CHECK_TOLERANCE:
        return ""
    return (f"memory check: top's RSS {usage.check_top_mb:.1f} MiB, {usage.check_next_top_mb:.1f} MiB one frame "
            f"later, vs {check_name} {usage.check_mb:.1f} MiB read between the two ({diff:+.0%} outside), "
            f"in the last checked frame of the load window")


def affinity_note(affinity: dict[str, dict[int, dict]], split: CpuSplit) -> str:
    """A note naming any sampled process that was allowed CPUs outside its side's set."""
    if not split.isolated:
        return ""
    # The target's groups may hold a share of the target's set (a proxy and its file server: CpuSplit.stack_cpus).
    expected = {"": split.tool, "nginx": split.target, "proxy": split.target, "toxiproxy": split.target}
    escaped = [f"{name or 'tool'} pid {pid} ({seen['name']}) on CPUs {seen['cpus']}" for name, pids in affinity.items()
               for pid, seen in pids.items() if name in expected and not _within(seen["cpus"], expected[name], name)]
    return f"isolation breached: {', '.join(escaped)}" if escaped else ""


def _within(seen: str, allowed: tuple[int, ...], group: str) -> bool:
    """The tool must have exactly its set; a target process any part of the target's."""
    return seen == format_cpus(allowed) if group == "" else set(parse_cpus(seen)) <= set(allowed)


def contention_note(row: RunRow, busy: dict[str, float | None], irq: dict[str, float | None], split: CpuSplit) -> str:
    """A note when a side's CPUs were >= 90% busy, the side itself was not saturated, and other
    processes used >= 10% of those CPUs (what is left after the side's own share and interrupts)."""
    sides = {"tool": (row.cpu_avg_pct, split.tool_cpus), "target": (row.target_cpu_pct, split.target_cpus)}
    if not split.isolated:   # one pool: both sides' processes are "own"
        own = None if row.cpu_avg_pct is None or row.target_cpu_pct is None else row.cpu_avg_pct + row.target_cpu_pct
        sides = {"tool and target": (own, split.available)}
    found = []
    for name, (own, cpus) in sides.items():
        total, interrupts = busy.get(name.split()[0]), irq.get(name.split()[0]) or 0.0
        if total is None or own is None or total < SATURATED * 100 or saturated(own, len(cpus)):
            continue
        others = total - interrupts - own / len(cpus)
        if others >= (1 - SATURATED) * 100:
            found.append(f"the {name}'s CPUs {format_cpus(cpus)} were {total:.0f}% busy: {own / len(cpus):.0f}% "
                         f"the {name}, {interrupts:.0f}% interrupts, {others:.0f}% other processes")
    return f"{CONTENDED}: {'; '.join(found)}" if found else ""


def fill(row: RunRow, execution: Execution, window: tuple[float, float] | None, split: CpuSplit,
         check_name: str, target_cores: int | None = None) -> dict:
    """The target's CPU, both flags, req_per_cpu_s and the memory cross-check into ``row``;
    returns what meta.json should add. ``target_cores``: the target's machine's CPUs when it is
    another machine (its CPU figures then come from top there: execution.target_cpu_busy)."""
    tool = summarise(execution.samples, window)
    groups = {name: summarise(samples, window) for name, samples in (execution.others or {}).items()}
    # "proxy" is a part of "nginx" (the whole target stack), sampled apart for its own column.
    parts = [u.cpu_avg_pct for name, u in groups.items() if u.cpu_avg_pct is not None and name != "proxy"]
    row.target_cpu_pct = sum(parts) if parts else None
    row.proxy_cpu_pct = groups["proxy"].cpu_avg_pct if "proxy" in groups else None
    row.tool_saturated = saturated(row.cpu_avg_pct, len(split.tool_cpus))
    target_cpus = tuple(range(target_cores)) if target_cores else split.target_cpus
    row.target_saturated = saturated(row.target_cpu_pct, len(target_cpus))
    row.req_per_cpu_s = req_per_cpu_s(row.requests, row.cpu_avg_pct, row.measured_s or row.duration_s)
    notes = [memory_note(tool, check_name)]
    proxy = groups.get("toxiproxy")
    row.shaper_cpu_pct = proxy.cpu_avg_pct if proxy is not None else None
    if proxy is not None and proxy.cpu_avg_pct is not None:
        notes.append(f"target_cpu_pct counts Toxiproxy ({proxy.cpu_avg_pct:.0f}%) beside Nginx: both run on the "
                     "target's CPUs")
    notes.append(affinity_note(execution.affinity or {}, split))
    frames = {"tool": (execution.cpu_busy or [], split.tool_cpus),
              "target": (execution.target_cpu_busy, target_cpus) if target_cores else
                        (execution.cpu_busy or [], split.target_cpus)}
    busy = {name: busy_pct(cpu_busy or [], cpus, window) for name, (cpu_busy, cpus) in frames.items()}
    irq = {name: busy_pct(cpu_busy or [], cpus, window, irq=True) for name, (cpu_busy, cpus) in frames.items()}
    contended = "" if target_cores else contention_note(row, busy, irq, split)   # two machines: not one pool
    row.notes = "; ".join(filter(None, [row.notes, *notes, contended]))
    return {"contended": bool(contended), "target_usage": {name: asdict(u) for name, u in groups.items()},
            "cpus_busy_pct": busy, "cpus_irq_pct": irq,
            "cpus_allowed": {name or "tool": pids for name, pids in (execution.affinity or {}).items()},
            "memory_check": {"method": check_name, "top_mb": tool.check_top_mb,
                             "next_top_mb": tool.check_next_top_mb, "check_mb": tool.check_mb}}
