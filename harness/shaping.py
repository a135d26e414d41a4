"""Network round-trip time: netem where the kernel has it, Toxiproxy where it has not.

netem adds the whole RTT on one side (as the study did), on an interface inside a namespace the
harness created: the target's veth in the host runtime, the generator's eth0 in the Docker
runtime. Its queue limit is raised from 1000 packets so a 50 ms profile at 1000 VUs is not capped
by the queue. Toxiproxy (the fallback) runs inside the target's network namespace, in front of
Nginx, with one downstream latency toxic equal to the RTT; it does not delay the TCP handshake,
costs CPU of its own and saturates around 10-15k RPS on two cores (see README).
"""
from __future__ import annotations

import json
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import psutil

from harness import PREFIX
from harness.errors import HarnessError
from harness.processes import run, signals_deferred
from harness.runtimes.base import Session
from harness.target import Target

SHAPERS = ("auto", "netem", "toxiproxy")
TOXIPROXY_BIN = Path("/opt/lth/bin/toxiproxy-server")
PROXY_PORT, API_PORT = 8080, 8474
PROBE_SCRIPT = Path(__file__).with_name("rtt_probe.py")
# A request/response exchange puts at most ~4 packets in flight per connection, all of which can
# sit in the delayed queue for one RTT; twice that for headroom.
PACKETS_IN_FLIGHT_PER_VU = 8
NETEM_DEFAULT_LIMIT = 1000


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


CALIBRATION_PROBES = 3


def measure_rtt(session: Session, target: Target) -> float:
    """Median RTT from the tool's network position to the target (through the shaping)."""
    result = session.run_python(PROBE_SCRIPT, [target.host, str(target.port), target.path, "30"])
    if result.returncode != 0:
        raise HarnessError(f"RTT probe to {target.url} failed: {result.stderr.strip().splitlines()[-1:]}")
    return json.loads(result.stdout)["median_ms"]


@contextmanager
def shaped(session: Session, kind: str, rtt_ms: float, vus: int, log_dir: Path) -> Iterator[Target]:
    """The target as the tool must address it, with the RTT applied for the duration of the block."""
    if kind == "none":
        yield session.target
    elif kind == "netem":
        device, netns = session.shape_device, session.shape_netns
        result = run(netem_command(netns, device, rtt_ms, netem_limit(vus)), check=False)
        if result.returncode != 0:
            raise HarnessError(f"netem on {device} failed: {result.stderr.strip()}")
        try:
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
def _toxiproxy(session: Session, rtt_ms: float, log_dir: Path) -> Iterator[Target]:
    """Toxiproxy where the session places it (beside Nginx, or beside the tool on two machines)."""
    listen, upstream = session.proxy_place()
    api = lambda *call: session.proxy_api(listen, API_PORT, *call)  # noqa: E731
    with (log_dir / "toxiproxy.log").open("w") as log:
        proc = session.start_proxy([str(TOXIPROXY_BIN), "-host", listen, "-port", str(API_PORT)], log)
        try:
            _wait_for_api(api, proc)
            api("POST", "/proxies", {"name": PREFIX, "listen": f"{listen}:{PROXY_PORT}",
                                     "upstream": f"{upstream}:{session.target.port}", "enabled": True})
            api("POST", f"/proxies/{PREFIX}/toxics",
                {"name": "rtt", "type": "latency", "stream": "downstream", "toxicity": 1.0,
                 "attributes": {"latency": round(rtt_ms), "jitter": 0}})
            target = Target(listen, PROXY_PORT, status_port=session.target.status_port,
                            status_host=None if listen == session.target.host else session.target.host)
            _calibrate(session, target, api, rtt_ms, log_dir)
            yield target
        finally:
            with signals_deferred():
                session.stop_proxy(proc)


def _calibrate(session: Session, target: Target, api: Callable[..., dict], rtt_ms: float, log_dir: Path) -> None:
    """The proxy adds a delay of its own (~1-1.5 ms here) on top of its toxic, which can put a 10 ms
    profile outside rtt_ok. Until a probe through the proxy misses by less than 0.5 ms (at most
    CALIBRATION_PROBES), the toxic is moved by the probe's miss rounded to whole ms (the toxic's unit);
    a noisy first probe that overshoots is corrected by the next. The toxic that came closest is
    kept. The row's rtt_measured_ms is probed afresh after this, so it shows what the tool really
    got; shaping.json keeps every probe."""
    toxic, probes = round(rtt_ms), []
    for _ in range(CALIBRATION_PROBES):
        measured = measure_rtt(session, target)
        probes.append({"toxic_latency_ms": toxic, "probe_ms": round(measured, 3)})
        step = round(rtt_ms - measured)   # whole ms: a miss under 0.5 ms is as close as the toxic gets
        if step == 0 or toxic + step < 0:
            break
        toxic += step
        _set_toxic(api, toxic)
    best = min(probes, key=lambda p: abs(p["probe_ms"] - rtt_ms))
    if best["toxic_latency_ms"] != toxic:
        _set_toxic(api, best["toxic_latency_ms"])
    (log_dir / "shaping.json").write_text(json.dumps({
        "shaper": "toxiproxy", "rtt_target_ms": rtt_ms, "probe_with_toxic_at_target_ms": probes[0]["probe_ms"],
        "probes": probes, "toxic_latency_ms": best["toxic_latency_ms"],
        "calibrated": best["toxic_latency_ms"] != round(rtt_ms),
        "method": "median of 30 keep-alive GETs through the proxy (harness/rtt_probe.py); toxic moved by each "
                  "probe's miss, rounded to whole ms, until it misses by < 0.5 ms; the closest kept"}, indent=1))


def _set_toxic(api: Callable[..., dict], latency_ms: int) -> None:
    api("POST", f"/proxies/{PREFIX}/toxics/rtt", {"attributes": {"latency": latency_ms, "jitter": 0}})


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
