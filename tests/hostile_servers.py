"""Hostile endpoints shared by the hostile tests of every wire: a key and a secret path to
leak, a server that drips, one that echoes what it was sent, and a timer for a failing call."""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from rig_nb import BackendError
from rig_nb.testing import Response

KEY = "sk-Ab3/Xy9+hostile=KEY"


def drip(first: bytes, every_s: float, total: int = 10_000) -> Iterator[bytes]:
    """One byte at a time, well under any read timeout: minutes in all if nobody stops it."""
    yield first
    for _ in range(total):
        time.sleep(every_s)
        yield b" "


def elapsed(call: Any) -> tuple[float, BaseException]:
    start = time.monotonic()
    with pytest.raises(BackendError) as info:
        call()
    return time.monotonic() - start, info.value


def echoing(message: Any, status: int = 401, html: bool = False) -> Response:
    if html:
        return Response(f"<html><body><h1>{message}</h1></body></html>", status=status)
    return Response({"error": {"message": message, "details": {"inner": message}}}, status=status)


SECRET_PATH = "/gw-0123456789abcdef/tenant-x/v1"


def gzip_bomb(total: int) -> Iterator[bytes]:
    comp = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"\0" * (1 << 20)
    for _ in range(total // len(block)):
        out = comp.compress(block)
        if out:
            yield out
    yield comp.flush()
