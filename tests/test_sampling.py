import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from statistics import fmean

import psutil
import pytest

from harness.row.bottleneck import memory_note
from harness.row.usage import Usage, check_span, summarise
from harness.runtimes.host import process_tree
from harness import sampling
from harness.sampling import SAMPLER_NICE, SAMPLER_POLICY, TopSampler, allowed_cpus, parse_kib, proc_status, rows_of, vmrss_mb
from harness.store.samples import Sample, read_csv

# A real run's samples.csv (wrk, 100 VUs, host, 3 s): top's last frame still lists wrk, exiting, RSS 0.
EXITING = Path(__file__).parent / "fixtures" / "sampling" / "wrk-exiting-frame" / "samples.csv"


def test_top_units_are_converted_to_kib():
    assert parse_kib("5120") == 5120
    assert parse_kib("1.5m") == 1536
    assert parse_kib("2.0g") == 2 * 1024**2


def test_a_row_top_read_before_its_process_execd_is_not_the_tool():
    """A wrapper's vfork child, listed by top as the wrapper (its 200 MB), then named as the tool when the pids
    were resolved: that row is the wrapper's, not the tool's. A name unknown (remote top, a process gone) keeps it."""
    columns = "PID USER PR NI VIRT RES SHR S %CPU %MEM TIME+ COMMAND".split()
    frame = [line.split(None, len(columns) - 1) for line in (
        "101 root 20 0 300000 221000 9000 S 0.0 0.9 0:00.05 python3",
        "102 root 20 0 40000 19000 9000 R 50.0 0.1 0:00.20 lth-fake-tool",
        "103 root 20 0 40000 5000 900 S 0.0 0.0 0:00.01 my tool")]
    named = {101: "lth-fake-tool", 102: "lth-fake-tool", 103: "my tool"}
    assert [r[0] for r in rows_of(columns, frame, {101, 102, 103}, named)] == ["102", "103"]
    assert [r[0] for r in rows_of(columns, frame, {101, 102}, {})] == ["101", "102"]
    assert [r[0] for r in rows_of(columns, frame, {101}, {101: None})] == ["101"]
    mine = proc_status(os.getpid())
    assert mine.name == Path("/proc/self/comm").read_text().strip() and mine.threads == len(os.listdir("/proc/self/task"))
    assert mine.cpus == Path("/proc/self/status").read_text().split("Cpus_allowed_list:")[1].split()[0]
    assert proc_status(2**22 + 7) is None


def test_a_thread_started_on_other_cpus_after_the_first_frame_is_seen(monkeypatch):
    """Each thread's CPUs are walked when a process is new or has more threads than seen; between, the main
    thread's come from the status the frame read."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    sampler, me, walks = TopSampler(lambda: set()), os.getpid(), []
    monkeypatch.setattr(sampling, "allowed_cpus", lambda pid: walks.append(pid) or allowed_cpus(pid))
    sampler._note_affinity({"": {me}}, {me: proc_status(me)})
    before = sampler.affinity[""][me]
    assert " | " not in before["cpus"] and before["threads"] == len(os.listdir("/proc/self/task"))
    sampler._note_affinity({"": {me}}, {me: proc_status(me)})
    assert sampler.affinity[""][me] == before and walks == [me]      # the second frame read no thread's status
    pinned, stop = threading.Event(), threading.Event()

    def on_the_last_cpu():
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
        pinned.set()
        stop.wait(10)
    thread = threading.Thread(target=on_the_last_cpu)
    thread.start()
    try:
        pinned.wait(10)
        sampler._note_affinity({"": {me}}, {me: proc_status(me)})
    finally:
        stop.set()
        thread.join()
    after = sampler.affinity[""][me]
    assert after["threads"] == before["threads"] + 1 and walks == [me, me]
    assert after["cpus"] == " | ".join(sorted({before["cpus"], str(max(os.sched_getaffinity(0)))}))


def test_a_frame_reads_each_process_status_once_for_its_name_cpus_and_memory_check(monkeypatch):
    """The reader runs on the tool's CPUs during the load: the VmRSS check is summed from the status the frame
    read for the names and CPUs, not read again (issue 53), and it is the same figure."""
    child = subprocess.Popen([sys.executable, "-c", "b = bytearray(32 * 2**20); import time; time.sleep(2.5)"])
    path, opened = f"/proc/{child.pid}/status", []

    def counted(file, *args, **kwargs):
        opened.append(file)
        return open(file, *args, **kwargs)
    monkeypatch.setattr(sampling, "open", counted, raising=False)
    with TopSampler(lambda: {child.pid}, check=vmrss_mb) as sampler:
        child.wait(timeout=10)
    frames = [s for s in sampler.samples if s.processes]
    assert len(frames) >= 2 and opened.count(path) == len(sampler.samples), (opened.count(path), len(sampler.samples))
    assert all(s.rss_check_mb == pytest.approx(s.rss_mb, rel=0.1) for s in frames if s.rss_check_mb is not None)
    assert any(s.rss_check_mb and s.rss_check_mb > 32 for s in frames)
    mine = proc_status(os.getpid())
    vmrss = int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0])
    assert mine.rss_kib == pytest.approx(vmrss, rel=0.05)


def test_first_frame_cpu_is_dropped_and_empty_frames_ignored():
    samples = [Sample(0, 10, 500.0, 1, True), Sample(1, 20, 50.0, 1, False),
               Sample(2, 30, 70.0, 1, False), Sample(3, 0, 0.0, 0, False)]
    usage = summarise(samples)
    assert usage.mem_avg_mb == 20 and usage.mem_peak_mb == 30
    assert usage.cpu_avg_pct == 60
    assert usage.samples == 3


def test_nothing_sampled_means_unknown_not_zero():
    usage = summarise([Sample(0, 0, 0, 0, True)])
    assert usage.mem_avg_mb is None and usage.cpu_avg_pct is None


def test_top_sees_a_real_child_process_memory_and_cpu(tmp_path):
    # A child holding ~64 MiB and spinning for ~3.5 s, sampled through its parent; it writes the share of a
    # core it got (its CPU time over its wall time), which top's figure must match whatever else runs here.
    share = tmp_path / "share"
    code = ("import time; b = bytearray(64 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); "
            "t, c = time.time(), time.process_time()\nwhile time.time() - t < 3.5: pass\n"
            f"open('{share}', 'w').write(str((time.process_time() - c) / (time.time() - t)))")
    parent = subprocess.Popen(["sh", "-c", f"{sys.executable} -c \"{code}\"; true"])
    with TopSampler(lambda: process_tree(parent.pid)) as sampler:
        parent.wait(timeout=30)
    usage = summarise(sampler.samples)
    assert usage.samples >= 3
    assert usage.mem_peak_mb == pytest.approx(64 + 10, abs=12)   # the bytearray plus the interpreter
    assert usage.cpu_avg_pct == pytest.approx(100 * float(share.read_text()), abs=25), share.read_text()


def test_a_process_tree_is_the_root_and_every_descendant_as_psutil_finds_them():
    # a shell, its two children and a grandchild (real processes); the tree walked from the kernel's children lists
    # must be psutil's, read from every process
    root = subprocess.Popen(["sh", "-c", "sleep 30 & (sleep 30 & wait) & wait"])
    try:
        deadline = time.time() + 10
        while len(psutil.Process(root.pid).children(recursive=True)) < 3 and time.time() < deadline:
            time.sleep(0.05)
        expected = {root.pid, *(p.pid for p in psutil.Process(root.pid).children(recursive=True))}
        assert len(expected) >= 4 and process_tree(root.pid) == expected
    finally:
        for pid in process_tree(root.pid) - {root.pid}:
            with contextlib.suppress(ProcessLookupError):   # the subshell ends by itself once its sleep is killed
                os.kill(pid, 9)
        root.kill()
        root.wait()
    assert process_tree(root.pid) == set()      # reaped: gone


def test_load_window_separates_startup_peak_from_steady_figures():
    samples = [Sample(0, 300, 90.0, 1, True), Sample(1, 400, 150.0, 1, False),   # JVM start-up
               Sample(2, 100, 40.0, 1, False), Sample(3, 120, 60.0, 1, False),   # load window
               Sample(4, 500, 90.0, 1, False)]                                   # report generation
    usage = summarise(samples, window=(1.5, 3.5))
    assert usage.mem_avg_mb == 110 and usage.mem_peak_mb == 120 and usage.cpu_avg_pct == 50
    assert usage.mem_outside_peak_mb == 500


def test_an_exiting_process_frame_is_no_memory_reading():
    """Issue 35: the exiting frame took this run's mem_avg_mb from 5.19 to 3.89 MiB. read_csv is what the
    row's derivation (store.record.load_execution) reads samples.csv with; wrk gives no load window."""
    samples = read_csv(EXITING)
    exiting = samples[-1]
    assert exiting.processes == 1 and exiting.rss_mb == 0
    held = [s.rss_mb for s in samples[:-1]]
    usage = summarise(samples)
    assert usage.mem_avg_mb == pytest.approx(fmean(held)) and usage.mem_peak_mb == max(held)
    assert usage.mem_frames_dropped == 1 and usage.samples == len(samples)
    # Its %CPU still counts, weighted by the interval top measured it over (the process ran in it).
    rated = list(zip(samples, samples[1:]))
    assert usage.cpu_avg_pct == pytest.approx(sum(b.cpu_pct * (b.t_s - a.t_s) for a, b in rated)
                                              / (exiting.t_s - samples[0].t_s))


def test_an_exiting_frame_after_the_window_is_no_outside_peak_nor_memory_check():
    """As a stored k6 run's last frame: a zombie, RSS 0 in top and 0 in VmRSS, after the load window."""
    samples = [Sample(0.2, 52, 40.0, 1, True, 53), Sample(1.2, 62, 30.0, 1, False, 62),
               Sample(2.2, 63, 21.0, 1, False, 63), Sample(3.2, 0, 21.0, 1, False, 0)]
    usage = summarise(samples, window=(0.1, 3.1))
    assert usage.mem_outside_peak_mb is None and usage.mem_frames_dropped == 0
    # the last window frame has no resident frame after it: the one before holds the check, 63 one frame later
    assert (usage.check_top_mb, usage.check_next_top_mb, usage.check_mb) == (62, 63, 62)
    assert summarise(samples).check_top_mb == 62 and summarise(samples).mem_frames_dropped == 1


def test_a_check_that_read_the_process_gone_is_no_reading():
    """The host quick start's k6 at vu100-rtt50 (2026-11-27): top read 65.4 MiB, then VmRSS found k6 a zombie
    (no VmRSS line) and said 0.0: the row's note claimed -100%. The frame before holds the check."""
    samples = [Sample(0.2, 52, 40.0, 1, True, 52), Sample(1.2, 62, 30.0, 1, False, 62.1),
               Sample(2.2, 65.4, 21.0, 1, False, 0.0)]
    assert (summarise(samples).check_top_mb, summarise(samples).check_mb) == (62, 62.1)


# Two quick-start frames from 2026-11-27 (top's RSS, VmRSS read after it, top's RSS one frame later) that the
# check against top's own frame alone flagged: oha storing every result (host), siege exiting after its users
# stopped (Docker; the run's last frame, nothing after it).
OHA_GROWING = [Sample(0.172, 13.777, 80, 1, True, 13.797), Sample(1.172, 20.242, 91, 1, False, 20.258),
               Sample(2.183, 27.129, 76.2, 1, False, 28.074)]
SIEGE_EXITING = [Sample(0.177, 17.016, 56.2, 1, True, 17.094), Sample(1.183, 17.172, 99, 1, False, 17.172),
                 Sample(2.185, 17.340, 100, 1, False, 9.930)]


@pytest.mark.parametrize("samples", [OHA_GROWING, SIEGE_EXITING], ids=["oha", "siege"])
def test_the_check_is_judged_against_the_range_top_read_around_it(samples):
    usage = summarise(samples)
    assert (usage.check_top_mb, usage.check_next_top_mb) == (samples[1].rss_mb, samples[2].rss_mb)
    assert memory_note(usage, "VmRSS") == ""
    last = samples[-1]   # judged alone, against its own frame, as CI's as-typed test did (to 2%)
    assert abs(last.rss_check_mb / last.rss_mb - 1) > 0.02


def test_the_check_is_taken_where_tops_rss_held_steady():
    """CI 2026-11-29, Docker k6 at its first second: top 61.1, VmRSS 57.7, top 63.5 MiB (Go's RSS is not monotone
    between frames): the last checked frame judged it 5.6% outside. The last steady frame holds the check; with none
    steady, the steadiest."""
    steady_then_ramp = [Sample(0.2, 50.0, 40.0, 1, True, 50.2), Sample(1.2, 50.5, 30.0, 1, False, 50.4),
                        Sample(2.2, 61.1, 30.0, 1, False, 57.7), Sample(3.2, 63.5, 30.0, 1, False, 63.4)]
    usage = summarise(steady_then_ramp)
    assert (usage.check_top_mb, usage.check_next_top_mb, usage.check_mb) == (50.0, 50.5, 50.2)
    all_ramp = [Sample(0.2, 45.6, 40.0, 1, True, 46.0), Sample(1.2, 61.1, 30.0, 1, False, 57.7),
                Sample(2.2, 63.5, 30.0, 1, False, 63.4)]
    assert (summarise(all_ramp).check_top_mb, summarise(all_ramp).check_next_top_mb) == (61.1, 63.5)
    assert memory_note(summarise(all_ramp), "VmRSS") == ""   # 5.6% below: within the product's tolerance


@pytest.mark.parametrize(("top", "following", "check", "outside"),
                         [(20, 27, 24, 0.0), (27, 20, 24, 0.0), (20, 27, 30, 30 / 27 - 1), (20, 27, 15, -0.25)])
def test_check_span_is_the_distance_outside_the_range_read_around_it(top, following, check, outside):
    assert check_span(top, following, check) == pytest.approx(outside)


def test_a_check_outside_the_range_is_noted_with_both_frames():
    usage = Usage(20, 27, None, 3, check_top_mb=20, check_next_top_mb=27, check_mb=40)
    note = memory_note(usage, "VmRSS of the same processes (/proc)")
    assert note.startswith("memory check: top's RSS 20.0 MiB, 27.0 MiB one frame later, vs VmRSS") and "+48% outside" in note


def test_a_zombie_has_no_vmrss_and_is_no_reading():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE
        assert vmrss_mb({child.pid}) is None                       # not 0.0
        assert vmrss_mb({child.pid, os.getpid()}) == pytest.approx(vmrss_mb({os.getpid()}), rel=0.05)
    finally:
        child.wait()


def test_memory_growing_within_the_run_is_its_slope_over_the_window():
    rising = [Sample(t, 50 + 4 * t, 10.0, 1, t == 0) for t in (0, 1, 2, 3, 4, 5)]   # 4 MiB/s, as Node's heap grows
    assert summarise(rising).mem_growth_mb_per_s == pytest.approx(4.0)
    assert summarise(rising, (2.0, 5.0)).mem_growth_mb_per_s == pytest.approx(4.0)
    assert summarise(rising, (1.0, 2.0)).mem_growth_mb_per_s is None           # two frames: no slope
    # wrk's real run: flat at ~5.2 MiB; the exiting frame (RSS 0) would have made it -1.6 MiB/s
    assert abs(summarise(read_csv(EXITING)).mem_growth_mb_per_s) < 0.1


def test_nearest_rank_percentiles_are_observed_values():
    from harness.stats import latency_metrics
    metrics = latency_metrics([float(v) for v in range(1, 101)], requests=100)
    assert (metrics.lat_p50_ms, metrics.lat_p99_ms, metrics.lat_max_ms) == (50.0, 99.0, 100.0)
    assert metrics.lat_mean_ms == 50.5 and metrics.requests == 100
    assert latency_metrics([], requests=0).lat_p50_ms is None


def test_a_stalled_sampler_is_measured():
    samples = [Sample(0, 10, 0, 1, True), Sample(1, 10, 50, 1, False), Sample(6.5, 10, 380, 1, False)]
    assert summarise(samples).max_gap_s == 5.5


@pytest.mark.skipif(os.geteuid() != 0, reason="raising a priority needs root (make test runs as root)")
def test_top_and_its_reader_run_above_the_load():
    """CI lost every frame but one of a 3 s run that filled both CPUs: they were read (timed, their pids
    resolved) after the tool had exited."""
    with TopSampler(lambda: set()) as sampler:
        assert sampler.wait_first_frame(10)
        assert psutil.Process(sampler._proc.pid).nice() == SAMPLER_NICE
        assert os.getpriority(os.PRIO_PROCESS, sampler._thread.native_id) == SAMPLER_NICE
        # batch: they keep that share of a busy CPU but never preempt the tool on waking (issue 53)
        assert os.sched_getscheduler(sampler._proc.pid) == os.sched_getscheduler(sampler._thread.native_id) \
            == SAMPLER_POLICY == os.SCHED_BATCH
