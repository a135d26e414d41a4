"""How each HTTP/2 connection opened, on the wire (issue 38): a second, small capture beside the run's
(harness/network/capture.py) keeps, in full, only the client's packets that open a connection's talk: the h2c
connection preface, a TLS ClientHello, and any HTTP/1.x request line (an h2c port spoken to in HTTP/1.1). A
ClientHello's ALPN extension says which protocols the tool offered. The server's choice is not on the wire: TLS 1.3
sends it encrypted (EncryptedExtensions), so for h2 the wire shows the offer and the file server's log what was
spoken (harness/row/target.py). Streams per connection are not read: HEADERS frames are encrypted over TLS, and the
capture keeps only the first packet of an h2c connection.
"""
from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from harness.network.wire import client_payloads, parsed

H2C_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
TLS_HANDSHAKE, CLIENT_HELLO, ALPN_EXTENSION = 0x16, 0x01, 16
HTTP1_METHODS = (b"GET ", b"POST", b"HEAD", b"PUT ", b"DELE", b"OPTI", b"PATC")
SNAPLEN = 4096             # a ClientHello with its extensions fits (tools send 200-1,800 bytes)
MAX_PACKETS = 100_000      # one per connection, except HTTP/1.x requests on an h2c port (a failed run anyway)


def bpf_filter(host: str, port: int) -> str:
    """The client's packets to ``port`` whose payload starts with the h2c preface ("PRI "), a TLS ClientHello
    (record 0x16, handshake type 1), or an HTTP/1.x method."""
    start = "((tcp[12] & 0xf0) >> 2)"
    words = " or ".join(f"tcp[{start}:4] = 0x{method.hex()}" for method in (b"PRI ", *HTTP1_METHODS))
    return (f"tcp and dst host {host} and dst port {port} and "
            f"({words} or (tcp[{start}:1] = 0x{TLS_HANDSHAKE:02x} and tcp[{start} + 5:1] = 0x{CLIENT_HELLO:02x}))")


@dataclass
class Openers:
    h2c_prefaces: int = 0              # connections that opened with HTTP/2's preface (prior knowledge)
    client_hellos: int = 0
    alpn_offers: Counter = field(default_factory=Counter)   # "h2,http/1.1" -> ClientHellos offering that list
    http1_requests: int = 0            # HTTP/1.x request lines (first packets of requests, not connections)
    unreadable: int = 0                # ClientHellos cut short or malformed

    @property
    def http2(self) -> int:
        """Connections that opened in HTTP/2: the h2c preface, or a ClientHello offering h2."""
        return self.h2c_prefaces + sum(n for offer, n in self.alpn_offers.items() if "h2" in offer.split(","))

    def describe(self) -> dict:
        return {"h2c_prefaces": self.h2c_prefaces, "client_hellos": self.client_hellos,
                "alpn_offers": dict(self.alpn_offers), "http1_requests": self.http1_requests,
                "unreadable": self.unreadable, "http2": self.http2}


def read(pcap: Path, server_port: int) -> Openers:
    """How the connections in ``pcap`` opened; whatever its bytes, a CaptureError (a ValueError) or the counts."""
    return parsed(pcap, lambda data: _counted(data, server_port))


def _counted(data: bytes, server_port: int) -> Openers:
    openers = Openers()
    for payload in client_payloads(data, server_port):
        if payload.startswith(H2C_PREFACE[:4]):
            openers.h2c_prefaces += payload.startswith(H2C_PREFACE)
        elif payload[:1] == bytes([TLS_HANDSHAKE]):
            openers.client_hellos += 1
            offer = alpn_offer(payload)
            if offer is None:
                openers.unreadable += 1
            else:
                openers.alpn_offers[",".join(offer) or "none"] += 1
        elif payload.startswith(HTTP1_METHODS):
            openers.http1_requests += 1
    return openers


def alpn_offer(record: bytes) -> list[str] | None:
    """The protocols a TLS ClientHello record offers in its ALPN extension ([] without one; None: unreadable)."""
    try:
        if record[0] != TLS_HANDSHAKE or record[5] != CLIENT_HELLO:
            return None
        at = 5 + 4 + 2 + 32                                    # handshake header, client version, random
        at += 1 + record[at]                                   # session id
        at += 2 + struct.unpack_from("!H", record, at)[0]      # cipher suites
        at += 1 + record[at]                                   # compression methods
        end = at + 2 + struct.unpack_from("!H", record, at)[0]
        at += 2
        if end > len(record):
            return None
        while at + 4 <= end:
            kind, length = struct.unpack_from("!HH", record, at)
            if kind == ALPN_EXTENSION:
                return _names(record[at + 6:at + 4 + length])
            at += 4 + length
        return []
    except (IndexError, struct.error):
        return None


def _names(data: bytes) -> list[str]:
    names, at = [], 0
    while at < len(data):
        names.append(data[at + 1:at + 1 + data[at]].decode(errors="replace"))
        at += 1 + data[at]
    return names
