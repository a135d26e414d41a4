"""One rule for every file the harness (and the report) writes under a results folder, which may come from
elsewhere (a colleague's run, a CI artifact) and be run on as root:

  * nothing outside it: a path must lie under the folder once normalised (no ``..`` out of it);
  * no symbolic link followed below it: every folder on the way is opened with O_NOFOLLOW relative to its
    parent's descriptor (openat), so a link planted anywhere, even between a check and the write, is refused;
  * atomic: a file is written to a temporary file in its own folder, flushed, then renamed over the old one,
    so a crash leaves the old content or the new, never half of either; a link at the file's own name is
    replaced by the file, never written through.

The folder itself (``root``) may be reached through links (``results/latest``): the user named it.

    write_text_inside(root, root / "report" / "index.html", html)
    write_bytes_inside(root, root / "report" / "chart.png", png)
    copy_inside(root, root / "runs.csv", root / "runs.csv.before-rederive")
    make_dir_inside(root, root / "report")
    remove_tree_inside(root, root / "vu20-rtt0.1" / "wrk" / "old")
"""
from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath

from harness.errors import HarnessError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafePath(HarnessError):
    """A path under a results folder that the harness refuses to write: a link, or outside the folder."""


def relative_parts(root: Path, path: Path | str) -> tuple[str, ...]:
    """``path`` (absolute, or relative to ``root``) as its names below ``root``, normalised without touching
    the disk; UnsafePath when it leads outside ``root`` or is ``root`` itself."""
    given, absolute_root = PurePath(path), PurePath(os.path.abspath(root))
    if given.is_relative_to(root):
        relative = given.relative_to(root)
    elif not given.is_absolute():
        relative = given
    elif given.is_relative_to(absolute_root):
        relative = given.relative_to(absolute_root)
    else:
        raise UnsafePath(f"{path} is outside the results folder {root}: nothing is written there")
    parts: list[str] = []
    for name in relative.parts:
        if name == "..":
            if not parts:
                raise UnsafePath(f"{path} leads outside the results folder {root}: nothing is written there")
            parts.pop()
        elif name not in ("", "."):
            parts.append(name)
    if not parts:
        raise UnsafePath(f"{path} is the results folder {root} itself, not a file in it")
    return tuple(parts)


def _refused(root: Path, parts: tuple[str, ...], exc: OSError) -> UnsafePath:
    where = Path(root, *parts)
    if os.path.islink(where):
        return UnsafePath(f"{where} is a symbolic link (to {os.readlink(where)}): the harness writes only inside a "
                          f"results folder and follows no link in it; remove the link (or copy the folder afresh)")
    return UnsafePath(f"{where} is not a folder the harness can write into ({exc.strerror}); remove it or "
                      f"copy the results folder afresh")


@contextmanager
def _folder_fd(root: Path, parts: tuple[str, ...], create: bool) -> Iterator[int]:
    """A descriptor of ``root/parts...``, each folder below ``root`` opened without following a link
    (made when ``create``, the folder itself too)."""
    if create:
        Path(root).mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, name in enumerate(parts):
            if create:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except (NotADirectoryError, OSError) as exc:
                if isinstance(exc, FileNotFoundError) and not create:
                    raise
                raise _refused(root, parts[:index + 1], exc) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def write_bytes_inside(root: Path, path: Path | str, data: bytes, mode: int = 0o644) -> Path:
    """``data`` into ``path`` under ``root`` by the rule above (its folders made as needed); returns the path.
    The temporary file is 0600 until renamed, so a private ``mode`` is never readable by others on the way."""
    parts = relative_parts(root, path)
    with _folder_fd(root, parts[:-1], create=True) as folder:
        temporary = f".{parts[-1][:100]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            if _is_folder(parts[-1], folder):
                raise UnsafePath(f"{Path(root, *parts)} is a folder: a file of that name cannot be written")
            os.replace(temporary, parts[-1], src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=folder)
            except FileNotFoundError:
                pass
            raise
    return Path(root, *parts)


def write_text_inside(root: Path, path: Path | str, text: str, mode: int = 0o644) -> Path:
    """``text`` (UTF-8, newlines as given) into ``path`` under ``root``: see write_bytes_inside."""
    return write_bytes_inside(root, path, text.encode(), mode)


def read_bytes_inside(root: Path, path: Path | str) -> bytes:
    """A file under ``root``, read without following a link on the way or at its name."""
    parts = relative_parts(root, path)
    with _folder_fd(root, parts[:-1], create=False) as folder:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise _refused(root, parts, exc) from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise UnsafePath(f"{Path(root, *parts)} is not a regular file")
            return handle.read()


def copy_inside(root: Path, source: Path | str, destination: Path | str) -> Path:
    """``source`` copied to ``destination``, both under ``root``, neither through a link."""
    return write_bytes_inside(root, destination, read_bytes_inside(root, source))


def make_dir_inside(root: Path, path: Path | str) -> Path:
    """``path`` under ``root`` and the folders on the way, made where missing; a link among them is refused."""
    parts = relative_parts(root, path)
    with _folder_fd(root, parts, create=True):
        pass
    return Path(root, *parts)


def remove_tree_inside(root: Path, path: Path | str) -> None:
    """``path`` under ``root`` removed with what it holds; a link at its name is removed, never followed
    (shutil.rmtree's descriptor-based walk follows none below it either). Missing: nothing to do."""
    parts = relative_parts(root, path)
    try:
        with _folder_fd(root, parts[:-1], create=False) as folder:
            _remove_entry(parts[-1], folder)
    except FileNotFoundError:
        return


def empty_dir_inside(root: Path, path: Path | str, keep: Callable[[str], bool] = lambda name: False) -> Path:
    """``path`` under ``root`` made where missing, and emptied of every entry but those ``keep`` names."""
    parts = relative_parts(root, path)
    with _folder_fd(root, parts, create=True) as folder:
        for name in os.listdir(folder):
            if not keep(name):
                _remove_entry(name, folder)
    return Path(root, *parts)


def _is_folder(name: str, folder: int) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _remove_entry(name: str, folder: int) -> None:
    if _is_folder(name, folder):
        shutil.rmtree(name, dir_fd=folder)
    else:
        try:
            os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            pass


def links_on_the_way(root: Path, paths: list[Path]) -> str | None:
    """The first of ``paths`` under ``root`` that is, or lies beneath, a symbolic link (None: none does):
    a results folder to resume is checked with it before anything starts."""
    for path in paths:
        parts = relative_parts(root, path)
        for index in range(1, len(parts) + 1):
            here = Path(root, *parts[:index])
            if os.path.islink(here):
                return f"{here} is a symbolic link (to {os.readlink(here)})"
            if not os.path.isdir(here):
                break
    return None
