"""Memory and CPU figures from a run's stored top frames (harness/store/samples.py).

A frame that arrives after a stall (more than STALL_S after the previous one: seen in Docker with both
cores saturated) carries a %CPU for an interval top did not measure consistently (382% on two cores), so
its CPU figure is left out of the average and counted in ``Usage.cpu_frames_dropped``; the other frames
are weighted by the time since their previous frame. top's first frame has no meaningful %CPU.

A frame in which the group's processes hold no memory (summed RSS 0: the tool exiting or a zombie,
or a process gone between the pid listing and top's frame) is no reading of their memory: it is
left out of the memory figures and counted in ``Usage.mem_frames_dropped`` (issue 35: such a last
frame pulled a 3 s run's average down by a quarter).

The memory check reads VmRSS of the same pids right after top printed a frame (harness/sampling.py),
so after top read it and before top reads the next one. Memory moves in between (oha keeps every result:
7 MiB/s; a tool that stopped its users frees memory as it exits), so the check is judged against the
range top itself saw over that interval: this frame's RSS and the next resident frame's (``check_span``).
A frame with no resident frame after it has no such range and holds no check. Between two frames a process's
RSS need not pass monotonically from one reading to the other (Go's k6 at its first second: top 61.1, VmRSS
57.7, top 63.5 MiB, CI 2026-11-29): the check is taken at the last frame over which top's RSS held steady
(``STEADY``), the steadiest frame when none did.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean, linear_regression

from harness.store.samples import CpuFrame, Sample

STALL_S = 1.5   # a frame later than this after the previous one follows a stall (interval 1 s)
MIN_GROWTH_FRAMES = 3   # a slope over two frames is their difference: one frame's noise
STEADY = 0.02   # top's RSS moved at most this much over the frame's interval: the check compares like with like


@dataclass(frozen=True)
class Usage:
    mem_avg_mb: float | None
    mem_peak_mb: float | None
    cpu_avg_pct: float | None
    samples: int
    mem_outside_peak_mb: float | None = None   # peak before/after the load window (start-up, report)
    max_gap_s: float = 0.0                     # longest time between two frames (top can stall)
    cpu_frames_dropped: int = 0                # frames after a stall, left out of cpu_avg_pct
    mem_frames_dropped: int = 0                # frames in the window with RSS 0 (exiting), left out of memory
    mem_growth_mb_per_s: float | None = None   # RSS's least-squares slope over the window's frames (3 at least)
    check_top_mb: float | None = None          # the frame in the window that holds the memory check (a resident
    check_next_top_mb: float | None = None     # frame after it, the last steady one): top's RSS there and one
    check_mb: float | None = None              # frame later, and the independent figure read between the two


def resident(sample: Sample) -> bool:
    """Whether the frame read the processes' memory: they were listed and held some."""
    return sample.processes > 0 and sample.rss_mb > 0


def growth(frames: list[Sample]) -> float | None:
    """How fast RSS rose over these frames, MiB/s (least squares; None below MIN_GROWTH_FRAMES or one instant):
    a tool whose memory grows with the requests served (Node's heap, a per-request log kept in RAM) rises
    steadily at a fixed VU count."""
    if len(frames) < MIN_GROWTH_FRAMES or len({f.t_s for f in frames}) < 2:
        return None
    return linear_regression([f.t_s for f in frames], [f.rss_mb for f in frames]).slope


def check_span(top_mb: float, next_top_mb: float, check_mb: float) -> float:
    """How far the check lies outside the range top read around it, relative to the nearer end (0 inside)."""
    low, high = sorted((top_mb, next_top_mb))
    if check_mb > high:
        return check_mb / high - 1
    return check_mb / low - 1 if check_mb < low else 0.0


def summarise(samples: list[Sample], window: tuple[float, float] | None = None) -> Usage:
    """Average and peak over the samples in the load ``window`` (seconds since launch; all
    samples when None); the peak outside it is kept apart. Memory counts resident frames only."""
    alive = [s for s in samples if s.processes > 0]
    inside = [s for s in alive if window is None or window[0] <= s.t_s <= window[1]]
    outside_peak = max((s.rss_mb for s in alive if s not in inside and resident(s)), default=None)
    if not inside:
        return Usage(None, None, None, 0, outside_peak)
    since = {id(b): b.t_s - a.t_s for a, b in zip(samples, samples[1:])}   # time each frame covers
    # An exiting process's last frame keeps its CPU: top measured it over an interval the process ran in.
    rated = [s for s in inside if not s.first_frame and id(s) in since]
    kept = [s for s in rated if since[id(s)] <= STALL_S]
    weight = sum(since[id(s)] for s in kept)
    gaps = [b.t_s - a.t_s for a, b in zip(alive, alive[1:])]
    memory = [s for s in inside if resident(s)]
    # A check of 0 read the processes gone or exiting after top's frame: no reading (as an RSS of 0 is none).
    following = {id(a): b for a, b in zip(samples, samples[1:]) if resident(b)}
    checked = [s for s in memory if s.rss_check_mb and id(s) in following]
    check = check_frame(checked, following)
    return Usage(
        mem_avg_mb=fmean(s.rss_mb for s in memory) if memory else None,
        mem_peak_mb=max((s.rss_mb for s in memory), default=None),
        cpu_avg_pct=sum(s.cpu_pct * since[id(s)] for s in kept) / weight if weight else None,
        samples=len(inside),
        mem_outside_peak_mb=outside_peak,
        max_gap_s=max(gaps, default=0.0),
        cpu_frames_dropped=len(rated) - len(kept),
        mem_frames_dropped=len(inside) - len(memory),
        mem_growth_mb_per_s=growth(memory),
        check_top_mb=check.rss_mb if check else None,
        check_next_top_mb=following[id(check)].rss_mb if check else None,
        check_mb=check.rss_check_mb if check else None,
    )


def moved(top_mb: float, next_top_mb: float) -> float:
    """How far top's RSS moved from one frame to the next, relative to the first."""
    return abs(next_top_mb / top_mb - 1)


def check_frame(checked: list[Sample], following: dict[int, Sample]) -> Sample | None:
    """The last frame over which top's RSS held steady; the steadiest (the latest of equals) when none did."""
    movement = {id(s): moved(s.rss_mb, following[id(s)].rss_mb) for s in checked}
    steady = [s for s in checked if movement[id(s)] <= STEADY]
    if steady:
        return steady[-1]
    return min(reversed(checked), key=lambda s: movement[id(s)], default=None)


def busy_pct(cpu_busy: list[CpuFrame], cpus: tuple[int, ...], window: tuple[float, float] | None,
             irq: bool = False) -> float | None:
    """How busy the CPUs in ``cpus`` were (any process, the kernel too) over the window, on average;
    with ``irq``, the part spent in interrupts."""
    frames = [f for f in cpu_busy if f.cpu in cpus and not f.first_frame
              and (window is None or window[0] <= f.t_s <= window[1])]
    return fmean(f.irq_pct if irq else f.busy_pct for f in frames) if frames else None
