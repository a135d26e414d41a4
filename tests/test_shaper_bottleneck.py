"""Toxiproxy as the bottleneck (issue 25): the RTT probed through it and straight to Nginx while the
tool runs, and the rule that names the shaper in limited_by."""
import functools
import http.server
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest

from harness.network.shaping import PROBE_SCRIPT, loaded_probe
from harness.row.bottleneck import fill_shaper, limited_by, shaper_capped, shaper_note
from harness.store.results import RunRow
from harness.targets.file_server import TARGET_DIR, TARGET_FILE, Target


def vu1000(**changes) -> RunRow:
    """The issue's case: 1,000 VUs at 50 ms through Toxiproxy, 12,407 rps of a 20,000 rps bound."""
    base = dict(tool="wrk", tool_version="4.2.0", runtime="host", scenario="vu1000-rtt50", vus=1000, rtt_target_ms=50,
                duration_s=8, status="ok", shaper="toxiproxy", rtt_measured_ms=50.2, rps=12407.0, cpu_avg_pct=45.0,
                target_cpu_pct=80.0, tool_saturated=False, target_saturated=False, cpus_tool="1", shaper_cpu_pct=62.0)
    return RunRow(**{**base, **changes})


def under_load(via_ms: float, direct_ms: float = 0.3, ended_s: float = 5.0) -> dict:
    return {"at_s": 3.2, "count": 10, "direct_ms": direct_ms, "via_ms": via_ms, "ended_s": ended_s}


def test_a_shaper_that_queued_requests_is_named_with_its_ceiling():
    row = vu1000()
    fill_shaper(row, under_load(via_ms=80.5), row.duration_s)
    assert row.rtt_loaded_ms == 80.5 and row.shaper_added_ms == pytest.approx(80.5 - 50.2)
    assert limited_by(row, 2) == "shaper"
    row.limited_by = "shaper"
    note = shaper_note(row, under_load(via_ms=80.5))
    assert "ceiling of 12,422 rps for 1000 VUs against 19,920" in note and "CPU 62%" in note
    assert "straight to Nginx at that moment 0.3 ms" in note


@pytest.mark.parametrize("changes, via_ms, direct_ms, why", [
    ({}, 52.0, 0.3, "the shaped path added 1.8 ms: under 10% of the RTT"),
    ({}, 54.5, 4.0, "4.3 ms: still under 10% of the RTT, whoever took it"),
    ({"rps": 19000.0}, 80.5, 0.3, "the run reached 95% of VUs / RTT"),
    ({"rate_target_rps": 5000.0}, 80.5, 0.3, "an open-model run: its rate, not VUs / RTT, bounds it"),
    ({"shaper": "netem", "shaper_cpu_pct": None}, None, None, "no probe under netem"),
])
def test_the_shaper_is_not_named_without_its_own_delay_and_a_shortfall(changes, via_ms, direct_ms, why):
    row = vu1000(**changes)
    fill_shaper(row, None if via_ms is None else under_load(via_ms, direct_ms), row.duration_s)
    assert not shaper_capped(row), why
    assert limited_by(row, 2).startswith("neither"), why


def test_saturation_still_comes_first():
    row = vu1000(tool_saturated=True, cpu_avg_pct=95.0)
    fill_shaper(row, under_load(via_ms=80.5), row.duration_s)
    assert limited_by(row, 2) == "tool"


@pytest.mark.parametrize("target_cpu_pct, shaper_cpu_pct, named", [
    (90.04, 56.76, "shaper"),   # CI's VM, 2026-11-29: Nginx 33% of CPU 0, Toxiproxy the rest of it
    (99.0, 5.0, "target"),      # Nginx alone filled its CPU
])
def test_the_target_full_of_toxiproxy_names_the_shaper(target_cpu_pct, shaper_cpu_pct, named):
    row = vu1000(target_saturated=True, target_cpu_pct=target_cpu_pct, shaper_cpu_pct=shaper_cpu_pct, cpus_target="0")
    fill_shaper(row, under_load(via_ms=121.5, direct_ms=90.3), row.duration_s)
    assert limited_by(row, 2) == named


def test_a_probe_that_outlasted_the_load_or_failed_is_kept_but_not_used():
    row = vu1000()
    meta = fill_shaper(row, under_load(via_ms=80.5, ended_s=9.1), row.duration_s)
    assert row.rtt_loaded_ms is None and limited_by(row, 2).startswith("neither")
    assert meta["shaper_under_load"]["not_used"] == "the probe did not end within the tool's duration"
    meta = fill_shaper(row, {"at_s": 3.2, "count": 10, "error": "RTT probe failed", "ended_s": 4.0}, row.duration_s)
    assert meta["shaper_under_load"]["not_used"] == "RTT probe failed"


# --- the probe itself, against real servers: one answers at once, the other (the "shaper") after 30 ms --------

class _Files(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True      # else the header and body writes wait on a delayed ACK (~40 ms)
    delay_s = 0.0
    served: list[str] = []
    arrived: list[float] = []          # time.monotonic() of every GET, both servers

    def do_GET(self):
        self.served.append(type(self).__name__)
        self.arrived.append(time.monotonic())
        time.sleep(self.delay_s)
        super().do_GET()

    def log_message(self, *args):
        pass


class _Slow(_Files):
    delay_s = 0.03


@contextmanager
def _server(handler, folder):
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder))) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield Target("127.0.0.1", server.server_port)
        finally:
            server.shutdown()


class _Here:
    """A session whose tool position is this process's: the probe script runs here."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def run_python(self, script, args, timeout: float = 60):
        return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout)


def test_the_loaded_probe_times_both_paths_during_the_block(tmp_path):
    (tmp_path / TARGET_FILE).write_bytes((TARGET_DIR / "html" / TARGET_FILE).read_bytes())   # the probe checks it is ours
    _Files.served.clear()
    with _server(_Files, tmp_path) as nginx, _server(_Slow, tmp_path) as proxy:
        session = _Here(nginx)
        with loaded_probe(session, proxy, "toxiproxy", rtt_ms=30, duration_s=2) as found:
            time.sleep(2)                                   # the tool's run
        # the block waited for both probes: none outlives it
        assert not [t for t in threading.enumerate() if t.name.startswith("lth-loaded-probe")]
    assert found["at_s"] == 1.0 and found["count"] == 11 and "error" not in found
    assert found["direct_ms"] < 15 <= 30 <= found["via_ms"] < 200
    assert found["ended_s"] >= found["at_s"]
    # what the row takes out of Nginx's count and the wire's is what each server really served
    assert (found["gets_direct"], found["gets_via"]) == (_Files.served.count("_Files"), _Files.served.count("_Slow"))


class _SlowStart(_Here):
    """The probe's interpreter starting on busy cores (a TCG VM under load took seconds)."""
    START_S = 2.0

    def run_python(self, script, args, timeout: float = 60):
        command = f"sleep {self.START_S}; exec {sys.executable} {script} " + " ".join(args)
        return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout)


def test_the_probes_start_up_is_off_the_clock(tmp_path):
    """The processes start ahead (LOADED_PROBE_LEAD_S) and their GETs wait for at_s: a start-up slower than
    at_s's share of the run no longer moves the probe towards the end of the load (or past it)."""
    (tmp_path / TARGET_FILE).write_bytes((TARGET_DIR / "html" / TARGET_FILE).read_bytes())   # the probe checks it is ours
    _Files.arrived.clear()
    with _server(_Files, tmp_path) as nginx, _server(_Slow, tmp_path) as proxy:
        started = time.monotonic()
        with loaded_probe(_SlowStart(nginx), proxy, "toxiproxy", rtt_ms=30, duration_s=6) as found:
            time.sleep(6)
    assert found["at_s"] == 2.4 and "error" not in found and found["ended_s"] <= 6
    timed = sorted(t - started for t in _Files.arrived)[2:]         # after each path's warm-up GET
    # At at_s, not at the start-up plus at_s (4.4 s): two outcomes 2 s apart, so no machine's pace decides
    # it; the probe waits on the wall clock, this test reads the monotonic one (they differ by ~0.1 ms).
    assert found["at_s"] - 0.05 <= timed[0] < found["at_s"] + _SlowStart.START_S, (timed[:3], found)


def test_a_run_shorter_than_the_probes_start_cancels_it_and_netem_has_none(tmp_path):
    (tmp_path / TARGET_FILE).write_bytes((TARGET_DIR / "html" / TARGET_FILE).read_bytes())   # the probe checks it is ours
    with _server(_Files, tmp_path) as nginx:
        with loaded_probe(_Here(nginx), nginx, "toxiproxy", rtt_ms=10, duration_s=60) as found:
            pass                                            # the tool failed at once
        assert "via_ms" not in found and "ended_s" not in found
        with loaded_probe(_Here(nginx), nginx, "netem", rtt_ms=10, duration_s=60) as found:
            assert found is None
