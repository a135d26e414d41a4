"""CPU split, saturation flags, efficiency figures and the stall-proof CPU average (issue 11)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from harness.cpus import CpuSplit, choose_split, format_cpus, parse_cpus
from harness.errors import HarnessError
from harness.row.bottleneck import affinity_note, req_per_cpu_s, saturated, side
from harness.row.usage import summarise
from harness.sampling import TopSampler
from harness.store.samples import Sample, read_csv


def test_cpu_lists_round_trip():
    assert parse_cpus("0,2-4,7") == (0, 2, 3, 4, 7)
    assert format_cpus((0, 2, 3, 4, 7)) == "0,2-4,7"
    assert format_cpus(()) == ""
    with pytest.raises(HarnessError, match="--cpus-tool 'one' is not a CPU list"):
        parse_cpus("one", "--cpus-tool")


@pytest.mark.parametrize("text, message", [
    ("0-9999999999", "CPU 9999999999 is beyond any machine's"), ("8192", "CPU 8192 is beyond"),
    ("3-1", "the range 3-1 runs backwards"), (",", "names no CPU"),
])
def test_an_absurd_cpu_list_is_refused_before_it_is_expanded(text, message):
    """In a child whose address space is capped at 1 GiB: expanding 0-9999999999 first would be a MemoryError
    there (and fill this machine's memory here)."""
    child = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
             "from harness.cpus import parse_cpus; from harness.errors import HarnessError\n"
             "try:\n    parse_cpus(sys.argv[1], '--cpus-tool')\n"
             "except HarnessError as exc:\n    print(exc)")
    result = subprocess.run([sys.executable, "-c", child, text], capture_output=True, text=True, timeout=60)
    assert result.stderr == "" and message in result.stdout and result.stdout.startswith(f"--cpus-tool {text!r}")


def test_default_split_gives_the_target_the_first_half():
    two = choose_split(available=(0, 1))
    assert (two.target, two.tool, two.isolated) == ((0,), (1,), True)
    four = choose_split(available=(0, 1, 2, 3))
    assert (four.target, four.tool) == ((0, 1), (2, 3))
    assert choose_split(available=(0, 1, 2), tool="2").target == (0, 1)


def test_one_cpu_or_no_isolation_means_sharing_and_is_recorded():
    one = choose_split(available=(0,))
    assert not one.isolated and one.tool_cpus == (0,) and "only 1 CPU" in one.reason
    off = choose_split(isolation=False, available=(0, 1))
    assert off.describe() == {"cpu_isolation": False, "cpus_available": "0-1", "cpus_target": "", "cpus_tool": "",
                              "cpu_split_reason": off.reason}
    assert off.tool_cpus == (0, 1) and off.taskset("target") == []


@pytest.mark.parametrize("target, tool, message", [
    ("0-1", "1", "overlap"), ("0-1", None, "without a CPU"), ("5", None, "not available"),
])
def test_a_bad_split_is_one_clear_error(target, tool, message):
    with pytest.raises(HarnessError, match=message):
        choose_split(target=target, tool=tool, available=(0, 1))
    with pytest.raises(HarnessError, match="no-isolation"):
        choose_split(isolation=False, tool="1", available=(0, 1))


def test_saturation_is_90_percent_of_the_sides_cpus():
    assert saturated(90.0, 1) and not saturated(89.9, 1)
    assert saturated(180.0, 2) and not saturated(170.0, 2)
    assert saturated(None, 1) is None


def test_which_side_limited_the_run():
    assert side(True, False, True, 99, 40, 2) == "tool"
    assert side(False, True, True, 40, 95, 2) == "target"
    assert side(True, True, True, 95, 95, 2) == "tool and target"
    assert side(False, False, False, 100, 85, 2) == "shared CPUs"        # 185% of two shared CPUs
    assert side(False, False, True, 50, 50, 2).startswith("neither")
    assert side(None, None, True, None, None, 2) == "not measured"


def test_requests_per_cpu_second():
    assert req_per_cpu_s(10_000, 50.0, 10.0) == 2000           # 10k requests on half a core for 10 s
    assert req_per_cpu_s(10_000, 0.0, 10.0) is None and req_per_cpu_s(None, 50.0, 10.0) is None


def test_frames_are_weighted_by_the_time_they_cover():
    samples = [Sample(0, 10, 0, 1, True), Sample(1.0, 10, 50, 1, False), Sample(2.4, 10, 100, 1, False)]
    assert summarise(samples).cpu_avg_pct == pytest.approx((50 * 1.0 + 100 * 1.4) / 2.4)


def test_a_frame_after_a_stall_does_not_inflate_cpu_on_a_real_sample_file():
    # locust-multi in Docker: top printed nothing for 3.1 s, then a frame of 382.8% on a 2-core machine.
    folder = FIXTURES / "locust" / "locust-multi-docker"
    meta = json.loads((folder / "meta.json").read_text())["row"]
    samples = read_csv(folder / "samples.csv")
    window = (meta["startup_s"], meta["startup_s"] + meta["measured_s"])
    assert meta["cpu_avg_pct"] == pytest.approx(176.7, abs=0.1)    # what the plain mean made of it
    usage = summarise(samples, window)
    assert usage.cpu_frames_dropped == 1 and usage.max_gap_s > 3
    assert usage.cpu_avg_pct < 100                                 # 64% and 83% over ~1 s each
    assert usage.cpu_avg_pct == pytest.approx((64.0 * 1.003 + 83.2 * 1.119) / (1.003 + 1.119), abs=0.1)


def test_the_sampler_reads_the_cpus_every_process_may_use():
    split = CpuSplit(available=(0, 1), target=(0,), tool=(1,))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2.5)"], preexec_fn=lambda: split.pin("tool"))
    with TopSampler(lambda: {child.pid}) as sampler:
        child.wait(timeout=10)
    assert sampler.affinity[""] == {child.pid: {"name": "python3", "threads": 1, "cpus": "1"}} or \
        sampler.affinity[""][child.pid]["cpus"] == "1"
    assert affinity_note({"": sampler.affinity[""]}, split) == ""
    assert "pid 7 (nginx) on CPUs 0-1" in affinity_note({"nginx": {7: {"name": "nginx", "threads": 1, "cpus": "0-1"}}},
                                                        split)


def test_the_memory_cross_check_reads_vmrss_beside_top():
    child = subprocess.Popen([sys.executable, "-c", "b = bytearray(48 * 2**20); import time; time.sleep(2.5)"])
    from harness.sampling import vmrss_mb
    with TopSampler(lambda: {child.pid}, check=vmrss_mb) as sampler:
        child.wait(timeout=10)
    checked = [s for s in sampler.samples if s.rss_check_mb is not None]
    assert checked[-1].rss_mb > 48 and checked[-1].rss_check_mb == pytest.approx(checked[-1].rss_mb, rel=0.1)
    assert all(s.rss_check_mb is None for s in sampler.samples if s.processes == 0)


def test_a_bad_cpu_option_is_one_line_and_status_2():
    from conftest import harness
    result = harness("run", "--runtime", "host", "--tools", "ab", "--cpus-tool", "0-1", "--cpus-target", "1", timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "overlap" in result.stderr, result.stderr


def test_busy_cpus_with_an_unsaturated_side_are_named_as_contention():
    from harness.row.bottleneck import contention_note
    from harness.store.results import RunRow
    split = CpuSplit(available=(0, 1), target=(0,), tool=(1,))
    row = RunRow(tool="wrk", tool_version="4", runtime="host", scenario="s", vus=20, rtt_target_ms=0.1, duration_s=10,
                 status="ok", cpu_avg_pct=26.0, target_cpu_pct=95.0, cpus_target="0", cpus_tool="1")
    note = contention_note(row, {"tool": 99.0, "target": 97.0}, {"tool": 3.0, "target": 2.0}, split)
    assert note == "CPUs contended: the tool's CPUs 1 were 99% busy: 26% the tool, 3% interrupts, 70% other processes"
    assert side(False, False, True, 26, 30, 2, note) == "other processes"
    # Busy with the run's own interrupts (packet work), not with other processes: no contention.
    assert contention_note(row, {"tool": 99.0, "target": 97.0}, {"tool": 70.0, "target": 2.0}, split) == ""
    shared = CpuSplit(available=(0, 1))
    row.cpus_target = row.cpus_tool = ""
    row.cpu_avg_pct, row.target_cpu_pct = 54.0, 72.0
    assert contention_note(row, {"tool": 99.0, "target": 99.0}, {"tool": 30.0, "target": 30.0}, shared) == ""
    assert "were 99% busy: 63% the tool and target, 5% interrupts, 31% other" in \
        contention_note(row, {"tool": 99.0, "target": 99.0}, {"tool": 5.0, "target": 5.0}, shared)


def test_top_reports_every_cpus_busy_share():
    from harness.row.usage import busy_pct
    with TopSampler(lambda: set()) as sampler:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(2.2)"])
    cpus = {f.cpu for f in sampler.cpu_busy}
    assert cpus == set(os.sched_getaffinity(0)) | cpus and len(cpus) == os.cpu_count()
    assert 0 <= busy_pct(sampler.cpu_busy, tuple(cpus), None) <= 100


def test_cpu_summary_fields_that_touch_are_parsed():
    from harness.sampling import _CPU_IDLE
    line = ("%Cpu0  :  0.0 us,  0.0 sy,  0.0 ni,100.0 id,  0.0 wa,  0.0 hi,  0.0 si,  0.0 st   "
            "%Cpu1  : 72.0 us, 22.9 sy,  0.0 ni,  5.0 id,  0.0 wa,  0.1 hi,  5.1 si,  0.0 st")
    assert [(cpu, idle) for cpu, idle, _, _ in _CPU_IDLE.findall(line)] == [("0", "100.0"), ("1", "5.0")]
