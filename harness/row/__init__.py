"""One place derives a run's row: from what the run stored (record.json, and per tool process its
output, samples*.csv and execution.json, read by harness/store/stored.py into a StoredRun) to its runs.csv
row and meta.json (a Derived, which the store writes). Plain values in, plain values out: nothing here
reads or writes a file or starts a process, so any results folder can be derived again at any time
(``python -m harness rederive``), e.g. after a parser fix.

The order, each step reading only what the previous ones set:
  each part: the tool's figures (its parser), its status, its memory and CPU over its load window,
             both sides' CPU and saturation (bottleneck.py)
  the run:   the parts merged (merge.py; one part is the run), the rate and stall columns (rate.py),
             the wire columns (wire.py), and the figures of a run that did not end ok withheld.
Memory per VU is no row's figure: it is a slope over the VU levels of a results folder (analysis/memory.py).
"""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from harness.failure import cause_line, name_the_missing_path
from harness.row import bottleneck, merge, rate, target, wire
from harness.row.usage import summarise
from harness.scenarios import Scenario, rtt_tolerance_ms
from harness.store.figures import TIMED_FIELDS, Metrics, below_resolution, emptied_cell
from harness.store.hdr import LatencyHistogram
from harness.store.record import SCHEMA_VERSION, Execution, RunRecord
from harness.store.results import COLUMNS, RunRow, withhold_results
from harness.store.stall import StallRecord
from harness.store.stored import Derived, StoredPart, StoredRun
from harness.tools.adapter import Declarations, ToolAdapter
from harness.tools.output import RunSpec, ToolOutput

SAMPLE_GAP_WARN_S = 2.5  # top frames further apart than this are reported in the row's notes
PROXY_BESIDE_TOOL = ("two machines: Toxiproxy ran beside the tool, on the generator's loopback, and shares its CPUs; "
                     "its CPU is in neither cpu_avg_pct nor target_cpu_pct")
# The Metrics fields that are runs.csv columns as they are; notes are joined, load_start_s becomes
# startup_s and source goes to meta.json.
COPIED_METRICS = [f.name for f in fields(Metrics) if f.name in COLUMNS and f.name != "notes"]


def base_row(record: RunRecord, scenario: Scenario, declared: Declarations) -> RunRow:
    """The row's setup columns, status failed until the run proves otherwise."""
    return RunRow(tool=record.tool, tool_version=None, runtime=record.runtime, scenario=scenario.id,
                  vus=scenario.vus, rtt_target_ms=scenario.rtt_ms, duration_s=scenario.duration_s,
                  repeat=record.repeat, started_at=record.started_at, run_dir=record.run_dir,
                  timing_resolution_ms=declared.timing_resolution_ms, co_corrected=declared.co_corrected,
                  cpus_target=record.cpus_target, cpus_tool=record.cpus_tool, shaper=record.shaper,
                  generators=max(1, len(record.parts)), **target.setup_columns(scenario, record.target))


def derive(stored: StoredRun, adapter: ToolAdapter) -> Derived:
    """The row and meta.json of ``stored``; ``adapter``: the tool's parser (its declarations as recorded at run
    time, where they were)."""
    record, scenario = stored.record, stored.scenario
    declared = Declarations.of(adapter, record.declarations)
    row = base_row(record, scenario, declared)
    meta: dict = {"schema_version": SCHEMA_VERSION, "concurrency_model": declared.concurrency_model,
                  "scenario": record.scenario}
    if record.unrunnable is not None:
        row.status, row.error = record.unrunnable_status or "failed", record.unrunnable
        if row.status == "unsupported":
            rate.fill_unsupported(row, scenario, declared)
        return Derived(stored.run_dir, row, {"schema_version": SCHEMA_VERSION}, [])
    parts = [_part(stored, part, scenario, adapter, declared) for part in stored.parts]
    if len(parts) == 1:
        row, part_meta, _ = parts[0]
        meta.update(part_meta)
    elif parts:
        meta["parts"], how = _merge(row, record, parts)
        if how:
            meta["metric_source"] = "merged: " + how
    direct_gets, via_gets = probe_gets(record.shaper_load)
    row.server_requests = None if record.server_requests is None else record.server_requests - direct_gets - via_gets
    row.server_connections = record.server_connections
    stalled = StallRecord.from_dict(record.stall) if record.stall else None
    rate.fill_rate(row, scenario, declared)
    rate.fill_stall(row, scenario, stalled)
    if record.proxy_beside_tool:
        _note(row, PROXY_BESIDE_TOOL)
    if record.capture is not None:
        wire.fill(row, record.capture, via_gets, declared.stops_timing_before_closing)
        meta["wire"] = record.capture
    target.check_keepalive(row)
    target.check_protocol(row, record.server_off_protocol, probed_under_load=bool(direct_gets or via_gets))
    target.check_flow(row, record.server_api)
    if record.error is not None:
        row.status, row.error = "failed", record.error
    if record.traceback:
        meta["traceback"] = record.traceback
    meta.update(bottleneck.fill_shaper(row, record.shaper_load, scenario.duration_s))
    row.limited_by = bottleneck.limited_by(row, len(record.cpu_split.available), meta.get("contended", False))
    _note(row, bottleneck.shaper_note(row, record.shaper_load))
    if record.phases_s:
        meta["overhead_s"] = overhead_by_phase(record.phases_s, [m.get("wall_s") for _, m, _ in parts],
                                               scenario.duration_s)
    withheld = withhold_results(row)
    if withheld:
        meta["withheld_figures"] = withheld
    return Derived(stored.run_dir, row, meta, [(part.folder, part_row, part_meta) for part, (part_row, part_meta, _)
                                               in zip(stored.parts, parts)] if len(parts) > 1 else [])


def derive_stored(stored: StoredRun, adapter: ToolAdapter) -> Derived:
    """derive(), with a crash in the derivation made the run's failure (the suite goes on): the run is derived
    again from its setup alone, with none of the facts a crash may have come from."""
    try:
        return derive(stored, adapter)
    except Exception as exc:  # noqa: BLE001 - a bug in one row's derivation must not sink the suite
        return derive(stored.crashed(exc), adapter)


def overhead_by_phase(phases_s: dict[str, float], walls_s: list[float | None], duration_s: int) -> dict:
    """The harness's own time around the tool, by phase: every phase but the load, and the part of the
    load phase that was not the tool running (sampler, probes); ``tool_beyond_duration`` is the tool's
    own start-up and wind-down (the tool's cost, not the harness's: outside the total)."""
    overhead = {name: s for name, s in phases_s.items() if name != "load"}
    wall = max((w for w in walls_s if w is not None), default=None)
    if "load" in phases_s and wall is not None:
        overhead["load_setup"] = round(max(0.0, phases_s["load"] - wall), 3)
        overhead["tool_beyond_duration"] = round(wall - duration_s, 3)
    overhead["total"] = round(sum(s for name, s in overhead.items() if name != "tool_beyond_duration"), 3)
    return overhead


def probe_gets(under_load: dict | None) -> tuple[int, int]:
    """The GETs the RTT probe under the load sent straight to Nginx and through the shaper: Nginx
    counted both, the capture (on the shaped path) the second; neither is the tool's."""
    under_load = under_load or {}
    return under_load.get("gets_direct", 0), under_load.get("gets_via", 0)


def _part(stored: StoredRun, stored_part: StoredPart, scenario: Scenario, adapter: ToolAdapter,
          declared: Declarations) -> tuple[RunRow, dict, LatencyHistogram | None]:
    """One tool process's row, what its meta.json adds, and its latency histogram (several parts only)."""
    record, part, execution = stored.record, stored_part.record, stored_part.execution
    row = base_row(record, scenario, declared)
    row.vus, row.tool_version, row.rtt_measured_ms = part.vus, part.tool_version, part.rtt_measured_ms
    row.run_dir = str(Path(record.run_dir) / part.folder) if part.folder else record.run_dir
    if part.rtt_measured_ms is not None:
        row.rtt_ok = rtt_ok(part.rtt_measured_ms, scenario.rtt_ms)
    meta: dict = {"command": part.command, "ran_on": part.host, **({"shaping": part.shaping} if part.shaping else {})}
    if execution is None:
        row.status, row.error = "failed", part.error or "the tool did not start"
        return row, meta, None
    spec = RunSpec.from_record(stored_part.spec, stored_part.folder)
    output = ToolOutput(spec, execution.stdout, execution.stderr, execution.exit_code or 0, execution.launched_at)
    figures_meta, metrics = _figures(row, adapter, declared, output, execution)
    _status(row, metrics, execution, record.grace_s)
    meta.update(figures_meta)
    if row.status == "failed":
        row.error = name_the_missing_path(row.error, part.command)
    meta.update(bottleneck.fill(row, execution, meta["load_window_s"], record.cpu_split, part.memory_check_name,
                                part.target_cores))
    histogram = None
    if len(record.parts) > 1 and row.status == "ok" and part.histogram:
        if "error" in part.histogram:   # without it the merge keeps counts only
            meta["notes"] = [*meta["notes"], f"no latency histogram: {part.histogram['error']}"]
        else:
            histogram = stored_part.histogram
    return row, meta, histogram


def _figures(row: RunRow, adapter: ToolAdapter, declared: Declarations, output: ToolOutput,
             execution: Execution) -> tuple[dict, Metrics | None]:
    """The tool's figures, and its memory and CPU over its load window; returns what meta.json adds and the
    parsed metrics (None: the output did not parse)."""
    metrics = _parsed(row, adapter, declared, output, execution.stderr)
    window = None
    if metrics is not None:
        for name in COPIED_METRICS:
            setattr(row, name, getattr(metrics, name))
        row.notes = "; ".join(metrics.notes)
        if metrics.load_start_s is not None and metrics.measured_s is not None:
            row.startup_s = metrics.load_start_s
            window = (metrics.load_start_s, metrics.load_start_s + metrics.measured_s)
    usage = summarise(execution.samples, window)
    row.mem_avg_mb, row.mem_peak_mb, row.cpu_avg_pct = usage.mem_avg_mb, usage.mem_peak_mb, usage.cpu_avg_pct
    row.mem_startup_peak_mb = usage.mem_outside_peak_mb
    row.mem_growth_mb_per_s = usage.mem_growth_mb_per_s
    if usage.max_gap_s > SAMPLE_GAP_WARN_S or usage.cpu_frames_dropped:
        # Seen in Docker with both cores saturated: top itself stops printing for seconds.
        _note(row, f"top sampling stalled: {usage.max_gap_s:.1f} s without a frame, memory/CPU rest on "
                   f"{usage.samples} samples" + (f", CPU leaves out {usage.cpu_frames_dropped} frame(s) that came "
                                                 "after a stall" if usage.cpu_frames_dropped else ""))
    if usage.mem_frames_dropped:
        _note(row, f"memory leaves out {usage.mem_frames_dropped} frame(s) in which the tool's processes held no "
                   "memory (RSS 0: exiting)")
    return {"metric_source": metrics.source if metrics else None, "notes": metrics.notes if metrics else [],
            "exit_code": execution.exit_code, "timed_out": execution.timed_out,
            "wall_s": execution.wall_s, "overtime_s": execution.overtime_s, "launched_at": execution.launched_at,
            "samples": usage.samples,
            "load_window_s": window}, metrics


def _parsed(row: RunRow, adapter: ToolAdapter, declared: Declarations, output: ToolOutput,
            stderr: str) -> Metrics | None:
    """The tool's metrics, those below its timing resolution emptied (named in the row); None, with the row's
    error saying why, when its output does not parse."""
    try:
        raw = adapter.parsed(output)
        shown = {name: getattr(raw, name) for name in TIMED_FIELDS}   # below_resolution empties them in place
        metrics = below_resolution(raw, declared.timing_resolution_ms)
    except Exception as exc:  # noqa: BLE001 - any parser failure is the run's failure, not the suite's
        row.error = (f"could not parse {adapter.name}'s output in {output.spec.out_dir}: "
                     f"{type(exc).__name__}: {exc} (its stderr: {cause_line(stderr)})")
        return None
    row.lat_below_resolution = emptied_cell([n for n in TIMED_FIELDS if shown[n] is not None
                                             and getattr(metrics, n) is None])
    return metrics


def _status(row: RunRow, metrics: Metrics | None, execution: Execution, grace_s: float | None) -> None:
    """The run's status from how the tool's process ended and what it counted."""
    if execution.overtime_s and not execution.timed_out:
        _note(row, f"worked {execution.overtime_s:.0f} s past its duration + {grace_s or 0:.0f} s grace after the load "
                   "(busy or writing its output: waited for, not killed)")
    if execution.timed_out:
        row.status, row.error = "timeout", (f"still running {grace_s or 0:.0f} s after its duration"
                                            + (f" and {execution.overtime_s:.0f} s more working" if execution.overtime_s
                                               else "") + ": killed")
    elif execution.exit_code != 0:
        row.status, row.error = "failed", f"exit status {execution.exit_code}: {cause_line(execution.stderr, execution.stdout)}"
    elif metrics is not None and metrics.requests == 0:
        # Seen: wrk at 1,000 VUs in a TCG VM on a busy machine exited 0 after 14.6 s with "0 requests".
        row.status, row.error = "failed", ("0 requests completed: the tool exited 0 and its output parsed, but "
                                           "there is nothing to measure (server_requests: what reached the target)")
    elif metrics is not None:
        row.status = "ok"


def _merge(row: RunRow, record: RunRecord,
           parts: list[tuple[RunRow, dict, LatencyHistogram | None]]) -> tuple[list[dict], str | None]:
    """The parts into ``row``; returns meta.json's ``parts`` and how the latencies were merged."""
    rows = [p for p, _, _ in parts]
    hosts = [p.host for p in record.parts]
    row.tool_version = " / ".join(dict.fromkeys(str(p.tool_version) for p in rows))
    rtts = [p.rtt_measured_ms for p in rows]
    if None not in rtts:
        row.rtt_measured_ms, row.rtt_ok = max(rtts), all(p.rtt_ok for p in rows)
    summary = [{"host": host, "vus": p.vus, "status": p.status, "requests": p.requests,
                "rtt_measured_ms": p.rtt_measured_ms, "folder": part.folder}
               for host, p, part in zip(hosts, rows, record.parts)]
    failed = [(host, p) for host, p in zip(hosts, rows) if p.status != "ok"]
    if failed:
        row.status = "timeout" if any(p.status == "timeout" for _, p in failed) else "failed"
        row.error = "; ".join(f"generator {host}: {p.status}: {p.error}" for host, p in failed)
        return summary, None
    figures, how = merge.merged_figures(rows, [h for _, _, h in parts])
    for name in COPIED_METRICS:
        if hasattr(figures, name):
            setattr(row, name, getattr(figures, name))
    measured = [p.measured_s for p in rows if p.measured_s is not None]
    row.measured_s = max(measured) if measured else None
    for name in ("mem_avg_mb", "mem_peak_mb", "cpu_avg_pct", "mem_growth_mb_per_s"):
        values = [getattr(p, name) for p in rows]
        setattr(row, name, None if None in values else sum(values))
    row.tool_saturated = any(p.tool_saturated for p in rows) if all(p.tool_saturated is not None for p in rows) else None
    row.target_cpu_pct, row.target_saturated = rows[0].target_cpu_pct, rows[0].target_saturated   # sampled once
    row.req_per_cpu_s = bottleneck.req_per_cpu_s(row.requests, row.cpu_avg_pct, row.measured_s or row.duration_s)
    row.status = "ok"
    row.notes = (f"merged from {len(rows)} generators started together ("
                 + ", ".join(f"{host}: {p.vus} VUs, {p.requests:,} requests" for host, p in zip(hosts, rows))
                 + f"): requests, errors, rps, memory and CPU summed; {how}; RTT: the largest of the parts' "
                 f"({', '.join(f'{r:.2f}' for r in rtts if r is not None)} ms)")
    return summary, how


def rtt_ok(measured_ms: float, target_ms: float) -> bool:
    """Within max(10%, 0.5 ms) of the target RTT."""
    return abs(measured_ms - target_ms) <= rtt_tolerance_ms(target_ms)


def _note(row: RunRow, text: str) -> None:
    row.notes = "; ".join(filter(None, [row.notes, text]))
