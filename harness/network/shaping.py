"""Network round-trip time: netem where the kernel has it, Toxiproxy where it has not.

netem adds the whole RTT on one side (as the study did), on an interface inside a namespace the
harness created: the target's veth in the host runtime, the generator's eth0 in the Docker
runtime. Its queue limit is raised from 1000 packets so a 50 ms profile at 1000 VUs is not capped
by the queue. Toxiproxy (the fallback) runs inside the target's network namespace, in front of
Nginx, with one downstream latency toxic equal to the RTT; it does not delay the TCP handshake,
costs CPU of its own and saturates around 10-15k RPS on two cores (see docs/shaping.md).
"""
from __future__ import annotations

import json
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

import psutil

from harness import PREFIX
from harness.errors import HarnessError
from harness.files import write_atomic
from harness.processes import run, signals_deferred
from harness.runtimes.base import Session
from harness.scenarios import rtt_tolerance_ms
from harness.targets.file_server import Target, target_file_sha256

SHAPERS = ("auto", "netem", "toxiproxy")
TOXIPROXY_BIN = Path("/opt/lth/bin/toxiproxy-server")
PROXY_PORT, API_PORT = 8080, 8474
H2C_PROXY_PORT = 8081   # h2c's own port through Toxiproxy (harness/targets/: H2C_PORT)
PROBE_SCRIPT = Path(__file__).resolve().parents[1] / "rtt_probe.py"
# A request/response exchange puts at most ~4 packets in flight per connection, all of which can
# sit in the delayed queue for one RTT; twice that for headroom.
PACKETS_IN_FLIGHT_PER_VU = 8
NETEM_DEFAULT_LIMIT = 1000
LOADED_PROBE_AT = 0.4    # share of a run's duration after the launch (Toxiproxy's RTT under load)
LOADED_PROBE_LEAD_S = 15.0  # its processes start this much earlier (at the launch at most): start-up off the clock


@dataclass(frozen=True)
class ShaperChoice:
    kind: str            # netem | toxiproxy | none
    reason: str


def netem_available() -> tuple[bool, str]:
    """Try netem in a throw-away namespace (never on an interface of the root namespace)."""
    namespace = f"{PREFIX}-netem-probe"
    run(["ip", "netns", "delete", namespace], check=False)
    if run(["ip", "netns", "add", namespace], check=False).returncode != 0:
        return False, "cannot create a network namespace (need root)"
    try:
        result = run(["tc", "-n", namespace, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], check=False)
        return result.returncode == 0, result.stderr.strip()
    finally:
        run(["ip", "netns", "delete", namespace], check=False)


def choose_shaper(requested: str, needs_shaping: bool, netem_ok: bool, netem_error: str = "") -> ShaperChoice:
    if requested not in SHAPERS:
        raise HarnessError(f"unknown shaper {requested!r}; allowed: {', '.join(SHAPERS)}")
    if not needs_shaping:
        return ShaperChoice("none", "no scenario needs an RTT above the native hop")
    if requested == "netem" and not netem_ok:
        raise HarnessError(f"--shaper netem: this kernel lacks sch_netem (tc said: {netem_error or 'no netem'}); "
                           "load it (modprobe sch_netem, or a kernel with CONFIG_NET_SCH_NETEM) or use --shaper toxiproxy")
    if requested == "netem" or (requested == "auto" and netem_ok):
        return ShaperChoice("netem", "kernel has sch_netem")
    if not TOXIPROXY_BIN.is_file():
        raise HarnessError(f"Toxiproxy is needed for RTT shaping ({'netem is missing' if not netem_ok else 'requested'}) "
                           f"but {TOXIPROXY_BIN} is not installed: run `make deps` (scripts/install-toxiproxy.sh)")
    why = "requested" if requested == "toxiproxy" else f"netem unavailable ({netem_error or 'kernel lacks sch_netem'})"
    return ShaperChoice("toxiproxy", why)


def netem_limit(vus: int) -> int:
    return max(NETEM_DEFAULT_LIMIT, PACKETS_IN_FLIGHT_PER_VU * vus)


def netem_command(netns: list[str], device: str, delay_ms: float, limit: int) -> list[str]:
    return [*netns, "tc", "qdisc", "replace", "dev", device, "root", "netem", "delay", f"{delay_ms:g}ms",
            "limit", str(limit)]


CALIBRATION_PROBES = 3         # steps toward CALIBRATED_WITHIN_MS; more only while the closest probe is
CALIBRATION_MAX_PROBES = 5     # outside the row's RTT tolerance (a TCG VM's hop moved by 2 ms between probes)
CALIBRATED_WITHIN_MS = 0.5
# The delay each shaped path ended on, by (shaper, where the tool runs, target, RTT): the next run of the suite
# on the same path starts its calibration there (one probe, not the three or four the profile's own value
# takes where the shaper adds a delay of its own).
_CALIBRATED: dict[tuple[str, str, str, float], float] = {}


def measured_rtt(session: Session, target: Target, rtt_ms: float, shaping: dict | None) -> float:
    """Median RTT from the tool's network position to the target, through the shaping: a shaped path's
    is the calibration's closest probe (taken at the delay the run gets: a second probe of the same
    path would cost a second, and tens of them in a TCG VM, for the same figure), else one probe."""
    if shaping and shaping.get("rtt_measured_ms") is not None:
        return shaping["rtt_measured_ms"]
    return measure_rtt(session, target, rtt_ms)


def measure_rtt(session: Session, target: Target, rtt_ms: float) -> float:
    """Median RTT from the tool's network position to the target (through the shaping)."""
    return steady_probe(session, target, rtt_ms, rtt_tolerance_ms(rtt_ms))["median_ms"]


def steady_probe(session: Session, target: Target, rtt_ms: float, band_ms: float) -> dict:
    """One probe; one that misses ``rtt_ms`` by more than ``band_ms`` is probed twice more and the
    median of the three kept (with its connect_ms), all in the probe's one process (rtt_probe.py
    --steady). In a slow VM one second's probe can be off by 1.5 ms or more (tests/netem_vm); on a
    steady machine the first one stands."""
    return probe_rtt(session, target, rtt_ms, steady_band_ms=band_ms)


def probe_count(rtt_ms: float) -> int:
    """GETs per probe: about a second's worth (30 to 100), so one slow moment does not move the median."""
    return min(100, max(30, round(1000 / max(rtt_ms, 1))))


def probe_rtt(session: Session, target: Target, rtt_ms: float, count: int | None = None,
              at: float | None = None, steady_band_ms: float | None = None) -> dict:
    """harness/rtt_probe.py's figures: median/min/max of the GETs, and a fresh handshake's connect_ms.
    at: the wall-clock time the timed GETs start, however long the probe's process takes to start.
    steady_band_ms: see steady_probe."""
    count = count or probe_count(rtt_ms)
    wait_s = max(0.0, at - time.time()) if at is not None else 0.0
    steady = ["--steady", f"{rtt_ms:g}", f"{steady_band_ms:g}"] if steady_band_ms is not None else []
    result = session.run_python(PROBE_SCRIPT, [target.host, str(target.port), target.probe_path, str(count),
                                               "--expect-sha256", target_file_sha256(),
                                               *(["--tls"] if target.tls else []),
                                               *(["--at", f"{at:.3f}"] if at is not None else []), *steady],
                                timeout=(180 if steady else 60) + wait_s)
    if result.returncode != 0:
        raise HarnessError(f"RTT probe to {target.url} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout)


@contextmanager
def shaped(session: Session, kind: str, rtt_ms: float, vus: int, log_dir: Path) -> Iterator[Target]:
    """The target as the tool must address it, with the RTT applied for the duration of the block."""
    if kind == "none":
        yield session.target
    elif kind == "netem":
        device, netns, limit = session.shape_device, session.shape_netns, netem_limit(vus)

        def set_delay(delay_ms: float) -> None:
            result = run(netem_command(netns, device, delay_ms, limit), check=False)
            if result.returncode != 0:
                raise HarnessError(f"netem on {device} failed: {result.stderr.strip()}")
        try:
            set_delay(rtt_ms)
            _calibrate_path(session, session.target, Knob("netem", "netem delay", 0.1, set_delay), rtt_ms, log_dir)
            yield session.target
        finally:
            with signals_deferred():
                run([*netns, "tc", "qdisc", "del", "dev", device, "root"], check=False)
    elif kind == "toxiproxy":
        with _toxiproxy(session, rtt_ms, log_dir) as target:
            yield target
    else:
        raise HarnessError(f"unknown shaper {kind!r}")


@contextmanager
def loaded_probe(session: Session, shaped_target: Target, kind: str, rtt_ms: float,
                 duration_s: float) -> Iterator[dict | None]:
    """Toxiproxy only (netem is the kernel's and does not queue behind a process): while the tool
    runs, LOADED_PROBE_AT of its duration after the launch, two RTT probes at once, one straight to
    Nginx and one through the shaper (together, so that a short run still holds both); their processes
    start up to LOADED_PROBE_LEAD_S before. The difference, beyond the idle RTT, is what the shaper
    itself added under this load (harness/row/bottleneck.py: limited_by "shaper"). Yields the dict the
    probes fill: at_s, count, direct_ms, via_ms, direct_from_s and via_from_s (s after the launch when
    each path's timed GETs began), ended_s (when the later one's ended), or error; gets_direct and
    gets_via, the GETs each sent (the warm-up and the timed ones), which the row takes out of Nginx's
    count and the wire's (harness/row: probe_gets)."""
    if kind != "toxiproxy":
        yield None
        return
    found: dict = {"at_s": round(max(1.0, LOADED_PROBE_AT * duration_s), 3),
                   "count": max(10, probe_count(rtt_ms) // 3)}
    origin, origin_wall, cancel, lock = time.monotonic(), time.time(), threading.Event(), threading.Lock()

    def probe(path: str, target: Target) -> None:
        # Started LOADED_PROBE_LEAD_S early, the probe's own start-up is off the clock: its GETs begin at at_s.
        if cancel.wait(max(0.0, found["at_s"] - LOADED_PROBE_LEAD_S)):
            return
        ended_s = None
        try:
            probed = probe_rtt(session, target, rtt_ms, found["count"], at=origin_wall + found["at_s"])
            figures = {f"{path}_ms": probed["median_ms"], f"gets_{path}": found["count"] + 1,
                       f"{path}_from_s": round(probed["gets_from"] - origin_wall, 3)}
            ended_s = probed["gets_to"] - origin_wall
        except (HarnessError, subprocess.TimeoutExpired) as exc:
            figures = {"error": str(exc)}
        returned_s = time.monotonic() - origin
        # The GETs' own end, where the probe's clock is this one's (a generator host's may not be).
        ended_s = ended_s if ended_s is not None and 0 <= ended_s <= returned_s else returned_s
        with lock:
            found.update(figures)
            found["ended_s"] = max(found.get("ended_s", 0.0), round(ended_s, 3))

    threads = [threading.Thread(target=probe, args=(path, target), name=f"lth-loaded-probe-{path}", daemon=True)
               for path, target in (("direct", session.target), ("via", shaped_target))]
    for thread in threads:
        thread.start()
    try:
        yield found
    finally:
        cancel.set()
        for thread in threads:
            thread.join(timeout=70)


@contextmanager
def _toxiproxy(session: Session, rtt_ms: float, log_dir: Path) -> Iterator[Target]:
    """Toxiproxy where the session places it (beside Nginx, or beside the tool on two machines)."""
    listen, upstream = session.proxy_place()
    api = lambda *call: session.proxy_api(listen, API_PORT, *call)  # noqa: E731
    with (log_dir / "toxiproxy.log").open("w") as log:
        proc = session.start_proxy([str(TOXIPROXY_BIN), "-host", listen, "-port", str(API_PORT)], log)
        try:
            _wait_for_api(api, proc)
            # h2c's port speaks HTTP/2 only, the probes HTTP/1.1: a proxy each, with the same toxic.
            ports = {PREFIX: (PROXY_PORT, session.target.port)}
            if session.target.h2c_port:
                ports[f"{PREFIX}-h2c"] = (H2C_PROXY_PORT, session.target.h2c_port)
            for name, (listen_port, upstream_port) in ports.items():
                api("POST", "/proxies", {"name": name, "listen": f"{listen}:{listen_port}",
                                         "upstream": f"{upstream}:{upstream_port}", "enabled": True})
                api("POST", f"/proxies/{name}/toxics",
                    {"name": "rtt", "type": "latency", "stream": "downstream", "toxicity": 1.0,
                     "attributes": {"latency": round(rtt_ms), "jitter": 0}})
            target = replace(session.target, host=listen, port=PROXY_PORT,
                             h2c_port=H2C_PROXY_PORT if session.target.h2c_port else None,
                             status_host=session.target.status_host or session.target.host)
            def set_toxics(latency_ms: float) -> None:
                for name in ports:
                    _set_toxic(api, latency_ms, name)
            _calibrate_path(session, target, Knob("toxiproxy", "toxic latency", 1, set_toxics), rtt_ms, log_dir)
            yield target
        finally:
            with signals_deferred():
                session.stop_proxy(proc)


@dataclass(frozen=True)
class Knob:
    """The delay a shaper adds, and the step it can be moved by."""
    shaper: str
    name: str
    step_ms: float                       # Toxiproxy's toxic takes whole ms; netem takes fractions
    set: Callable[[float], None]


def _calibrate_path(session: Session, target: Target, knob: Knob, rtt_ms: float, log_dir: Path) -> None:
    """_calibrate, started from the delay the suite's previous run on the same path ended on."""
    path = (knob.shaper, f"{type(session).__name__} on {session.where}", session.target.url, rtt_ms)
    _CALIBRATED[path] = _calibrate(session, target, knob, rtt_ms, log_dir, _CALIBRATED.get(path))


def _calibrate(session: Session, target: Target, knob: Knob, rtt_ms: float, log_dir: Path,
               start_ms: float | None = None) -> float:
    """Until a probe misses the target RTT by less than 0.5 ms (at most CALIBRATION_PROBES steps, or up to
    CALIBRATION_MAX_PROBES while no probe is within the row's tolerance; a probe that misses is the median of
    three, see steady_probe), the delay is set to the target less the path's own delay, the probes' mean
    excess over their delays (one probe: moved by its miss), rounded to the knob's step; the delay that came
    closest is kept (and returned). It starts at the profile, or at ``start_ms`` (where a previous run on the
    same path ended). Averaging the excess keeps a noisy path (a TCG VM's hop: 5.1, 6.9 and 4.7 ms in three
    probes of one calibration) from swinging the delay by each probe's noise.
    Toxiproxy adds a delay of its own (~1-1.5 ms here) on top of its toxic; netem's native hop and
    timer slack add ~1.6 ms at 10 ms in a TCG VM (tests/netem_vm), where a real machine's
    0.05-0.1 ms never moves it. The closest probe was taken at the delay the run gets: it is the row's
    rtt_measured_ms (measured_rtt), not probed again; shaping.json keeps every probe."""
    delay, probes, medians = _rounded(rtt_ms if start_ms is None else start_ms, knob.step_ms), [], []
    if delay != rtt_ms:
        knob.set(delay)
    for count in range(1, CALIBRATION_MAX_PROBES + 1):
        measured = steady_probe(session, target, rtt_ms, CALIBRATED_WITHIN_MS)
        medians.append(measured["median_ms"])
        probes.append({"delay_ms": delay, "probe_ms": round(measured["median_ms"], 3),
                       "connect_ms": round(measured["connect_ms"], 3)})
        closest_miss = min(abs(m - rtt_ms) for m in medians)
        if closest_miss < CALIBRATED_WITHIN_MS or (count >= CALIBRATION_PROBES and
                                                   closest_miss <= rtt_tolerance_ms(rtt_ms)):
            break
        excess = sum(m - p["delay_ms"] for m, p in zip(medians, probes)) / len(probes)
        following = _rounded(rtt_ms - excess, knob.step_ms)
        if following == delay or following < 0:
            break
        delay = following
        knob.set(delay)
    closest = min(range(len(probes)), key=lambda i: abs(medians[i] - rtt_ms))
    best = probes[closest]
    if best["delay_ms"] != delay:
        knob.set(best["delay_ms"])
    write_atomic(log_dir / "shaping.json", json.dumps({
        "shaper": knob.shaper, "rtt_target_ms": rtt_ms, "knob": knob.name, "probes": probes,
        "delay_ms": best["delay_ms"], "calibrated": best["delay_ms"] != _rounded(rtt_ms, knob.step_ms),
        "started_from": "the profile" if start_ms is None else "the delay the previous run on this path ended on",
        "rtt_measured_ms": medians[closest],
        "method": f"median of {probe_count(rtt_ms)} keep-alive GETs (harness/rtt_probe.py; a probe missing by "
                  f">= 0.5 ms: the median of 3); the {knob.name} moved by each probe's miss, rounded to "
                  f"{knob.step_ms:g} ms, until it misses by < 0.5 ms; the closest kept"}, indent=1))
    return best["delay_ms"]


def _rounded(ms: float, step: float) -> float:
    value = round(round(ms / step) * step, 3)
    return int(value) if step >= 1 else value


def _set_toxic(api: Callable[..., dict], latency_ms: float, proxy: str = PREFIX) -> None:
    api("POST", f"/proxies/{proxy}/toxics/rtt", {"attributes": {"latency": latency_ms, "jitter": 0}})


def proxy_pids() -> set[int]:
    """Toxiproxy's processes: it runs in the target's namespace, on the target's CPUs."""
    found = set()
    for proc in psutil.process_iter(["cmdline"]):
        if str(TOXIPROXY_BIN) in " ".join(proc.info["cmdline"] or []):
            found.add(proc.pid)
    return found


def _wait_for_api(api: Callable[..., dict], proc: subprocess.Popen, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            api("GET", "/version")
            return
        except (OSError, HarnessError):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise HarnessError("toxiproxy did not start: see toxiproxy.log in the run's folder") from None
            time.sleep(0.1)
