"""The netem path on a real kernel: runs inside the VM `make test-netem` boots (scripts/in-vm: Debian's
stock kernel, which has sch_netem, under QEMU's TCG), in the host runtime.

TCG runs every instruction through a translator, several times slower than the machine: the RTT-bound
scenarios still hold (20 VUs at 10 ms ask for 2,000 RPS), throughput figures do not. A tool that spends
its core there is "saturated" and its p50 is then not held to the RTT.

Each suite's results stay in LTH_VM_OUT (a folder the VM may write, results/netem-vm in `make test-netem`).
"""
import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from analysis.shapers import markdown, side_by_side
from conftest import REPO, leftovers
from harness.network.shaping import CALIBRATION_MAX_PROBES, netem_limit
from harness.row import rtt_ok
from harness.scenarios import rtt_tolerance_ms

pytestmark = pytest.mark.e2e
# The tools TCG leaves unsaturated: their figures show the shaper, not the tool. (k6 and JMeter spend their core
# under TCG, their p50 was never held to the RTT here; each tool's p50 through the shaper is test_tools_e2e's.)
# oha was a third until 2026-11-27: its p50 was not held (HELD_TOOLS), and its three runs and baseline cost ~100 s
# of TCG; it is still the tool killed with -9 in thousand_vus_then_faults.
TOOLS = "wrk,ab"
BESIDE_TOXIPROXY = TOOLS
# The shootout's vu20-rtt10 and vu100-rtt50 (2,000 rps asked), and 20 VUs at 50 ms (400 rps asked: a fifth of
# what the target's TCG core carries, where an unsaturated tool's p50 sits on the RTT). One suite, one file.
SCENARIOS_YAML = """scenarios:
  - {id: vu20-rtt10, vus: 20, rtt_ms: 10, duration_s: 5}
  - {id: vu100-rtt50, vus: 100, rtt_ms: 50, duration_s: 5}
  - {id: vu20-rtt50, vus: 20, rtt_ms: 50, duration_s: 5}
"""
SCENARIO_IDS = ("vu20-rtt10", "vu100-rtt50", "vu20-rtt50")
LIGHT = "vu20-rtt50"
DURATION = "5"
GRACE = "120"                    # a JVM starting under TCG takes 30 s and more
# p50 within [RTT - tolerance, RTT + HOLD_MS] where neither side is busy. TCG's own cost per request sits in it,
# most for oha (tokio's threads): 2026-11-26 (a slow day) 52.9 and 53.9 ms at 50 ms with 30-41% CPU on both
# sides; 2026-11-27 (slower: wrk 630 rps at 20 VUs/10 ms) 55.6 ms at 46% / 36%, wrk 51.4, ab 50.3. A queue
# adds tens of ms (56-60 at ~2,000 rps asked, docstring of light_rows), a missing delay takes the RTT away.
HOLD_MS = 10
# The tools held to that bound: oha's per-request cost under TCG (tokio's threads) grows with a slow host: 53.9,
# 55.6 and 64.0 ms on three runs at 40-46% CPU (2026-11-26/27) while wrk had 48.9-51.4 and ab 48.7-55.0. Its p50
# still carries netem's whole delay (test_every_p50_carries_netems_whole_delay); its p50 through a shaper on a real
# kernel is test_tools_e2e's.
HELD_TOOLS = ("wrk", "ab")
BUSY_CPU_PCT = 75                # under TCG a side (tool or target) this busy queues requests


def out_root(tmp_path_factory, name: str) -> Path:
    root = os.environ.get("LTH_VM_OUT")
    return Path(root) / name if root else tmp_path_factory.mktemp(name)


def harness_run(results: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "run", "--runtime", "host", "--grace", GRACE,
                           "--results-root", str(results), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def rows_of(results: Path) -> list[dict]:
    return list(csv.DictReader((results / "latest" / "runs.csv").open()))


def shaping_of(results: Path, row: dict) -> dict:
    return json.loads((results / "latest" / row["run_dir"] / "meta.json").read_text())["shaping"]


def scenarios_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("scenarios") / "netem-vm.yaml"
    path.write_text(SCENARIOS_YAML)
    return str(path)


@pytest.fixture(scope="module")
def netem_rows(tmp_path_factory) -> list[dict]:
    """The VM's shared run: every tool at every scenario through netem, one harness run (one 1-VU baseline
    per tool). The light scenario's rows are light_rows."""
    results = out_root(tmp_path_factory, "netem")
    result = harness_run(results, "--shaper", "netem", "--tools", TOOLS, "--scenarios", scenarios_file(tmp_path_factory),
                         "--duration", DURATION)
    print(result.stdout[-3000:])
    rows = rows_of(results)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    for row in rows:
        row["shaping"] = shaping_of(results, row)
    return rows


def test_every_tool_ran_every_scenario_through_netem(netem_rows):
    assert {(r["scenario"], r["tool"]) for r in netem_rows} == {(s, t) for s in SCENARIO_IDS for t in TOOLS.split(",")}
    assert [r for r in netem_rows if r["status"] != "ok" or r["shaper"] != "netem"] == []
    assert all(r["shaping"]["shaper"] == "netem" for r in netem_rows)


def test_the_measured_rtt_is_within_the_harness_tolerance(netem_rows):
    """Calibrated within tolerance, or, where the VM's own hop swung by more than the whole tolerance band
    between probes (CI's TCG VM on a busy host, 2026-11-28: ab at 10 ms, the path's excess over the delay
    went 6.6, 3.4, 3.3 ms in one calibration), the closest probe is the one kept and the row says rtt_ok
    False. A calibration that steers the wrong way fails either way; a quarter of the rows may miss."""
    missed = []
    for row in netem_rows:
        target, measured = float(row["rtt_target_ms"]), float(row["rtt_measured_ms"])
        within = rtt_ok(measured, target)
        assert row["rtt_ok"] == str(within)
        probes = row["shaping"]["probes"]
        assert abs(measured - min((p["probe_ms"] for p in probes), key=lambda ms: abs(ms - target))) < 0.001
        if within:
            continue
        missed.append((row["scenario"], row["tool"], measured, probes))
        excess = [p["probe_ms"] - p["delay_ms"] for p in probes]
        assert 2 <= len(probes) <= CALIBRATION_MAX_PROBES, missed[-1]
        assert max(excess) - min(excess) > 2 * rtt_tolerance_ms(target), missed[-1]
    assert len(missed) <= len(netem_rows) // 4, missed


@pytest.fixture(scope="module")
def light_rows(netem_rows) -> list[dict]:
    """wrk and ab at 20 VUs, 50 ms: 400 rps asked, a fifth of what the target's TCG core carries.
    At 50 VUs (1,000 rps) that core already queued: CI's VM on a busy host (2026-11-26) had oha at 49% CPU
    and Nginx at 48%, neither saturated, and a p50 of 59.2 ms at 50 ms; here the same day 52.2 ms. At the
    issue's scenarios (~2,000 rps asked) p50 was 49.5-50.7 ms on a quiet host and 56-60 ms on a busy one.
    Was a harness run of its own (netem-light); now the shared run's rows of that scenario."""
    rows = [r for r in netem_rows if r["scenario"] == LIGHT]
    assert rows, netem_rows
    return rows


def busy(row: dict) -> bool:
    """Under TCG a side this busy queues requests: the p50 then holds that queue, not only the RTT."""
    return row["tool_saturated"] == "True" or any(float(row[side] or 0) >= BUSY_CPU_PCT
                                                  for side in ("cpu_avg_pct", "target_cpu_pct"))


def test_an_unsaturated_tools_p50_sits_on_the_rtt(light_rows):
    held = []
    for row in light_rows:
        if busy(row) or row["tool"] not in HELD_TOOLS:
            continue
        # The probe is a Python process: under TCG its own cost puts it ~0.5 ms above a C tool's figure,
        # so below the RTT the harness's RTT tolerance applies.
        rtt, p50 = float(row["rtt_target_ms"]), float(row["lat_p50_ms"])
        assert rtt - max(0.1 * rtt, 0.5) <= p50 <= rtt + HOLD_MS, (row["scenario"], row["tool"], rtt, p50,
                                                                  row["cpu_avg_pct"], row["target_cpu_pct"])
        held.append(row["tool"])
    assert "wrk" in held, ("wrk at 400 rps should leave both sides idle enough", light_rows)


def test_every_p50_carries_netems_whole_delay(netem_rows):
    """At any load netem's delay is in every request: no p50 below the delay the run was shaped at. Against that
    delay, not the target RTT: under TCG the calibration sets netem to the RTT less the VM's own hop (4-5 ms at
    10 ms), and that hop moves between the calibration and the load (CI of f1ac43c: wrk at vu20-rtt10 had a p50 of
    8.94 ms, the hop ~1 ms shorter during the load than at its probe). The RTT itself is
    test_the_measured_rtt_is_within_the_harness_tolerance's."""
    for row in netem_rows:
        delay, p50 = float(row["shaping"]["delay_ms"]), float(row["lat_p50_ms"])
        assert delay > 0 and p50 >= delay, (row["scenario"], row["tool"], delay, p50, row["shaping"]["probes"])


def test_netem_delays_the_handshake(netem_rows):
    """A fresh connection pays netem's delay for its handshake (Toxiproxy answers it itself: < half the RTT,
    test_toxiproxy_answers_the_handshake_itself_netem_delays_it). Against the delay each probe ran at, not the
    target RTT: under a slow TCG the native hop is several ms (2026-11-26: a 10 ms profile calibrated to
    4.4-5.2 ms of netem, a connect of 6.1 ms at 4.4), and a connect crosses it without the server's work."""
    for row in netem_rows:
        target = float(row["rtt_target_ms"])
        for probe in row["shaping"]["probes"]:
            assert probe["connect_ms"] >= max(0.9 * probe["delay_ms"], 0.5 * target), (row["scenario"], row["tool"], probe)


# --- Toxiproxy as the limit: named "shaper" (harness/row/bottleneck.py), never "neither" --------------------

@pytest.fixture(scope="module")
def toxiproxy_wrk(tmp_path_factory) -> dict:
    """wrk at 100 VUs, 50 ms through Toxiproxy: in TCG it got 756 rps where netem gave 1,925 (docs/shaping.md).
    60 s: the probe under the load times its GETs 0.4 x the duration in; its two Python processes start at
    the launch (shaping.LOADED_PROBE_LEAD_S), and under this load took up to 14 s to get there (2026-11-26,
    before -S and the lazy ssl import), 28.5 and 32.5 s on a slower TCG (2026-11-27: its 10 GETs, ~0.8 s each
    there, ended at 32.3 s of 30 and 41.7 s of 40, and the probe was not used). Without the lead, a CI run's
    probe ended after wrk's 20 s."""
    results = out_root(tmp_path_factory, "toxiproxy-wrk")
    result = harness_run(results, "--shaper", "toxiproxy", "--tools", "wrk", "--scenarios",
                         "scenarios/shootout.yaml:vu100-rtt50", "--duration", "60")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    print(result.stdout[-1500:])
    (row,) = rows_of(results)
    row["meta"] = json.loads((results / "latest" / row["run_dir"] / "meta.json").read_text())
    return row


def test_a_run_toxiproxy_capped_says_shaper_where_netem_did_not_cap(toxiproxy_wrk, netem_rows):
    row = toxiproxy_wrk
    netem = next(r for r in netem_rows if (r["scenario"], r["tool"]) == ("vu100-rtt50", "wrk"))
    bound = 100 * 1000 / float(row["rtt_measured_ms"])
    # the cap exists: short of VUs / RTT, and well below what the same tool got through netem (how far below
    # depends on the machine: 756 against 1,925 rps under TCG on 2026-11-26, 1,285 against 1,797 on 2026-11-27's
    # faster one, where the rest held: limited_by shaper, 33.6 ms added, a ceiling of 1,194 rps)
    assert float(row["rps"]) < min(0.9 * bound, 0.8 * float(netem["rps"])), (row["rps"], netem["rps"], bound)
    assert row["limited_by"] == "shaper", (row["limited_by"], row["meta"].get("shaper_under_load"))
    assert float(row["shaper_added_ms"]) > 5 and float(row["rtt_loaded_ms"]) > 55 and float(row["shaper_cpu_pct"]) > 0
    assert "ceiling of" in row["notes"]
    assert netem["limited_by"] != "shaper" and netem["rtt_loaded_ms"] == netem["shaper_cpu_pct"] == ""


# --- the same with Toxiproxy, side by side: what the fallback changes -----------------------------------------

@pytest.fixture(scope="module")
def shapers_table(netem_rows, tmp_path_factory):
    netem, results = out_root(tmp_path_factory, "netem"), out_root(tmp_path_factory, "toxiproxy")
    result = harness_run(results, "--shaper", "toxiproxy", "--tools", BESIDE_TOXIPROXY, "--scenarios",
                         scenarios_file(tmp_path_factory), "--duration", DURATION)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    table = side_by_side(netem / "latest", results / "latest")
    (results.parent / "shapers.md").write_text(markdown(table) + "\n")
    print("\n" + markdown(table))
    return table


def figure(cell: str) -> tuple[float, float]:
    netem, toxiproxy = cell.split(" / ")
    return float(netem.replace(",", "")), float(toxiproxy.replace(",", ""))


@pytest.mark.shapers
def test_toxiproxy_ran_the_same_runs_beside_netem(shapers_table):
    assert set(shapers_table.index) == {(s, t) for s in SCENARIO_IDS for t in BESIDE_TOXIPROXY.split(",")}


@pytest.mark.shapers
def test_toxiproxy_answers_the_handshake_itself_netem_delays_it(shapers_table):
    for (scenario, tool), row in shapers_table.iterrows():
        rtt = float(scenario.split("rtt")[1])
        netem, toxiproxy = figure(row["handshake ms"])
        assert netem >= 0.8 * rtt and toxiproxy < 0.5 * rtt, (scenario, tool, row["handshake ms"])


# --- 1,000 VUs: the queue limit, on the wire ---------------------------------------------------------------------

def watch_qdiscs(stop: threading.Event, seen: list[str]) -> None:
    while not stop.is_set():
        for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n"):
            if ns.strip():
                name = ns.split()[0]
                shown = subprocess.run(["tc", "-n", name, "qdisc", "show"], capture_output=True, text=True).stdout
                seen += [f"{name}: {line}" for line in shown.splitlines() if "netem" in line]
        stop.wait(0.25)


def start(results: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", "run", "--runtime", "host", "--grace", GRACE,
                             "--results-root", str(results), *args],
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for_tool(name: str, timeout_s: float = 300) -> int:
    """The tool's load process: its command line names the target's URL (not the `--version` the harness
    asks every tool for at the suite's start)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split():
            try:
                if b"http://" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return int(pid)
            except OSError:
                pass                                  # ended between pgrep and the read
        time.sleep(0.2)
    raise AssertionError(f"{name} did not start within {timeout_s} s")


def netem_anywhere() -> list[str]:
    names = [ns.split()[0] for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                     text=True).stdout.splitlines() if ns.strip()]
    shown = [subprocess.run(["tc", *(["-n", n] if n else []), "qdisc", "show"], capture_output=True,
                            text=True).stdout for n in ["", *names]]
    return [line for text in shown for line in text.splitlines() if "netem" in line]


@pytest.fixture(scope="module")
def thousand_vus_then_faults(tmp_path_factory) -> dict:
    """The VM's second harness run, for what the shared one cannot have: 1,000 VUs (netem's queue limit, the
    handshake on the wire), then the two faults, in one suite: wrk runs at 1,000 VUs to its end (captured),
    oha is killed with -9 (a failed row, the suite goes on), Ctrl-C while ab runs through netem (exit 130,
    the finished rows kept, nothing left). Was three runs (thousand_vus; test_a_killed_tool_is_a_failed_row_
    and_ctrl_c_in_the_next_run_leaves_nothing's wrk -9 and ab Ctrl-C at 10 ms): one harness start and one
    calibration under TCG instead of three."""
    results = out_root(tmp_path_factory, "vu1000-faults")
    stop, seen = threading.Event(), []
    watcher = threading.Thread(target=watch_qdiscs, args=(stop, seen))
    watcher.start()
    try:
        proc = start(results, "--shaper", "netem", "--capture", "--tools", "wrk,oha,ab",
                     "--scenarios", "scenarios/shootout.yaml:vu1000-rtt50", "--duration", DURATION)
        os.kill(wait_for_tool("oha", timeout_s=900), signal.SIGKILL)
        wait_for_tool("ab")
        time.sleep(2)
        shaped_again = netem_anywhere()                # shaping was on again for the run after the killed one
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=300)
    finally:
        stop.set()
        watcher.join()
    print(output[-3000:])
    return {"status": proc.returncode, "output": output, "seen": seen, "shaped_again": shaped_again,
            "rows": {row["tool"]: row for row in rows_of(results)}}


def test_the_queue_limit_is_raised_for_1000_vus(thousand_vus_then_faults):
    row = thousand_vus_then_faults["rows"]["wrk"]
    assert row["status"] == "ok" and row["vus"] == "1000", row["error"]
    seen = thousand_vus_then_faults["seen"]
    assert any(f"limit {netem_limit(1000)}" in line for line in seen), seen[:5]


def test_the_wire_sees_the_handshake_delayed_by_the_rtt(thousand_vus_then_faults):
    row = thousand_vus_then_faults["rows"]["wrk"]
    assert int(row["wire_requests"]) > 0
    assert float(row["wire_connect_ms"]) >= 0.8 * float(row["rtt_target_ms"]), row["wire_connect_ms"]


# --- nothing left behind: after a run, after Ctrl-C, after a killed tool ----------------------------------------

def test_a_finished_run_leaves_no_qdisc_namespace_or_link(netem_rows, light_rows):
    assert leftovers() == [] and netem_anywhere() == []


def test_a_killed_tool_is_a_failed_row_and_ctrl_c_in_the_next_run_leaves_nothing(thousand_vus_then_faults):
    run = thousand_vus_then_faults
    assert run["status"] == 130, run["output"][-3000:]
    assert run["shaped_again"] != [], run["output"][-3000:]
    assert set(run["rows"]) == {"wrk", "oha"}, run["rows"].keys()      # ab's interrupted run has no row
    killed = run["rows"]["oha"]
    assert killed["status"] == "failed" and "-9" in killed["error"], killed["error"]
    assert leftovers() == [] and netem_anywhere() == []


# --- the Docker runtime's netem path (the generator container's eth0) --------------------------------------------

DOCKER_IN_VM = (
    "the Docker runtime's netem path is not run in this VM: dockerd starts here only with help (an "
    "overlay2 data root on a tmpfs of its own, as the shared root is 9p, and the kernel booted with "
    "apparmor=0, as the shared root has no apparmor_parser), and under TCG (measured 2026-11-25) it costs "
    "~4 min before the first container (containerd once exceeded dockerd's start timeout), the images "
    "(lth-target + lth-tool-wrk, 325 MB as `docker save`d here) have to be loaded from this machine since "
    "the VM cannot build them (no network to Debian's mirror), and a hand-made trial there (wrk in a "
    "container, 20 VUs, netem 10 ms on its eth0) averaged 33.8 ms: TCG's bridge path, not the shaper, would "
    "decide every figure. "
    "The same qdisc code shapes the container's eth0 (harness/network/shaping.py, shape_netns/shape_device), and a "
    "Docker user's kernel with sch_netem takes it; see docs/shaping.md")


def test_the_docker_runtimes_netem_path():
    pytest.skip(DOCKER_IN_VM)
