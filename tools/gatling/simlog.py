"""Reader for Gatling's binary simulation.log (Gatling 3.12 and later write no text log).

It follows Gatling 3.15.1's own writer, io.gatling.core.stats.writer.LogFileDataWriter (gatling-core
sources jar on Maven Central), record by record; Gatling's report generator reads the file the same
way (io.gatling.charts.stats.LogFileReader). All numbers are big-endian (java.nio.ByteBuffer):

  file      := run record, then records until EOF; each record starts with a header byte
  string    := int32 length, then (if length > 0) `length` bytes of java.lang.String's internal value
               and one coder byte (0 = Latin-1, 1 = UTF-16 in the JVM's byte order: little-endian on x86/arm64)
  cached    := int32 index; > 0: a new string follows and gets that index; < 0: the string at -index
  run (0)   := string gatlingVersion, string simulationClassName, int64 start (epoch ms),
               string runDescription, int32 n + n strings (scenarios), int32 n + n (int32 length + bytes) assertions
  request (1) := int32 n + n cached (groups), cached name, int32 start, int32 end (ms since run start),
                 byte ok (1 = OK), cached message
  user (2)  := int32 scenario, byte start, int32 timestamp (ms since run start)
  group (3) := int32 n + n cached, int32 start, int32 end, int32 cumulatedResponseTime, byte ok
  error (4) := cached message, int32 timestamp
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Versions whose writer this reader was checked against (the format is Gatling-internal and may
# change in any release: re-check LogFileDataWriter.scala before adding one).
KNOWN_VERSIONS = ("3.15.1",)
RUN, REQUEST, USER, GROUP, ERROR = range(5)
_INT, _LONG = struct.Struct(">i"), struct.Struct(">q")
# The usual request record after its header: no group, name and message already cached.
_REQUEST_CACHED = struct.Struct(">iiiibi")
_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


class SimulationLogError(Exception):
    pass


@dataclass
class SimulationLog:
    gatling_version: str
    simulation: str
    run_start_ms: int
    scenarios: list[str]
    # per request, in log order: its name (the DSL's http("name")), start and end in ms since run_start_ms, OK or not
    names: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    ok: list[bool] = field(default_factory=list)
    messages: dict[str, int] = field(default_factory=dict)   # KO message -> count
    users_started: int = 0
    users_ended: int = 0
    errors: int = 0                                          # error records (crashes, not KO requests)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0
        self.cache: dict[int, str] = {}

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise SimulationLogError(f"truncated at byte {self.pos} (wanted {n} more)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def byte(self) -> int:
        return self._take(1)[0]

    def int(self) -> int:
        return _INT.unpack(self._take(4))[0]

    def long(self) -> int:
        return _LONG.unpack(self._take(8))[0]

    def string(self) -> str:
        length = self.int()
        if length < 0:
            raise SimulationLogError(f"negative string length at byte {self.pos - 4}")
        if length == 0:
            return ""
        value, coder = self._take(length), self.byte()
        if coder not in (0, 1):
            raise SimulationLogError(f"unknown string coder {coder} at byte {self.pos - 1}")
        return value.decode("latin-1" if coder == 0 else _UTF16)

    def cached(self) -> str:
        index = self.int()
        if index >= 0:
            self.cache[index] = text = self.string()
            return text
        try:
            return self.cache[-index]
        except KeyError:
            raise SimulationLogError(f"cached string {-index} used before it was written") from None


def read(path: Path) -> SimulationLog:
    r = _Reader(path.read_bytes())
    if not r.data:
        raise SimulationLogError(f"{path.name} is empty")
    if r.byte() != RUN:
        raise SimulationLogError(f"{path.name} does not start with a run record (not a binary Gatling log?)")
    version = r.string()
    if version not in KNOWN_VERSIONS:
        raise SimulationLogError(f"{path.name} was written by Gatling {version!r}; this reader follows the "
                                 f"format of {', '.join(KNOWN_VERSIONS)}")
    log = SimulationLog(gatling_version=version, simulation=r.string(), run_start_ms=r.long(), scenarios=[])
    r.string()                                          # run description
    log.scenarios = [r.string() for _ in range(r.int())]
    for _ in range(r.int()):                            # assertions (boopickle bytes)
        r._take(r.int())
    data, size = r.data, len(r.data)
    while r.pos < size:
        header = data[r.pos]
        r.pos += 1
        if header == REQUEST and r.pos + _REQUEST_CACHED.size <= size:
            groups, name, start, end, ok, message = _REQUEST_CACHED.unpack_from(data, r.pos)
            if groups == 0 and name < 0 and message < 0 and -name in r.cache and -message in r.cache:
                r.pos += _REQUEST_CACHED.size
                log.names.append(r.cache[-name])
                log.starts.append(start)
                log.ends.append(end)
                log.ok.append(ok == 1)
                if ok != 1:
                    text = r.cache[-message]
                    log.messages[text] = log.messages.get(text, 0) + 1
                continue
        if header == REQUEST:
            for _ in range(r.int()):
                r.cached()
            log.names.append(r.cached())
            log.starts.append(r.int())
            log.ends.append(r.int())
            ok = r.byte() == 1
            log.ok.append(ok)
            message = r.cached()
            if not ok:
                log.messages[message] = log.messages.get(message, 0) + 1
        elif header == USER:
            r.int()
            if r.byte() == 1:
                log.users_started += 1
            else:
                log.users_ended += 1
            r.int()
        elif header == GROUP:
            for _ in range(r.int()):
                r.cached()
            r.int(), r.int(), r.int(), r.byte()
        elif header == ERROR:
            r.cached()
            r.int()
            log.errors += 1
        else:
            raise SimulationLogError(f"unknown record header {header} at byte {r.pos - 1}")
    return log
