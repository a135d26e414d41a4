"""Writing a file so that a crash leaves the old one or the new one, never half of either; reading what a
server appended to its log since an offset."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from harness.store.safe import write_text_inside


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """``text`` into ``path``: a temporary file in the same folder (made 0600, so a private ``mode`` is
    never readable by others on the way), flushed to disk, given ``mode``, then renamed over ``path`` (a link
    at that name is replaced, never written through): harness/store/safe.py's rule, in ``path``'s folder."""
    write_text_inside(path.parent, path.name, text, mode)


def lines_since(path: Path, offset: int) -> Iterator[str]:
    """The lines appended to the log ``path`` after byte ``offset`` (its size when a run began), one at a time (a
    log holds a line per request: millions in a run); none when the server has not created it yet."""
    try:
        log = path.open("rb")
    except FileNotFoundError:
        return
    with log:
        log.seek(offset)
        for line in log:
            yield line.decode(errors="replace").rstrip("\r\n")
