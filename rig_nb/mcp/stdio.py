"""An MCP server over stdio: the child process, its three pipes, and how it ends.

rig_nb's own transport rather than the SDK's `stdio_client`, for what the contract asks
and that one does not give: the process ends as `terminate, kill after 5 s` (the SDK
closes stdin, then waits 2 s, terminates, waits 2 s and kills), its stderr is drained
into a bounded tail (a flood never blocks the server nor grows memory), one message is
capped in size, and the caller sees the pid and the exit code. Messages are the SDK's
own types (`SessionMessage`, `mcp.types.jsonrpc_message_adapter`), so a `ClientSession`
runs over these streams as over the SDK's.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage

__all__ = ["KILL_AFTER_S", "MAX_MESSAGE", "StderrTail", "StdioServer", "stdio_server"]

# Terminate, then kill a server that is still running this long after.
KILL_AFTER_S = 5.0
# After the kill, how long the loop waits to see the exit before it gives up on the process.
_REAP_S = 2.0
# One JSON-RPC message from the server (a line of stdout): a listing of 10,000 tools is a few MB.
MAX_MESSAGE = 64 << 20
# Messages held between the pipes and the session: a server cannot queue more than this.
_QUEUE = 16
_POLL_S = 0.01


@dataclass
class StderrTail:
    """The last `limit` bytes the server wrote to stderr, whatever it wrote before."""

    limit: int = 64 << 10
    _chunks: deque[bytes] = field(default_factory=deque, repr=False)
    _size: int = 0

    def feed(self, data: bytes) -> None:
        self._chunks.append(data[-self.limit :])
        self._size += len(self._chunks[-1])
        while self._size > self.limit and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    @property
    def size(self) -> int:
        """Bytes held now (never more than `limit` plus one chunk)."""
        return self._size

    def last_line(self) -> str:
        """The last non-blank line written, stripped ("" when none)."""
        text = b"".join(self._chunks).decode("utf-8", "replace")
        for line in reversed(text.splitlines()):
            if line.strip():
                return line.strip()[-500:]
        return ""


@dataclass
class StdioServer:
    """The running server: its process (pid, exit code) and the streams its session uses."""

    process: anyio.abc.Process
    read: MemoryObjectReceiveStream[SessionMessage | Exception]
    write: MemoryObjectSendStream[SessionMessage]

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode


def _signal(process: anyio.abc.Process, sig: signal.Signals) -> None:
    """`sig` to the server's process group (it leads one: start_new_session), else to it alone."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            process.send_signal(sig)
        except ProcessLookupError:
            pass


async def _exited(process: anyio.abc.Process, within: float) -> bool:
    # Polls returncode: Process.wait() also waits for the pipes' EOF, which a child that
    # inherited them can hold open after the server itself has exited.
    with anyio.move_on_after(within):
        while process.returncode is None:
            await anyio.sleep(_POLL_S)
    return process.returncode is not None


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, terminate the group, kill it after KILL_AFTER_S; every wait bounded."""
    if process.stdin is not None:
        try:
            await process.stdin.aclose()
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
    if process.returncode is None:
        _signal(process, signal.SIGTERM)
        if not await _exited(process, KILL_AFTER_S):
            _signal(process, signal.SIGKILL)
            await _exited(process, _REAP_S)


async def _read_stdout(
    process: anyio.abc.Process, out: MemoryObjectSendStream[SessionMessage | Exception]
) -> None:
    """Each line of stdout as a message (a line that is not JSON-RPC as an Exception item)."""
    assert process.stdout is not None
    buf = bytearray()
    async with out:
        try:
            async for chunk in process.stdout:
                start = len(buf)
                buf += chunk
                begin = 0
                at = buf.find(b"\n", start)
                while at >= 0:
                    line = bytes(buf[begin:at]).strip()
                    begin = at + 1
                    if line:
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(
                                line, by_name=False
                            )
                        except ValueError as exc:
                            await out.send(exc)
                        else:
                            await out.send(SessionMessage(message))
                    at = buf.find(b"\n", begin)
                del buf[:begin]
                if len(buf) > MAX_MESSAGE:
                    await out.send(ValueError(f"a message over {MAX_MESSAGE >> 20} MiB"))
                    return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return


async def _write_stdin(
    process: anyio.abc.Process, messages: MemoryObjectReceiveStream[SessionMessage]
) -> None:
    # A server that stopped reading leaves its requests to the call timeout.
    assert process.stdin is not None
    async with messages:
        try:
            async for message in messages:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return


async def _read_stderr(process: anyio.abc.Process, tail: StderrTail) -> None:
    assert process.stderr is not None
    try:
        async for chunk in process.stderr:
            tail.feed(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        return


@asynccontextmanager
async def stdio_server(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | None, tail: StderrTail
) -> AsyncIterator[StdioServer]:
    """Start `argv` (never through a shell) with exactly `env`; on exit end it and its pipes."""
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    # No await between the spawn and the task group: a cancellation there would leak the process.
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](_QUEUE)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](_QUEUE)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_stdout, process, read_in)
            tg.start_soon(_write_stdin, process, write_out)
            tg.start_soon(_read_stderr, process, tail)
            try:
                yield StdioServer(process, read_out, write_in)
            finally:
                with anyio.CancelScope(shield=True):
                    write_in.close()
                    await _stop(process)
                # A kill survivor's child may hold the pipes open: the readers stop here.
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            for stream in (read_in, read_out, write_in, write_out):
                await stream.aclose()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    try:
                        await pipe.aclose()
                    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        pass
            if process.returncode is None:
                # Only a spawn that never reached the task group gets here alive.
                _signal(process, signal.SIGKILL)
                await _exited(process, _REAP_S)
