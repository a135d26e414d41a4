"""The overhead benchmark's arithmetic and its by-hand side, without root or load (harness/suite/overhead_check.py;
its run end to end: tests/test_overhead_e2e.py)."""
import json
import math
import re
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from harness import REPO_ROOT
from harness.cpus import CpuSplit
from harness.sampling import SAMPLER_NICE, SAMPLER_POLICY, top_command
from harness.store.figures import Metrics
from harness.suite import carry_over, overhead_check as oc
from harness.tools.output import RunSpec, ToolOutput

# issue 53's pairs measured by hand on this machine (harness/by-hand, wrk, 10 s)
HOST = [0.937, 0.971, 0.969, 0.957, 0.725]
DOCKER = [1.009, 0.994, 0.958, 1.007, 0.962]


def pairs_of(ratios: list[float]) -> list[oc.Pair]:
    return [oc.Pair(i, oc.HARNESS if i % 2 else oc.BY_HAND, r * 100_000, 100_000.0)
            for i, r in enumerate(ratios, start=1)]


def runs_in_order(tools: list[str], pairs: int, monkeypatch) -> list[tuple[str, str]]:
    """(tool, side) of every run a check of ``pairs`` pairs per tool makes, in order, its runs replaced by a stub."""
    runs: list[tuple[str, str]] = []

    def measured_pair(runtime, adapter, scenario, split, index, root, lock, previous, top):
        order = oc.pair_order(previous)
        runs.extend((adapter.name, side) for side in order)
        return oc.Pair(index, order[0], 100_000.0, 100_000.0, after=previous), oc.HandRun([adapter.name], 1.0, None)
    monkeypatch.setattr(oc, "one_pair", measured_pair)
    monkeypatch.setattr(oc, "_harness_command", lambda run_dir: [])
    measured: list[oc.Measured] = []
    oc.measure_runtime("host", oc.registry.select(",".join(tools)), None, oc.Goal(pairs), Path("."), None, measured,
                       lambda: None)
    assert [len(m.pairs) for m in measured] == [pairs] * len(tools)
    return runs


@pytest.mark.parametrize("tools", [["wrk"], ["wrk", "oha"], ["wrk", "oha", "k6"], ["wrk", "oha", "k6", "hey"]])
def test_each_pair_follows_its_own_first_side_and_each_tool_starts_on_either_side_in_turn(tools, monkeypatch):
    # A run is affected by the run before it (1.7% faster after a harness run, CHANGELOG 2026-11-29). With each pair's
    # first run after a run of its own side and its second after its first, both sides of every pair follow the
    # same side, so that effect cancels in every ratio. Before, the second of two tools ran each side after the
    # other side only: its ratio carried the whole effect.
    runs = runs_in_order(tools, 8, monkeypatch)
    pairs = [runs[i:i + 2] for i in range(0, len(runs), 2)]
    for before, pair in zip([None, *runs[1::2]], pairs):
        assert before is None or before[1] == pair[0][1]               # the first after a run of its own side
        assert {side for _, side in pair} == {oc.HARNESS, oc.BY_HAND}
    for tool in tools:
        firsts = [pair[0][1] for pair in pairs if pair[0][0] == tool]
        assert firsts == [firsts[0], ({oc.HARNESS, oc.BY_HAND} - {firsts[0]}).pop()] * 4   # alternating


def test_the_estimate_is_the_geometric_mean_so_a_ratio_and_its_inverse_cancel():
    assert oc.geometric_mean([0.8, 1.25]) == pytest.approx(1.0)
    assert oc.geometric_mean(HOST) == pytest.approx(0.90637, abs=1e-5)   # exp(mean(log r)); the median is 0.957


def test_the_interval_is_a_seeded_bootstrap_of_the_geometric_mean():
    low, high = oc.ratio_interval(HOST)
    assert 0.725 <= low < oc.geometric_mean(HOST) < high <= 0.971      # inside the ratios' range, around the mean
    assert oc.ratio_interval(HOST) == (low, high)                        # seeded: the same ratios, the same interval
    # every draw's mean lies between the lowest and the highest ratio; a one-sided spread gives a one-sided shift
    assert oc.ratio_interval([1.0] * 10 + [0.5]) [0] < 1.0 == oc.ratio_interval([1.0] * 10 + [0.5])[1]


def test_more_pairs_narrow_the_interval_as_one_over_their_root():
    # the same spread (+-10%, alternating) over 16 and 64 pairs: the half-width halves with 4 times the pairs
    spread = lambda n: [1.1 if i % 2 else 1 / 1.1 for i in range(n)]   # noqa: E731
    narrow, wide = oc.ratio_interval(spread(64)), oc.ratio_interval(spread(16))
    assert oc.half_width(1.0, wide) / oc.half_width(1.0, narrow) == pytest.approx(2.0, rel=0.15)
    assert oc.half_width(1.0, narrow) == pytest.approx(1.96 * math.log(1.1) / 8, rel=0.15)   # z * sd / sqrt(n)


def test_identical_ratios_have_no_width_and_two_pairs_no_interval():
    assert oc.ratio_interval([0.99] * 6) == pytest.approx((0.99, 0.99))
    assert oc.ratio_interval([0.99, 1.01]) is None


def test_the_summary_line():
    assert oc.Summary.of("host", "wrk", pairs_of(HOST)).line() == \
        "host wrk: harness/by-hand 0.906 [0.809, 0.967] (+-10.7%) over 5 pairs"
    assert oc.Summary.of("docker", "oha", pairs_of(DOCKER)).line() == \
        "docker oha: harness/by-hand 0.986 [0.967, 1.005] (+-2.0%) over 5 pairs"


def test_a_ratio_that_moved_during_the_check_is_said_with_its_halves():
    steady = [1.0 + (0.01 if i % 2 else -0.01) for i in range(2 * oc.MIN_PAIRS_TO_STOP)]
    moved = [r * (1.0 if i < oc.MIN_PAIRS_TO_STOP else 0.95) for i, r in enumerate(steady)]
    summary = oc.Summary.of("host", "wrk", pairs_of(moved))
    first, second = summary.halves
    assert (first.pairs, second.pairs) == (oc.MIN_PAIRS_TO_STOP, oc.MIN_PAIRS_TO_STOP)
    assert (first.mean, second.mean) == (pytest.approx(1.0, abs=1e-3), pytest.approx(0.95, abs=1e-3))
    assert summary.drifted
    assert summary.line().endswith(f"; drifted: first half {first.text()}, second half {second.text()}")
    assert not oc.Summary.of("host", "wrk", pairs_of(steady)).drifted
    assert "drifted" not in oc.Summary.of("host", "wrk", pairs_of(steady)).line()
    # the same shift in fewer pairs than two halves of MIN_PAIRS_TO_STOP is not judged
    few = oc.Summary.of("host", "wrk", pairs_of(moved[1:-1]))
    assert few.halves is None and not few.drifted


def test_a_failed_side_leaves_its_pair_out_and_is_counted():
    pairs = [*pairs_of([0.98, 0.99, 1.0]), oc.Pair(4, oc.BY_HAND, None, 100_000.0, errors=["harness: failed: x"])]
    assert pairs[3].ratio is None
    summary = oc.Summary.of("host", "wrk", pairs)
    assert (summary.mean, summary.failed) == (pytest.approx(0.98997, abs=1e-5), 1)
    assert summary.line().endswith("over 3 pairs (1 failed)")
    assert oc.Summary.of("host", "wrk", pairs_of([0.98])).line() == \
        "host wrk: harness/by-hand 0.980 over 1 pair (no interval below 3)"
    assert oc.Summary.of("host", "wrk", pairs[3:]).line() == \
        "host wrk: harness/by-hand not measured: every pair failed (1 failed)"


def measured_with(ratios: list[float]) -> oc.Measured:
    return oc.Measured("host", "wrk", pairs_of(ratios))


def test_without_a_pair_count_pairs_go_on_until_the_interval_is_within_the_precision():
    goal = oc.Goal(pairs=None, precision=0.02, max_pairs=400)
    tight = [1.0 + (0.01 if i % 2 else -0.01) for i in range(oc.MIN_PAIRS_TO_STOP)]
    assert goal.reached(measured_with(tight))                        # +-1% spread, 20 pairs: within +-2%
    assert not goal.reached(measured_with(tight[:-1]))               # ... but not before MIN_PAIRS_TO_STOP
    loose = [1.0 + (0.2 if i % 2 else -0.2) for i in range(100)]
    assert not goal.reached(measured_with(loose))                    # +-20% over 100 pairs: about +-4%
    assert oc.Goal(None, 0.02, max_pairs=100).reached(measured_with(loose))   # the cap ends it
    failing = oc.Measured("host", "wrk", [oc.Pair(i, oc.HARNESS, None, 1.0, errors=["x"]) for i in range(1, 4)])
    assert goal.reached(failing) and not goal.reached(oc.Measured("host", "wrk", failing.pairs[:2]))
    assert oc.Goal(pairs=3).reached(measured_with([0.5, 2.0, 1.0]))  # --pairs: that many, however wide
    assert not oc.Goal(pairs=4).reached(measured_with([0.5, 2.0, 1.0]))
    assert oc.Goal(None).describe() == f"pairs until +-2% (at least {oc.MIN_PAIRS_TO_STOP}, at most {oc.MAX_PAIRS})"
    assert oc.Goal(1).describe() == "1 pair"


def test_the_pairs_a_precision_takes_are_what_the_checks_own_interval_needs():
    """The projection said while a check runs ("+-0.5% takes ~4,000 pairs at this spread") is checked against the
    check's own bootstrap: that many pairs at that spread give an interval of about that precision."""
    rng = np.random.default_rng(53)
    for sd, precision in ((0.05, 0.02), (0.16, 0.02), (0.05, 0.005)):
        needed = oc.pairs_needed(list(np.exp(rng.normal(0, sd, 400))), precision)   # the spread read from 400
        draws = [list(np.exp(rng.normal(0, sd, needed))) for _ in range(5)]
        widths = [oc.half_width(oc.geometric_mean(d), oc.ratio_interval(d)) for d in draws]
        assert np.median(widths) == pytest.approx(precision, rel=0.3), (sd, precision, needed, widths)
    assert oc.pairs_needed([1.1, 0.9] * 4, 0.02) is None                 # below MIN_PAIRS_TO_PROJECT: no figure
    assert oc.pairs_needed([1.0] * 12, 0.02) == oc.MIN_PAIRS_TO_STOP     # no spread: the least a check runs
    loose = [1.0 + (0.2 if i % 2 else -0.2) for i in range(20)]
    assert oc.projection(loose, 0.02, 17.0) == ("+-2% takes ~424 pairs at this spread (a pair's log ratio: sd 0.208), "
                                                "~1.9 h more at 17 s a pair")
    assert oc.projection(loose, 0.05, 17.0).endswith("~70 pairs at this spread (a pair's log ratio: sd 0.208), ~14 min more at 17 s a pair")
    assert oc.projection(loose, 0.02, None).endswith("(a pair's log ratio: sd 0.208)")


WRK = ["wrk", "-t1", "-c20", "-d10s", "--timeout", "10s", "-s", "/r/tools/wrk/report.lua", "http://198.18.0.6:80/style.css"]


def test_wrk_by_hand_without_the_harness_script_is_the_command_a_user_types():
    assert oc.plain_wrk(WRK) == ["wrk", "-t1", "-c20", "-d10s", "--timeout", "10s", "http://198.18.0.6:80/style.css"]
    assert oc.plain_wrk(oc.plain_wrk(WRK)) == oc.plain_wrk(WRK)


def test_wrks_own_summary_gives_its_rate():
    assert oc.wrk_requests_per_s("  Latency ...\nRequests/sec: 139312.45\nTransfer/sec: 50MB\n") == 139312.45
    with pytest.raises(ValueError):
        oc.wrk_requests_per_s("unable to connect to 198.18.0.6:80 Connection refused\n")


def test_candidates_off_are_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(oc.CANDIDATES_ENV, raising=False)
    assert oc.candidates_off() == set()
    monkeypatch.setenv(oc.CANDIDATES_ENV, "top, wrk-script,")
    assert oc.candidates_off() == {"top", "wrk-script"}


def test_an_unknown_candidate_is_refused_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(oc.CANDIDATES_ENV, "image-files")      # format 1's; the mount is the default now
    assert oc.main(["--results-root", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "error: LTH_OVERHEAD_OFF: no such candidate image-files (known: wrk-script, mount)\n"
    assert list(tmp_path.iterdir()) == []


def test_the_by_hand_commands_are_kept_as_a_script(tmp_path):
    commands = oc.Commands()
    commands.run(["true"])
    commands.note(["nginx", "-p", "/tmp/lth-target-hand-x/"], background="nginx")
    with pytest.raises(oc.HarnessError, match="`false` failed"):
        commands.run(["false"])
    assert commands.run(["/nonexistent/ip"], check=False).returncode == 1
    commands.write(tmp_path / "commands.sh")
    assert (tmp_path / "commands.sh").read_text().splitlines()[2:] == \
        ["true", "nginx -p /tmp/lth-target-hand-x/ & nginx=$!", "false", "/nonexistent/ip"]


def test_the_by_hand_addresses_are_the_projects_own_and_apart_from_the_harnesss():
    from ipaddress import ip_address, ip_network
    from harness.runtimes import docker, host
    for address in (oc.HAND_HOST_IP, oc.HAND_TARGET_IP, oc.HAND_CONTAINER_IP):
        assert ip_address(address) in oc.BENCHMARKING
    hand_veth = ip_network(f"{oc.HAND_TARGET_IP}/{oc.HAND_PREFIX_LEN}", strict=False)
    assert not hand_veth.overlaps(ip_network(f"{host.TARGET_IP}/{host.PREFIX_LEN}", strict=False))
    assert not ip_network(oc.HAND_SUBNET).overlaps(ip_network("198.18.1.0/24"))   # docker/compose.yaml's
    assert ip_address(docker.TARGET_IP) not in ip_network(oc.HAND_SUBNET)
    assert ip_address(oc.HAND_CONTAINER_IP) in ip_network(oc.HAND_SUBNET)
    # named so that `make clean-state` (and the e2e tests' leftovers check) find what a killed check leaves
    assert all(name.startswith("lth-") for name in (oc.HAND_NETNS, oc.HAND_VETH_HOST, oc.HAND_VETH_TARGET,
                                                    oc.HAND_NETWORK, oc.HAND_TARGET, oc.HAND_TOOL, oc.HAND_FOLDER))
    assert oc.HAND_FOLDER.startswith("lth-target-") and len(oc.HAND_VETH_TARGET) <= 15


def test_the_harnesss_nginx_processes_are_read_from_its_sampling(tmp_path):
    (tmp_path / "execution.json").write_text(json.dumps({"affinity": {"nginx": {
        "1": {"name": "docker-init"}, "2": {"name": "nginx"}, "3": {"name": "nginx"}, "4": {"name": "nginx"}}}}))
    assert oc.harness_nginx_processes(tmp_path) == 3
    (tmp_path / "execution.json").write_text(json.dumps({"affinity": {"nginx": {}}}))
    assert oc.harness_nginx_processes(tmp_path) is None
    assert oc.harness_nginx_processes(tmp_path / "none") is None


def overhead_json(folder: Path, runtime: str, ratios: list[float], duration_s: int = 10, **extra) -> Path:
    folder.mkdir()
    pairs = [{**vars(p), "ratio": p.ratio} for p in pairs_of(ratios)]
    (folder / "overhead.json").write_text(json.dumps({"scenario": oc.SCENARIO, "duration_s": duration_s, **extra,
                                                      "results": [{"runtime": runtime, "tool": "wrk", "pairs": pairs}]}))
    return folder


@pytest.mark.parametrize("runtime, written, read, order", [
    ("docker", {"candidates_off": ["image-files"]}, (), "by index"),  # format 1, both sides mounted: today's default
    ("docker", {}, ("mount",), "by index"),                           # format 1's default: the image's own layer
    ("host", {"candidates_off": ["wrk-script"]}, ("wrk-script",), "by index"),  # no Docker target: no upgrade
    ("docker", {"format": 2, "candidates_off": ["mount"]}, ("mount",), "by index"),
    ("docker", {"format": 2}, (), "by index"),
    ("host", {"format": 3}, (), "after its own first side"),
    ("host", {"format": 3, "by_hand_top": True}, (), "after its own first side"),
])
def test_a_checks_settings_are_read_in_todays_terms_whatever_its_format(tmp_path, runtime, written, read, order):
    folder = overhead_json(tmp_path / "a", runtime, [1.0], duration_s=3, **written)
    assert oc.load(folder)[0] == (oc.SCENARIO, 3, read, order, written.get("by_hand_top", False))


def test_a_resumed_check_adds_pairs_after_its_own_until_the_goal(tmp_path, monkeypatch, capsys):
    folder = overhead_json(tmp_path / "a", "host", [0.98, 1.02, 0.99], duration_s=3, format=oc.FORMAT,
                           commands=[["lth", "overhead"]])
    (folder / "by-hand" / "host-wrk-4").mkdir(parents=True)        # a pair interrupted before it was recorded
    ran = []

    def measured_pair(runtime, adapter, scenario, split, index, root, lock, previous, top):
        ran.append((runtime, adapter.name, index, scenario.duration_s, top))
        oc.hand_folder(root, runtime, adapter.name, index).mkdir()
        return oc.Pair(index, oc.pair_order(previous)[0], 100_000.0, 100_000.0), oc.HandRun(["wrk"], 1.0, None)
    monkeypatch.setattr(oc, "one_pair", measured_pair)
    monkeypatch.delenv(oc.CANDIDATES_ENV, raising=False)
    args = oc.parse_args(["--resume", str(folder), "--runtime", "host", "--tools", "wrk", "--pairs", "5"])
    args.duration, measured, commands = oc.resumed(args.resume, args.duration)
    (wrk,) = oc.registry.select("wrk")
    scenario = oc.select(f"{oc.REPO_ROOT}/{oc.SCENARIO}", args.duration)[0]
    assert oc.measure(args, [wrk], scenario, None, measured, [*commands, ["lth", "overhead", "--resume"]]) == 0
    assert ran == [("host", "wrk", 4, 3, False), ("host", "wrk", 5, 3, False)]   # after its 3 pairs, at its 3 s, to 5
    data = json.loads((folder / "overhead.json").read_text())
    (result,) = data["results"]
    assert [p["index"] for p in result["pairs"]] == [1, 2, 3, 4, 5] and result["line"].endswith("over 5 pairs")
    assert data["commands"] == [["lth", "overhead"], ["lth", "overhead", "--resume"]] and data["format"] == oc.FORMAT
    assert "resuming" in capsys.readouterr().out
    (aside,) = (folder / "by-hand").glob("host-wrk-4-interrupted-*")  # kept, not overwritten
    assert (folder / "by-hand" / "host-wrk-4").is_dir()


def test_a_check_short_of_its_precision_says_how_many_pairs_it_takes(tmp_path, monkeypatch, capsys):
    """While it runs and at its end, from MIN_PAIRS_TO_PROJECT pairs on: how many pairs its precision takes."""
    def measured_pair(runtime, adapter, scenario, split, index, root, lock, previous, top):
        return oc.Pair(index, oc.pair_order(previous)[0], 110_000.0 if index % 2 else 90_000.0, 100_000.0), \
            oc.HandRun(["wrk"], 1.0, None)
    monkeypatch.setattr(oc, "one_pair", measured_pair)
    monkeypatch.delenv(oc.CANDIDATES_ENV, raising=False)
    args = oc.parse_args(["--runtime", "host", "--tools", "wrk", "--precision", "0.005", "--max-pairs", "12",
                          "--results-root", str(tmp_path)])
    (wrk,) = oc.registry.select("wrk")
    scenario = oc.select(f"{oc.REPO_ROOT}/{oc.SCENARIO}", args.duration)[0]
    assert oc.measure(args, [wrk], scenario, None, [], [["lth", "overhead"]]) == 0
    out = capsys.readouterr().out.splitlines()
    so_far = [line for line in out if line.startswith("   so far:")]
    assert len(so_far) == 10 and all("takes" not in line for line in so_far[:7])   # pairs 3-9: too few to say
    assert all(re.search(r"; \+-0.5% takes ~[\d,]+ pairs at this spread \(a pair's log ratio: sd 0.10\d\), "
                         r"~\d+ (min|s) more at \d+ s a pair$", line) for line in so_far[7:]), so_far[7:]
    assert re.search(r"over 12 pairs; \+-0.5% takes ~1,\d{3} pairs at this spread", out[-2]), out[-2]
    (result,) = json.loads(next(tmp_path.glob("*-overhead/overhead.json")).read_text())["results"]
    assert result["pairs_needed"]["precision"] == 0.005 and 1000 < result["pairs_needed"]["pairs"] < 2000


def test_a_check_that_differs_is_not_resumed(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(oc.CANDIDATES_ENV, raising=False)
    folder = overhead_json(tmp_path / "a", "docker", [1.0], duration_s=3)   # format 1: by hand from the image
    assert oc.main(["--resume", str(folder), "--results-root", str(tmp_path)]) == 2
    assert "--resume: " in capsys.readouterr().err
    folder = overhead_json(tmp_path / "b", "host", [1.0], duration_s=3, format=oc.FORMAT)
    assert oc.main(["--resume", str(folder), "--duration", "10"]) == 2
    assert "this check would be" in capsys.readouterr().err
    folder = overhead_json(tmp_path / "c", "host", [1.0], duration_s=3, format=2)   # its pairs ordered by index
    assert oc.main(["--resume", str(folder)]) == 2
    assert "'by index', False), this check would be" in capsys.readouterr().err
    folder = overhead_json(tmp_path / "d", "host", [1.0], duration_s=3, format=oc.FORMAT, by_hand_top=True)
    assert oc.main(["--resume", str(folder)]) == 2                 # measured with top by hand: resumed only so
    assert "top by hand) (" in capsys.readouterr().err
    assert oc.main(["--resume", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("error: --resume: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c", "d"]


def test_pairs_of_several_checks_are_pooled_per_runtime_and_tool(tmp_path, capsys):
    first = overhead_json(tmp_path / "a", "host", [0.95, 0.96, 0.97, 0.98, 0.99])
    second = overhead_json(tmp_path / "b", "host", [1.0, 1.01, 1.02, 1.03, 1.04, 1.05])
    (pooled,) = oc.pooled([first, second])
    assert (pooled.mean, len(pooled.ratios)) == (pytest.approx(0.99950, abs=1e-5), 11)
    assert oc.main(["--pool", str(first), str(second)]) == 0
    assert pooled.line() in capsys.readouterr().out
    assert pooled.line().startswith("host wrk: harness/by-hand 0.999 [") and pooled.line().endswith("over 11 pairs")
    other = overhead_json(tmp_path / "c", "host", [1.0, 1.0, 1.0], duration_s=2)
    assert oc.main(["--pool", str(first), str(other)]) == 2
    assert "differ in scenario, duration" in capsys.readouterr().err
    with_top = overhead_json(tmp_path / "d", "host", [1.0, 1.0, 1.0], by_hand_top=True)
    assert oc.main(["--pool", str(first), str(with_top)]) == 2
    assert "or top by hand" in capsys.readouterr().err


def test_top_beside_the_tool_by_hand_is_the_harnesss_own_top_kept_and_ended(tmp_path):
    """--by-hand-top: the harness's top command on the tool's CPUs at its nice and batch policy, as typed."""
    split, commands = oc.choose_split(), oc.Commands()
    with oc.top_beside(split, commands, tmp_path) as top:
        deadline = time.monotonic() + 10
        while "top - " not in (tmp_path / "top.txt").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        policy, nice = os.sched_getscheduler(top.pid), os.getpriority(os.PRIO_PROCESS, top.pid)
        cpus = os.sched_getaffinity(top.pid)
    assert top.poll() is not None                              # ended with the block
    assert (tmp_path / "top.txt").read_text().startswith("top - ")
    assert policy == SAMPLER_POLICY and nice == SAMPLER_NICE and cpus == set(split.tool or cpus)
    started, ended = commands.lines
    assert started.startswith(shlex.join(["chrt", "--batch", "0", "nice", "-n", str(SAMPLER_NICE), *split.taskset("tool"),
                                          "env", "LC_ALL=C", "TERM=dumb", *top_command()]))
    assert started.endswith(f"> {tmp_path / 'top.txt'} & top=$!") and ended == 'kill "$top"'   # by name: $! moves


class PrintsItsRate:
    """A tool whose command prints a rate and whose parser reads it back: the by-hand side without load."""

    def command(self, spec: RunSpec) -> list[str]:
        return [sys.executable, "-c", f"print({spec.vus} * 1000)"]

    def parse(self, output: ToolOutput) -> Metrics:
        return Metrics(rps=float(output.stdout))


def test_by_hand_runs_the_adapters_command_and_reads_it_with_the_adapters_parser(tmp_path):
    spec = RunSpec(url="http://198.18.0.2/style.css", vus=20, duration_s=1, out_dir=tmp_path / "run", cpus=1)
    hand = oc.run_by_hand(["env"], PrintsItsRate(), spec)
    assert hand.rps == 20_000 and hand.error is None
    assert hand.argv[:2] == ["env", sys.executable]
    assert (spec.out_dir / "stdout.txt").read_text() == "20000\n"


def test_by_hand_says_why_when_the_parser_finds_nothing(tmp_path):
    spec = RunSpec(url="http://198.18.0.2/style.css", vus=20, duration_s=1, out_dir=tmp_path / "run", cpus=1)
    hand = oc.run_by_hand(["false"], PrintsItsRate(), spec)
    assert hand.rps is None and hand.error.startswith("by hand: exit 1, ValueError")


def test_by_hand_says_so_when_the_command_is_missing(tmp_path):
    spec = RunSpec(url="http://198.18.0.2/style.css", vus=20, duration_s=1, out_dir=tmp_path / "run", cpus=1)
    hand = oc.run_by_hand(["/nonexistent/taskset"], PrintsItsRate(), spec)
    assert hand.rps is None and "No such file" in hand.error


def test_an_unknown_tool_is_refused_before_any_folder_is_made(tmp_path, capsys):
    assert oc.main(["--tools", "no-such-tool", "--results-root", str(tmp_path)]) == 2
    assert "error:" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "cap"), [([], oc.MAX_PAIRS), (["--precision", "0.01"], 4 * oc.MAX_PAIRS),
                                           (["--precision", "0.04"], oc.MAX_PAIRS // 4),
                                           (["--precision", "0.5"], oc.MIN_PAIRS_TO_STOP),
                                           (["--precision", "0.01", "--max-pairs", "50"], 50)])
def test_the_default_cap_grows_with_the_precision_asked(argv, cap):
    """+-1% takes ~4 times the pairs of +-2%: the cap of +-2% (400) would stop it short (issue 53)."""
    assert oc.parse_args(argv).max_pairs == cap


def test_the_docs_state_the_checks_own_numbers():
    text = " ".join((oc.REPO_ROOT / "docs" / "overhead.md").read_text().split())
    assert f"after at least {oc.MIN_PAIRS_TO_STOP} pairs" in text
    assert f"({oc.MAX_PAIRS} at +-{100 * oc.PRECISION:g}%" in text
    assert f"{oc.max_pairs_for(0.01)} at +-1%" in text
    assert f"From {2 * oc.MIN_PAIRS_TO_STOP} pairs on" in text
    assert f"({oc.RESAMPLES} resamples" in text
    assert f"with a level per {carry_over.BLOCK_RUNS} runs for the machine's drift" in text
    block = carry_over.order(4, ["wrk"], (oc.HARNESS, oc.BY_HAND), seed=11)
    assert "blocks of four (each side twice" in text
    assert sorted(side for _, side in block) == [oc.BY_HAND] * 2 + [oc.HARNESS] * 2


@pytest.mark.parametrize("argv", [["--pairs", "0"], ["--duration", "0"], ["--runtime", "vm"], ["--max-pairs", "0"],
                                  ["--precision", "0"], ["--precision", "2"]])
def test_bad_arguments_are_refused(argv):
    with pytest.raises(SystemExit):
        oc.parse_args(argv)


def test_a_harness_run_that_cannot_start_fails_its_pair_not_the_check(tmp_path, monkeypatch):
    def refused(plan, lock=None):
        raise oc.HarnessError("the host runtime creates a network namespace and needs root")
    monkeypatch.setattr(oc, "run_suite", refused)
    (wrk,) = oc.registry.select("wrk")
    rps, folder, error = oc.harness_side("host", wrk, None, None, tmp_path, lock=None)
    assert (rps, folder) == (None, tmp_path / "harness") and error.endswith("needs root")


def synthetic_runs(harness: float, after: float, runs: int = 600, seed: int = 3) -> list:
    """Runs in the carry-over order with these effects on the rate, a drift of -10% over them and a spread of 5%."""
    noise = np.random.default_rng(seed)
    found, before = [], None
    for index, (tool, side) in enumerate(carry_over.order(runs, ["oha"], (oc.HARNESS, oc.BY_HAND))):
        rate = 80_000 * (1 - 0.1 * index / runs) * math.exp(noise.normal(0, 0.05))
        rate *= (harness if side == oc.HARNESS else 1) * (after if before == oc.HARNESS else 1)
        found.append(carry_over.Run(index, "host", tool, side, before, rate))
        before = side
    return found


@pytest.mark.parametrize("harness, after", [(1.0, 1.0), (0.97, 1.0), (1.0, 1.02), (0.99, 0.97)])
def test_the_carry_over_fit_finds_the_harness_and_the_run_before_apart(harness, after):
    through, following = carry_over.effects(synthetic_runs(harness, after), oc.HARNESS)
    for effect, true in ((through, harness), (following, after)):
        assert effect.low < true < effect.high and effect.high - effect.low < 0.02   # +-0.5% at 600 runs of 5%
        assert effect.factor == pytest.approx(true, abs=0.006)
    assert carry_over.line("host", "oha", synthetic_runs(harness, after), oc.HARNESS).startswith(
        f"host oha: through the harness {through.text()}, after a harness run {following.text()} over 600 runs")


def test_the_carry_over_fit_needs_each_side_after_each():
    runs = [carry_over.Run(i, "host", "oha", side, oc.HARNESS, 80_000.0 + i) for i, side in
            enumerate([oc.HARNESS, oc.BY_HAND] * 10)]        # every run after a harness run: nothing to compare
    assert carry_over.effects(runs, oc.HARNESS) is None
    assert carry_over.line("host", "oha", runs, oc.HARNESS) == \
        "host oha: too few runs of each kind for a fit (20 measured)"
    first = carry_over.order(8, ["wrk"], (oc.HARNESS, oc.BY_HAND))
    assert first == carry_over.order(8, ["wrk"], (oc.HARNESS, oc.BY_HAND))      # seeded
    assert sorted(side for _, side in first) == [oc.BY_HAND] * 4 + [oc.HARNESS] * 4   # each side twice per block


@pytest.mark.parametrize("argv", [["--carry-over", "0"], ["--carry-over", "5", "--pairs", "3"],
                                  ["--carry-over", "5", "--resume", "results"], ["--carry-over", "5", "--by-hand-top"]])
def test_carry_over_refuses_what_it_cannot_do(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        oc.parse_args(argv)
    assert exit_.value.code == 2 and "--carry-over takes" in capsys.readouterr().err


def test_a_containers_processes_are_read_from_its_cgroup_once_found_and_none_once_it_is_gone(tmp_path, monkeypatch):
    """The Docker observer lists the container's processes at every frame, from the tool's CPUs (issue 53): after
    the first listing (the scan of every process, which found the folder) it reads the cgroup's folder, sub-folders
    included, and never scans again; a folder gone is a container gone. The live container: test_overhead_e2e."""
    from harness.runtimes import docker
    folder = tmp_path / "docker" / "c0ffee"
    (folder / "init.scope").mkdir(parents=True)
    (folder / "cgroup.procs").write_text("101\n102\n")
    (folder / "init.scope" / "cgroup.procs").write_text("103\n")
    scans = []
    monkeypatch.setattr(docker, "scanned_pids", lambda cid: scans.append(cid) or {101})
    monkeypatch.setattr(docker, "cgroup_folder", lambda pid, cid: folder if (pid, cid) == (101, "c0ffee") else None)
    monkeypatch.setattr(docker, "_cgroup_folders", {})
    assert docker.container_pids("c0ffee") == {101} and scans == ["c0ffee"]     # the first listing scans
    (folder / "cgroup.procs").write_text("101\n102\n104\n")                          # a docker exec'd process
    assert docker.container_pids("c0ffee") == {101, 102, 103, 104} and scans == ["c0ffee"]
    (folder / "init.scope" / "cgroup.procs").unlink()
    (folder / "init.scope").rmdir()
    (folder / "cgroup.procs").unlink()
    folder.rmdir()
    assert docker.container_pids("c0ffee") == set() and scans == ["c0ffee"]
    # a layout where no folder lists the pid keeps scanning
    assert docker.container_pids("other") == {101} and docker.container_pids("other") == {101}
    assert scans == ["c0ffee", "other", "other"]


# The check, its pairs replaced by one that signals the check itself and then waits; its `finally` stands for the
# by-hand side's (Nginx, the network and the containers removed).
INTERRUPTED_CHECK = """
import os, signal, sys, time
from pathlib import Path
from harness.suite import overhead_check as oc
def measure(*_):
    try:
        os.kill(os.getpid(), int(sys.argv[1]))
        time.sleep(3)
        return 0
    finally:
        Path(sys.argv[2]).write_text("cleaned up")
oc.measure = measure
sys.exit(oc.main(["--results-root", sys.argv[3]]))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_check_stops_on_sigterm_or_sigint_inherited_ignored_and_cleans_up(tmp_path, signum):
    """Started in the background by a shell without job control (SIGINT ignored), then sent `kill` or `kill -INT`:
    the check ends with 130 and says so, after its cleanup. SIGTERM ended it at once during the by-hand side, which
    left the hand target's container and network behind, and SIGINT did nothing."""
    marker = tmp_path / "finally"
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_CHECK, str(int(signum)), str(marker), str(tmp_path)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LTH_LOCK_DIR": str(tmp_path)},
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.returncode == 130, done.stderr
    assert "interrupted:" in done.stderr
    assert marker.read_text() == "cleaned up"
