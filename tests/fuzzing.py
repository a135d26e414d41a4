"""The fuzzers' shared parts (tests/test_fuzz.py; `make fuzz` runs them longer): a seeded stream of inputs made
from real ones (bytes flipped, cut short, chunks repeated or dropped), and the budget.

LTH_FUZZ_INPUTS: inputs per fuzzer (the unit tier's default keeps each to a few seconds); LTH_FUZZ_SEED: the seed."""
from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

SEED = int(os.environ.get("LTH_FUZZ_SEED", "54"))


def budget(default: int) -> int:
    """Inputs per fuzzer: LTH_FUZZ_INPUTS, else ``default`` (the unit tier's)."""
    return int(os.environ.get("LTH_FUZZ_INPUTS", default))


def mutated(original: bytes, rng: random.Random) -> bytes:
    """``original`` changed one way: a few bytes set at random, cut short, a chunk dropped or repeated, or
    bytes no UTF-8 decoder takes put in."""
    data = bytearray(original)
    how = rng.randrange(5)
    if how == 0 and data:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == 1:
        del data[rng.randint(0, len(data)):]
    elif how == 2 and data:
        start = rng.randrange(len(data))
        del data[start:start + rng.randint(1, 64)]
    elif how == 3 and data:
        start = rng.randrange(len(data))
        data[start:start] = data[start:start + rng.randint(1, 64)]
    else:
        at = rng.randint(0, len(data))
        data[at:at] = rng.choice([b"\xff\xfe", b"\xc3", b"\x00", b"\xed\xa0\x80", b"-", b"NaN", b"1e999", b"-57"])
    return bytes(data)


def truncations(original: bytes, points: int) -> Iterator[bytes]:
    """``original`` cut at ``points`` places spread over its length (a tool killed mid-write)."""
    for index in range(points):
        yield original[:len(original) * index // points]


@dataclass
class Tally:
    """What a fuzzer saw: inputs, crashes (an exception the contract does not allow) and wrong acceptances
    (an input taken whose result breaks an invariant), each with its first examples."""
    inputs: int = 0
    crashes: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def line(self, name: str) -> str:
        return (f"{name}: {self.inputs} inputs, {len(self.crashes)} crashes, {len(self.wrong)} wrong acceptances"
                + (f"; first: {(self.crashes + self.wrong)[0]}" if self.crashes or self.wrong else ""))
