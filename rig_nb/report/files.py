"""The files a report reads and writes: regular files only, checked by path and by descriptor.

A FIFO, a device or a directory would block or fail half way: `check_path` refuses
them before any request is made, and `open_regular` refuses them again on the opened
descriptor, so a path swapped after the check cannot block either. html.py writes
through it, and jsonl.py writes and reads through it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["check_path", "open_regular", "write_file"]


def check_path(path: str | os.PathLike[str], *, write: bool) -> Path:
    """`path` as a Path, or a ValueError saying why it cannot be read (or written) as a file.

    Only a regular file is read, and only a regular file (or a new one in an existing
    directory) is written: a FIFO, a device or a directory would block or fail half way.
    Checked without opening, so it can run before any request is made.
    """
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        if not write:
            raise ValueError(f"{target}: no such file") from None
        parent = target.parent
        if not parent.is_dir():
            raise ValueError(f"{target}: directory {str(parent)!r} does not exist") from None
        return target
    except OSError as exc:
        raise ValueError(f"{target}: {exc.strerror or type(exc).__name__}") from None
    refused = _refusal(target, mode)
    if refused is not None:
        raise ValueError(refused)
    return target


def _refusal(target: Path, mode: int) -> str | None:
    """Why a file of this mode is not read or written, or None for a regular file."""
    if stat.S_ISDIR(mode):
        return f"{target}: is a directory, not a file"
    if not stat.S_ISREG(mode):
        return f"{target}: not a regular file (a pipe, socket or device)"
    return None


# Opening a FIFO waits for its other end unless O_NONBLOCK is given; the descriptor is checked
# before any read or write, so a path swapped for a FIFO after check_path cannot block either.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def open_regular(path: str | os.PathLike[str], *, write: bool) -> BinaryIO:
    """`path` opened for reading (or for writing, emptied), or a ValueError naming it when it
    is not a regular file (or a new one in an existing directory)."""
    target = Path(path)
    # O_TRUNC empties only a regular file, the one kind not refused below.
    flags = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if write else os.O_RDONLY
    try:
        fd = os.open(target, flags | _NONBLOCK, 0o666)
    except OSError as exc:
        fd, reason = -1, exc.strerror or type(exc).__name__
    if fd < 0:
        check_path(target, write=write)  # says why where it can (no such file, a FIFO, ...)
        raise ValueError(f"{target}: {reason}")
    try:
        refused = _refusal(target, os.fstat(fd).st_mode)
        if refused is not None:
            raise ValueError(refused)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "wb" if write else "rb")


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """`path` emptied (or made) and holding `data`; a ValueError when it is not a regular file."""
    with open_regular(path, write=True) as f:
        f.write(data)
