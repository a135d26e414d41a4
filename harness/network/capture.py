"""Ground truth from the wire (``--capture``): tcpdump on the generator's side of the link while
the tool runs, parsed by harness/network/wire.py into the row's wire_* and tool_error_* columns.

The capture starts after the harness's own target check, RTT probe and first stub_status read,
and stops once the tool has exited, before the second read: it holds the tool's traffic only.
Headers only (snap length), only packets carrying payload or opening/closing a connection (pure
ACKs are filtered in the kernel), and at most MAX_PACKETS packets, which bounds disk; a capture
that hits the cap says so in the row's notes. The pcap is deleted once parsed, so whatever the row
needs from it is computed here, into the summary the run's record keeps: the pairs (wire latency) and,
for a rate run, the schedule fidelity of the tool's sends (harness/network/fidelity.py).
"""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from harness import PREFIX
from harness.network import openers
from harness.network.fidelity import schedule_fidelity
from harness.network.wire import FIXED_SNAPLEN, WireSummary, request_send_times, summarise
from harness.processes import end_process, signals_deferred
from harness.runtimes.base import Session
from harness.store import hdr
from harness.store.hdr import WIRE_LOG
from harness.targets.file_server import Target

TCPDUMP = "tcpdump"
PCAP_NAME, LOG_NAME = f"{PREFIX}-capture.pcap", "capture.log"   # clean-state finds tcpdump by the name
OPENERS_PCAP, OPENERS_LOG = f"{PREFIX}-capture-openers.pcap", "openers.log"   # HTTP/2 runs (openers.py)
# Ethernet 14 + IPv4 20 + TCP's first 14 bytes (ports, data offset, flags) is all the parser reads;
# the rest of the TCP header is kept for a human reading the pcap. 80 B per packet on disk.
SNAPLEN = FIXED_SNAPLEN   # the layout harness/network/wire.py parses with numpy
# Measured: 2.0 packets per request/response pair (pure ACKs filtered out), so the cap is
# about 1.6 GB of disk and 10M pairs (a 300 s run at 33k RPS).
MAX_PACKETS = 20_000_000
KERNEL_BUFFER_KIB = 65536
READY_TIMEOUT_S = 10.0
# tcpdump hands packets over in blocks with a 1 s timeout: waiting that long after the tool
# exits lets the last block reach the file before tcpdump is stopped.
SETTLE_S = 1.1
MISSING = f"--capture: {TCPDUMP} is not installed (apt-get install tcpdump, or `make deps`): runs go on without wire figures"


def tcpdump_missing() -> bool:
    return shutil.which(TCPDUMP) is None


def bpf_filter(target: Target) -> str:
    """The load's TCP packets that carry payload or a SYN/FIN/RST (pure ACKs are dropped)."""
    payload = "(ip[2:2] - ((ip[0] & 0xf) << 2) - ((tcp[12] & 0xf0) >> 2)) != 0"
    return (f"tcp and host {target.host} and port {target.load_port} and "
            f"((tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst)) != 0 or {payload})")


@dataclass
class Capture:
    """One run's capture: ``recording`` around the tool, then its ``summary`` for the run's record."""
    enabled: bool
    skipped: str = ""                  # why there is no capture although one was asked for
    port: int = 0
    pcap: Path | None = None
    keep_pcap: bool = False
    facts: dict = field(default_factory=dict)
    paced: tuple[int, str] | None = None   # a rate run: the rate asked for and the tool's declared schedule
    openers_pcap: Path | None = None       # an HTTP/2 run: each connection's opening packet (openers.py)

    @contextmanager
    def recording(self, session: Session, target: Target, run_dir: Path,
                  paced: tuple[int, str] | None = None) -> Iterator[None]:
        if target.protocol == "h3" and self.enabled and not self.skipped:
            self.skipped = "HTTP/3 is QUIC over UDP: the capture reads TCP"
        if not self.enabled or self.skipped:
            yield
            return
        self.port, self.pcap, self.paced = target.load_port, run_dir / PCAP_NAME, paced
        argv = [*session.generator_netns, TCPDUMP, "-i", session.capture_device, "-n", "-s", str(SNAPLEN),
                "-B", str(KERNEL_BUFFER_KIB), "--time-stamp-precision=nano", "-Z", "root",
                "-c", str(MAX_PACKETS), "-w", str(self.pcap), bpf_filter(target)]
        self.facts = {"device": session.capture_device, "netns": " ".join(session.generator_netns) or "root",
                      "port": target.load_port, **({"paced": {"rate_rps": paced[0], "schedule": paced[1]}} if paced else {}),
                      "filter": argv[-1], "snaplen": SNAPLEN, "max_packets": MAX_PACKETS, "command": argv,
                      "after_netem": (session.shape_netns, session.shape_device) == (session.generator_netns,
                                                                                     session.capture_device)}
        log = (run_dir / LOG_NAME).open("w")
        proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        opening = None
        try:
            if said := _not_started(proc, run_dir / LOG_NAME):
                self.skipped = f"tcpdump did not start: {said}"
            if target.protocol != "http/1.1" and not self.skipped:
                opening = self._start_openers(session, target, run_dir)
            self.facts["started_at"] = time.time()
            yield
            time.sleep(SETTLE_S)
        finally:
            with signals_deferred():
                self.facts["stopped_at"] = time.time()
                for running in filter(None, (proc, opening)):
                    _stop(running)
                log.close()
                self.facts.update(_counters((run_dir / LOG_NAME).read_text(errors="replace")))

    def _start_openers(self, session: Session, target: Target, run_dir: Path) -> subprocess.Popen | None:
        """An HTTP/2 run: the second capture, of each connection's opening packet in full (openers.py)."""
        self.openers_pcap = run_dir / OPENERS_PCAP
        argv = [*session.generator_netns, TCPDUMP, "-i", session.capture_device, "-n", "-s", str(openers.SNAPLEN),
                "-Z", "root", "-c", str(openers.MAX_PACKETS), "-w", str(self.openers_pcap),
                openers.bpf_filter(target.host, target.load_port)]
        self.facts["openers_command"] = argv
        with (run_dir / OPENERS_LOG).open("w") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        if said := _not_started(proc, run_dir / OPENERS_LOG):
            _stop(proc)
            self.facts["openers_error"], self.openers_pcap = said, None
            return None
        return proc

    def summary(self) -> dict | None:
        """What the capture saw (None: no capture was asked for), for the run's record; the pcap is
        parsed here and deleted unless kept. harness/row/wire.py turns it into the row's columns."""
        if not self.enabled:
            return None
        if self.skipped or self.pcap is None:
            if self.pcap is not None and not self.keep_pcap:
                self.pcap.unlink(missing_ok=True)
            return {"skipped": self.skipped or "the run ended before the tool started"}
        try:
            summary = summarise(self.pcap, self.port)
        except (OSError, ValueError) as exc:
            return {**self.facts, "error": str(exc)}
        fidelity = _fidelity(self.pcap, self.port, self.paced) if self.paced else {}
        opened = self._openers()
        wire_log = _wire_log(summary, self.pcap.parent, self.facts)
        pcap_bytes = self.pcap.stat().st_size
        if not self.keep_pcap:
            self.pcap.unlink()
        return {"covers": f"TCP to/from port {self.port} on {self.facts['device']} ({self.facts['netns']} netns), "
                          "from just before the tool started until it exited; the harness's probe, target check "
                          "and stub_status reads are outside", **self.facts, "pcap_bytes": pcap_bytes,
                "pcap": self.pcap.name if self.keep_pcap else "deleted after parsing", **summary.describe(),
                **fidelity, **opened, **wire_log}

    def _openers(self) -> dict:
        """{"openers": how the connections opened} of an HTTP/2 run (or why it is not known); {} otherwise."""
        if "openers_error" in self.facts:
            return {"openers": {"error": f"the openers' tcpdump did not start: {self.facts['openers_error']}"}}
        if self.openers_pcap is None:
            return {}
        try:
            return {"openers": openers.read(self.openers_pcap, self.port).describe()}
        except (OSError, ValueError) as exc:
            return {"openers": {"error": str(exc)}}
        finally:
            if not self.keep_pcap:
                self.openers_pcap.unlink(missing_ok=True)


def _wire_log(summary: WireSummary, run_dir: Path, facts: dict) -> dict:
    """{"hlog": ...}: the wire's request-to-response latencies as an HdrHistogram log (hdr.py), or {}."""
    if not len(summary.latencies_ms):
        return {}
    name = hdr.write_log(hdr.counts_of(summary.latencies_ms), run_dir,
                         ["source: the wire (tcpdump on the generator's link): first request packet to the last "
                          "response packet of each answered pair", "timing resolution: 1 ns (tcpdump --time-stamp-precision=nano)"],
                         facts.get("started_at", 0.0), facts.get("stopped_at", 0.0) - facts.get("started_at", 0.0),
                         name=WIRE_LOG)
    return {"hlog": name}


def _fidelity(pcap: Path, port: int, paced: tuple[int, str]) -> dict:
    """{"fidelity": how faithfully the sends kept the declared rate and schedule} (or why not)."""
    rate, schedule = paced
    try:
        return {"fidelity": schedule_fidelity(request_send_times(pcap, port), rate, schedule).describe()}
    except (OSError, ValueError) as exc:
        return {"fidelity": {"error": str(exc)}}


def reparsed(capture: dict, run_dir: Path) -> dict:
    """A stored summary with its pairs, and a rate run's schedule fidelity, computed again from the pcap kept
    beside it (--keep-pcap), so that `rederive` brings a wire parser fix to old runs; as stored when the pcap
    was deleted."""
    pcap, port = run_dir / PCAP_NAME, _stored_port(capture)
    if capture.get("pcap") != PCAP_NAME or port is None or not pcap.is_file():
        return capture
    paced = capture.get("paced")
    try:
        return {**capture, **summarise(pcap, port).describe(),
                **(_fidelity(pcap, port, (paced["rate_rps"], paced["schedule"])) if paced else {})}
    except (OSError, ValueError):
        return capture


def _stored_port(capture: dict) -> int | None:
    """The port the capture recorded; a record written before it kept the port has it only in its filter."""
    if "port" in capture:
        return int(capture["port"])
    found = re.search(r"\bport (\d+)\b", capture.get("filter", ""))
    return int(found.group(1)) if found else None


def _not_started(proc: subprocess.Popen, log: Path) -> str | None:
    """Wait for tcpdump to say it is listening; what it said instead when it exits or takes too long (None: it
    listens)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while "listening on" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            return (" ".join(log.read_text(errors="replace").split()) or "no output")[:200]
        time.sleep(0.05)
    return None


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT lets tcpdump flush the file and print its counters."""
    end_process(proc, signal.SIGINT)


def _counters(log: str) -> dict:
    found = {}
    for key, pattern in (("captured", r"(\d+) packets? captured"), ("received_by_filter", r"(\d+) packets? received by filter"),
                         ("dropped_by_kernel", r"(\d+) packets? dropped by kernel")):
        match = re.search(pattern, log)
        if match:
            found[key] = int(match.group(1))
    return found
