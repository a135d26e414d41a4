"""A corrupted kept pcap (issue 54) never stops a derivation or a suite: the capture reader gives a summary or its
one CaptureError (a ValueError) whatever the bytes, and the runner reads the capture's summary inside the run's
own failure handling. The fuzzer over every reader is tests/test_fuzz.py."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fake_runtime import FakeRuntime, FakeTool
from harness.cpus import NO_SPLIT
from harness.network import capture as capture_module
from harness.network.wire import FIXED_SNAPLEN, CaptureError, request_send_times, summarise
from harness.scenarios import Scenario
from harness.suite.runner import Plan, run_suite

PORT = 8080


def syn_only_pcap(path: Path, stamps_s: tuple[int, ...] = (1,)) -> Path:
    """A pcap as tcpdump writes it (Ethernet, 64-byte snap) holding opening SYNs only: no packet carries payload."""
    header = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, FIXED_SNAPLEN, 1)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 0, 0, 64, 6, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tcp = struct.pack("!HHIIBBHHH", 40000, PORT, 0, 0, 5 << 4, 0x02, 65535, 0, 0)
    frame = (b"\x00" * 12 + b"\x08\x00" + ip + tcp).ljust(FIXED_SNAPLEN, b"\x00")
    records = b"".join(struct.pack("<IIII", s, 0, FIXED_SNAPLEN, FIXED_SNAPLEN) + frame for s in stamps_s)
    path.write_bytes(header + records)
    return path


def test_a_capture_without_payload_is_a_summary_of_no_pairs(tmp_path):
    """The numpy path indexed its empty runs of payload: IndexError, surfacing as BufferError when the map closed."""
    summary = summarise(syn_only_pcap(tmp_path / "syn.pcap"), PORT)
    assert (summary.pairs, summary.connections, summary.packets, summary.percentile(50)) == (0, 1, 1, None)
    assert list(request_send_times(tmp_path / "syn.pcap", PORT)) == []


def test_timestamps_out_of_order_are_a_capture_error_not_a_negative_latency(tmp_path):
    with pytest.raises(CaptureError, match="out of order"):
        summarise(syn_only_pcap(tmp_path / "back.pcap", stamps_s=(5, 1)), PORT)


def test_a_capture_summary_that_fails_is_the_rows_note_and_the_suite_goes_on(tmp_path, monkeypatch):
    def broken(self: capture_module.Capture) -> dict:
        raise BufferError("cannot close exported pointers exist")
    monkeypatch.setattr(capture_module.Capture, "summary", broken)
    monkeypatch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))
    scenario = Scenario(id="vu2-rtt0.1", vus=2, rtt_ms=0.1, duration_s=1)
    plan = Plan(runtime="fake", tools=[FakeTool("ok"), FakeTool("ok", name="fake-second")], scenarios=[scenario],
                results_root=tmp_path / "results", grace_s=8.0, split=NO_SPLIT)
    _, rows = run_suite(plan, FakeRuntime())
    assert [r.tool for r in rows] == ["fake-ok", "fake-second"]
    assert all(r.status == "ok" and "wire capture unreadable: harness error: BufferError" in r.notes for r in rows)
