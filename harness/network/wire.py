"""Wire latency from a pcap file (pure Python, classic pcap format as tcpdump writes it).

HTTP/1.1 keep-alive without pipelining: on each TCP connection a request is a run of
client->server payload packets and its response the run of server->client payload packets before
the next request (or the end of the capture: a response still arriving after the client closed
counts, as the server counted that request). Wire latency = the request's first packet (as it
leaves) to the response's last packet (as it arrives), both stamped where the capture was taken.
A response that ends after the client's FIN or RST on its connection is a pair the tool gave up on
(it stopped at its duration with the request in flight): counted in ``pairs`` and ``after_close``,
left out of the latencies, since the tool never timed it. With a slow backend those are the slowest
requests (a request in flight at the stop is more likely a long one): 1,000 connections and 0-1000 ms
delays over 3 s put ~1,000 of ~5,000 responses there, and the wire's p50 ~50 ms above ab's and oha's.
A tool that stops timing at its duration but closes its connections only at exit (wrk) leaves no FIN
to go by: for it, ``p50_until_stop_ms``/``p99_until_stop_ms`` leave out the responses that ended after
the last request on the capture (the tool's stop; ``answered_after_stop`` of them). Which figure a row
takes is the adapter's ``stops_timing_before_closing`` (harness/row/wire.py).
Handshake time = a connection's opening SYN (the first, if retransmitted) to the server's first SYN|ACK
after it: about the RTT when the shaper delays the handshake (netem), the native hop when it does not.
Payload sizes come from the IP and TCP headers, so a header-only snap length is enough.
Send times (request_send_times): each request's first packet, by the same rule, for the schedule
fidelity of a paced tool (harness/network/fidelity.py).
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import numpy as np

from harness.stats import percentile

MAGIC_US, MAGIC_NS = 0xA1B2C3D4, 0xA1B23C4D
LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL = 1, 113
ETHERTYPE_IPV4, PROTO_TCP = 0x0800, 6
TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10
SYN_ACK, CLOSING = TCP_SYN | TCP_ACK, TCP_FIN | TCP_RST
T = TypeVar("T")


@dataclass(frozen=True)
class Segment:
    ts_ns: int
    client: tuple[bytes, int]   # the side that is not the server port
    to_server: bool
    flags: int
    payload: int


@dataclass
class _Connection:
    request_at: int | None = None   # first byte of the request in progress
    response_end: int | None = None # last response packet so far (None: no response yet)
    seen_data: bool = False         # a SYN after data is a new connection on a reused port
    syn_at: int | None = None       # the client's opening SYN (the first one)
    syn_ack_at: int | None = None   # the server's first SYN|ACK after it
    closed_at: int | None = None    # the client's first FIN or RST


@dataclass
class WireSummary:
    pairs: int                       # request/response pairs (after_close included)
    connections: int
    unanswered: int                  # requests with no response packet before the capture ended
    unsolicited: int                 # server payload runs with no request before them
    packets: int                     # TCP packets of the server port read from the file
    short: int                       # IPv4 packets captured too short to read their TCP header
    first_ns: int | None
    last_ns: int | None
    latencies_ms: np.ndarray = field(repr=False)    # the pairs answered before the client closed
    handshakes_ms: np.ndarray = field(repr=False)   # per connection with both: opening SYN to SYN|ACK
    after_close: int = 0             # pairs whose response ended after the client's FIN or RST
    ended_ns: np.ndarray = field(repr=False, default_factory=lambda: np.array([], dtype=np.int64))  # per latency
    last_request_ns: int | None = None   # the last request's first packet: when the tool stopped sending

    def percentile(self, q: float) -> float | None:
        """The latencies' q-th percentile by the harness's one definition (harness/stats.py: nearest rank)."""
        return percentile(self.latencies_ms, q)

    def out_of_order(self) -> str | None:
        """What no capture in time order gives (None: nothing): a span, latency or handshake below 0."""
        if self.first_ns is not None and self.last_ns is not None and self.last_ns < self.first_ns:
            return "its last packet is stamped before its first"
        for name, values in (("responses end before their request", self.latencies_ms),
                             ("handshakes end before their SYN", self.handshakes_ms)):
            if (values < 0).any():
                return f"{int((values < 0).sum())} {name}"
        return None

    def until_stop_ms(self) -> np.ndarray:
        """The latencies of the responses that ended by the last request (none was in flight at the stop)."""
        if self.last_request_ns is None:
            return self.latencies_ms
        return self.latencies_ms[self.ended_ns <= self.last_request_ns]

    def describe(self) -> dict:
        span = (self.last_ns - self.first_ns) / 1e9 if self.first_ns is not None and self.last_ns is not None else None
        timed, until_stop = len(self.latencies_ms), self.until_stop_ms()
        return {"pairs": self.pairs, "connections": self.connections, "unanswered": self.unanswered,
                "after_close": self.after_close, "unsolicited": self.unsolicited, "packets": self.packets,
                "short": self.short, "span_s": span,
                "p50_ms": self.percentile(50), "p99_ms": self.percentile(99),
                "min_ms": float(self.latencies_ms.min()) if timed else None,
                "max_ms": float(self.latencies_ms.max()) if timed else None,
                "connect_p50_ms": percentile(self.handshakes_ms, 50),
                "connects": len(self.handshakes_ms), "answered_after_stop": timed - len(until_stop),
                "p50_until_stop_ms": percentile(until_stop, 50), "p99_until_stop_ms": percentile(until_stop, 99)}


def _header(data: bytes | mmap.mmap) -> tuple[str, int, int]:
    """The file's byte order, nanoseconds per timestamp fraction unit, and link type."""
    if len(data) < 24:
        raise ValueError("not a pcap file: shorter than its 24-byte header")
    for order in "<>":
        magic, = struct.unpack_from(order + "I", data, 0)
        if magic in (MAGIC_US, MAGIC_NS):
            return order, 1 if magic == MAGIC_NS else 1000, struct.unpack_from(order + "I", data, 20)[0]
    raise ValueError(f"not a classic pcap file (magic {bytes(data[:4]).hex()}); pcapng is not supported")


def _records(data: bytes | mmap.mmap) -> Iterator[tuple[int, int, int]]:
    """(timestamp ns, offset of the link-layer frame, captured length) per packet."""
    order, scale, _ = _header(data)
    record = struct.Struct(order + "IIII")
    offset, end = 24, len(data)
    while offset + 16 <= end:
        seconds, fraction, captured, _ = record.unpack_from(data, offset)
        offset += 16
        if offset + captured > end:
            break                      # cut short (a killed capture): the partial packet is dropped
        yield seconds * 1_000_000_000 + fraction * scale, offset, captured
        offset += captured


def _link_layout(data: bytes | mmap.mmap) -> tuple[int, int]:
    """The link-layer header's length and where its ethertype is."""
    link = _header(data)[2]
    if link == LINKTYPE_ETHERNET:
        return 14, 12
    if link == LINKTYPE_LINUX_SLL:
        return 16, 14
    raise ValueError(f"unsupported link type {link} (Ethernet and Linux cooked are)")


def client_payloads(data: bytes | mmap.mmap, server_port: int) -> Iterator[bytes]:
    """The payload bytes, as captured, of each IPv4 TCP segment sent to ``server_port`` that carries some
    (harness/network/openers.py reads a connection's first bytes from them)."""
    header, ethertype_at = _link_layout(data)
    for _, frame, captured in _records(data):
        if captured < header + 20 or struct.unpack_from("!H", data, frame + ethertype_at)[0] != ETHERTYPE_IPV4:
            continue
        ip = frame + header
        tcp = ip + (data[ip] & 0x0F) * 4
        if data[ip + 9] != PROTO_TCP or tcp + 13 > frame + captured:
            continue
        start = tcp + (data[tcp + 12] >> 4) * 4
        if struct.unpack_from("!H", data, tcp + 2)[0] == server_port and start < frame + captured:
            yield bytes(data[start:frame + captured])


def segments(data: bytes | mmap.mmap, server_port: int) -> Iterator[Segment | None]:
    """The TCP segments to or from ``server_port`` (IPv4), oldest first as captured; None for an
    IPv4 packet captured too short to read its TCP header."""
    header, ethertype_at = _link_layout(data)
    ports = struct.Struct("!HH")
    for ts_ns, frame, captured in _records(data):
        if captured < header + 20 or struct.unpack_from("!H", data, frame + ethertype_at)[0] != ETHERTYPE_IPV4:
            continue
        ip = frame + header
        ihl = (data[ip] & 0x0F) * 4
        if data[ip + 9] != PROTO_TCP:
            continue
        if captured < header + ihl + 14:
            yield None
            continue
        total, = struct.unpack_from("!H", data, ip + 2)
        tcp = ip + ihl
        source_port, dest_port = ports.unpack_from(data, tcp)
        payload = total - ihl - (data[tcp + 12] >> 4) * 4
        if dest_port == server_port:
            yield Segment(ts_ns, (bytes(data[ip + 12:ip + 16]), source_port), True, data[tcp + 13], payload)
        elif source_port == server_port:
            yield Segment(ts_ns, (bytes(data[ip + 16:ip + 20]), dest_port), False, data[tcp + 13], payload)


class _Pairer:
    def __init__(self) -> None:
        self.open: dict[tuple[bytes, int], _Connection] = {}
        self.latencies: list[int] = []
        self.ended: list[int] = []
        self.handshakes: list[int] = []
        self.last_request: int | None = None
        self.connections = self.unanswered = self.unsolicited = self.after_close = 0

    def _close(self, conn: _Connection) -> None:
        if conn.request_at is not None:
            if conn.response_end is None:
                self.unanswered += 1
            elif conn.closed_at is not None and conn.response_end > conn.closed_at:
                self.after_close += 1
            else:
                self.latencies.append(conn.response_end - conn.request_at)
                self.ended.append(conn.response_end)
        conn.request_at = conn.response_end = None

    def feed(self, seg: Segment) -> None:
        conn = self.open.get(seg.client)
        opening = seg.to_server and seg.flags & SYN_ACK == TCP_SYN
        if conn is None or (opening and conn.seen_data):
            if conn is not None:
                self._close(conn)        # the client reused the port: a new connection
            conn = self.open[seg.client] = _Connection()
            self.connections += 1
        if opening and conn.syn_at is None:
            conn.syn_at = seg.ts_ns
        elif (not seg.to_server and seg.flags & SYN_ACK == SYN_ACK and conn.syn_at is not None
              and conn.syn_ack_at is None):
            conn.syn_ack_at = seg.ts_ns
            self.handshakes.append(seg.ts_ns - conn.syn_at)
        if seg.to_server and seg.flags & CLOSING and conn.closed_at is None:
            conn.closed_at = seg.ts_ns
        if seg.payload > 0 and seg.to_server:
            if conn.response_end is not None or conn.request_at is None:   # a new request
                self._close(conn)
                conn.request_at = self.last_request = seg.ts_ns
        elif seg.payload > 0:
            if conn.request_at is None:
                self.unsolicited += 1
            else:
                conn.response_end = seg.ts_ns
        conn.seen_data = conn.seen_data or seg.payload > 0

    def finish(self) -> None:
        for conn in self.open.values():
            self._close(conn)


class _SendTimes(_Pairer):
    """_Pairer's rule for where a request starts, keeping each request's first packet time: every
    request is closed exactly once (by the next request, a reused port or the end of the capture)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[int] = []

    def _close(self, conn: _Connection) -> None:
        if conn.request_at is not None:
            self.sent.append(conn.request_at)
        super()._close(conn)


def request_send_times(path: Path, server_port: int) -> np.ndarray:
    """The first packet's timestamp (ns, sorted) of every request in ``path``, answered or not: as many
    as summarise's pairs + unanswered. Packet by packet (segments), so slower than summarise."""
    def sent(data: mmap.mmap) -> np.ndarray:
        times = _SendTimes()
        for seg in segments(data, server_port):
            if seg is not None:
                times.feed(seg)
        times.finish()
        return np.sort(np.array(times.sent, dtype=np.int64))
    return parsed(path, sent)


def summarise(path: Path, server_port: int) -> WireSummary:
    """Pair every request with its response in ``path``; latencies in ms."""
    summary = parsed(path, lambda data: _summarise_fixed(data, server_port) or _summarise_packets(data, server_port))
    if problem := summary.out_of_order():
        raise CaptureError(f"{path.name} cannot be parsed ({problem}): its timestamps are out of order, a "
                           f"corrupted capture")
    return summary


class CaptureError(ValueError):
    """A capture file this reader cannot parse (not a pcap, cut short, corrupted), in one line."""


def parsed(path: Path, parse: Callable[[mmap.mmap], T]) -> T:
    """``parse`` of the pcap ``path``, mapped in memory; whatever its bytes, a result or a CaptureError. The
    error is raised once the map is closed: raised inside, its traceback would hold numpy views of the map,
    and closing the map would fail with a BufferError in its place."""
    if path.stat().st_size < 24:
        raise CaptureError(f"{path.name} is empty: the capture wrote no pcap header")
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        try:
            return parse(data)
        except Exception as exc:  # noqa: BLE001 - any bytes: a result or this reader's one error
            problem = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
    raise CaptureError(problem if problem.startswith(("not a", "unsupported")) else
                       f"{path.name} cannot be parsed ({problem}): a corrupted or foreign capture")


def _summarise_packets(data: bytes | mmap.mmap, server_port: int) -> WireSummary:
    """Packet by packet: any pcap (the reference the vectorised path is tested against)."""
    pairer, packets, short, first, last = _Pairer(), 0, 0, None, None
    for seg in segments(data, server_port):
        if seg is None:
            short += 1
            continue
        pairer.feed(seg)
        packets += 1
        first = seg.ts_ns if first is None else first
        last = seg.ts_ns
    pairer.finish()
    latencies = np.array(pairer.latencies, dtype=np.int64) / 1e6
    return WireSummary(len(latencies) + pairer.after_close, pairer.connections, pairer.unanswered,
                       pairer.unsolicited, packets, short, first, last, latencies,
                       np.array(pairer.handshakes, dtype=np.int64) / 1e6, pairer.after_close,
                       np.array(pairer.ended, dtype=np.int64), pairer.last_request)


FIXED_SNAPLEN = 64   # harness/network/capture.py's snap length: every TCP packet with timestamps is longer
READ_UPTO = 48       # the frame bytes the numpy path reads: Ethernet, IPv4 without options, TCP to its flags


def _record_offsets(data: bytes | mmap.mmap, order: str) -> np.ndarray | None:
    """Each record's offset in the file; None where a record holds fewer than READ_UPTO frame bytes.
    Most records are cut at FIXED_SNAPLEN (a fixed stride, found with numpy); a file with shorter ones
    (an RST without TCP options is 54 bytes) is walked record by record, ~20x faster than segments()."""
    width = 16 + FIXED_SNAPLEN
    if (len(data) - 24) % width == 0:
        offsets = np.arange(24, len(data), width)
        captured = np.frombuffer(data, dtype=order + "u4", count=len(offsets) * width // 4, offset=24)[2::width // 4]
        if (captured == FIXED_SNAPLEN).all():
            return offsets
    walked = []
    for _, frame, captured in _records(data):
        if captured < READ_UPTO:
            return None
        walked.append(frame - 16)
    return np.array(walked, dtype=np.int64)


def _summarise_fixed(data: bytes | mmap.mmap, server_port: int) -> WireSummary | None:
    """The same pairing with numpy, for the file harness/network/capture.py writes: Ethernet, IPv4 without
    options, every record holding at least READ_UPTO frame bytes. None where the file is anything else
    (the packet path handles it)."""
    order, scale, link = _header(data)
    if link != LINKTYPE_ETHERNET or len(data) == 24:
        return None
    offsets = _record_offsets(data, order)
    if offsets is None or not len(offsets):
        return None
    buffer = np.frombuffer(data, dtype=np.uint8)

    def byte(col: int) -> np.ndarray:                              # col: from the record's start
        return buffer[offsets + col]

    def be16(col: int) -> np.ndarray:
        return byte(col).astype(np.int64) << 8 | byte(col + 1)

    def u32(col: int, endian: str) -> np.ndarray:
        first, *rest = (byte(col + i).astype(np.int64) for i in (range(4) if endian == ">" else range(3, -1, -1)))
        for part in rest:
            first = first << 8 | part
        return first

    if not (byte(30) == 0x45).all():
        return None
    tcp = (be16(28) == ETHERTYPE_IPV4) & (byte(39) == PROTO_TCP)
    sport, dport = be16(50), be16(52)
    to_server = tcp & (dport == server_port)
    keep = to_server | (tcp & (sport == server_port))
    source, destination = u32(42, ">"), u32(46, ">")
    client = np.where(to_server, source << 16 | sport, destination << 16 | dport)[keep]
    ts = (u32(0, order) * 1_000_000_000 + u32(4, order) * scale)[keep]
    payload = (be16(32) - 20 - (byte(62) >> 4).astype(np.int64) * 4)[keep] > 0
    flags, inbound = byte(63)[keep], to_server[keep]
    if not len(ts):
        return WireSummary(0, 0, 0, 0, 0, 0, None, None, np.array([]), np.array([]))
    first, last = int(ts[0]), int(ts[-1])
    by_client = np.argsort(client, kind="stable")                  # per client, in capture order
    client, payload, flags, ts, inbound = (a[by_client] for a in (client, payload, flags, ts, inbound))
    opening = inbound & (flags & SYN_ACK == TCP_SYN)
    starts = _connection_starts(client, payload, opening)
    connection = np.cumsum(starts)
    handshakes = _handshakes(connection, ts, opening, ~inbound & (flags & SYN_ACK == SYN_ACK))
    closed_at = _client_closes(connection, ts, inbound & (flags & CLOSING > 0))
    conn, ts, inbound = connection[payload], ts[payload], inbound[payload]
    if not len(ts):                                                # no payload: connections and handshakes only
        return WireSummary(0, int(starts.sum()), 0, 0, len(client), 0, first, last, np.array([]), handshakes)
    # Runs of payload packets in one direction on one connection: requests and responses.
    run_start = np.r_[True, (conn[1:] != conn[:-1]) | (inbound[1:] != inbound[:-1])]
    first_at = np.flatnonzero(run_start)
    last_at = np.r_[first_at[1:] - 1, len(ts) - 1]
    run_conn, run_in = conn[first_at], inbound[first_at]
    # A server run answers the request run just before it on the same connection.
    answers = ~run_in & np.r_[False, run_in[:-1] & (run_conn[:-1] == run_conn[1:])]
    answered = np.flatnonzero(answers)
    ended = ts[last_at[answered]]
    timed = ended <= closed_at[run_conn[answered]]
    latencies = (ended - ts[first_at[answered - 1]])[timed] / 1e6
    strays = ~run_in & ~answers
    requests = ts[first_at[run_in]]
    return WireSummary(len(answered), int(starts.sum()), int(run_in.sum()) - len(answered),
                       int((last_at[strays] - first_at[strays] + 1).sum()), len(client), 0,
                       first, last, latencies, handshakes, int((~timed).sum()), ended[timed],
                       int(requests.max()) if len(requests) else None)


def _client_closes(conn: np.ndarray, ts: np.ndarray, closing: np.ndarray) -> np.ndarray:
    """Per connection id, its client's first FIN or RST (ns); the int64 maximum where it has none."""
    closed_at = np.full(conn[-1] + 1, np.iinfo(np.int64).max)
    np.minimum.at(closed_at, conn[closing], ts[closing])
    return closed_at


def _handshakes(conn: np.ndarray, ts: np.ndarray, opening: np.ndarray, syn_ack: np.ndarray) -> np.ndarray:
    """Per connection (``conn``: ids in capture order per client), its first opening SYN to the first
    SYN|ACK after it, ms; connections without both are left out."""
    syn_conn, syn_at = np.unique(conn[opening], return_index=True)
    syn_row = np.full(conn[-1] + 1, len(conn))                       # no SYN: after every row
    syn_row[syn_conn] = np.flatnonzero(opening)[syn_at]
    rows = np.flatnonzero(syn_ack)
    rows = rows[rows > syn_row[conn[rows]]]
    answered, first = np.unique(conn[rows], return_index=True)
    return (ts[rows[first]] - ts[syn_row[answered]]) / 1e6


def _connection_starts(client: np.ndarray, payload: np.ndarray, opening: np.ndarray) -> np.ndarray:
    """A connection starts at a client's first packet, or at an opening SYN with payload since the
    client's previous SYN (a reused port; a retransmitted SYN has none)."""
    index = np.arange(len(client))
    group_start = np.r_[True, client[1:] != client[:-1]]
    marker = np.maximum.accumulate(np.where(opening | group_start, index, 0))
    previous = np.r_[0, marker[:-1]]                               # the last marker before each packet
    seen = np.cumsum(payload)
    before = np.r_[0, seen[:-1]]                                   # payload packets before each packet
    since = before - (seen[previous] - payload[previous])         # ... since the previous marker
    return group_start | (opening & (since > 0))
