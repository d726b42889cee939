"""The async half of McpTools: connect, initialize, list the tools, call one, on the loop thread.

Everything here runs inside the event loop that McpTools' background thread owns
(`anyio.from_thread.start_blocking_portal`); the sync half reaches it only through
the portal. The SDK's `ClientSession` speaks the protocol over rig_nb's stdio
transport (`rig_nb.mcp.stdio`) or the SDK's streamable HTTP client.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, types
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from .._version import __version__
from ..errors import RigError
from .stdio import StderrTail, StdioServer, stdio_server

__all__ = ["MAX_PAGES", "Connection", "connect", "server_env"]

# tools/list pages read before the listing is taken as endless.
MAX_PAGES = 1000
# The read timeout of the HTTP client when the call's own timeout is shorter: an SSE stream
# may stay quiet between events; each request is bounded by McpTools' timeout anyway.
_SSE_READ_S = 300.0


def server_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The SDK's default variables (HOME, LOGNAME, PATH, SHELL, TERM, USER), LANG, and `extra`."""
    env = get_default_environment()
    if "LANG" in os.environ:
        env["LANG"] = os.environ["LANG"]
    env.update(extra or {})
    return env


@dataclass
class Connection:
    """A live session, the tools it listed, and (over stdio) the server process."""

    session: ClientSession
    tools: list[types.Tool]
    server: StdioServer | None = None
    tail: StderrTail = field(default_factory=StderrTail)

    def exit_code(self) -> int | None:
        return None if self.server is None else self.server.returncode

    async def closed_reason(self) -> str:
        """Why the connection closed: the process's exit code when it ended (waiting up to 1 s)."""
        if self.server is None:
            return "the connection to the MCP server closed"
        with anyio.move_on_after(1.0):
            while self.server.returncode is None:
                await anyio.sleep(0.01)
        code = self.server.returncode
        why = "the MCP server closed its output" if code is None else f"exited with code {code}"
        if code is not None:
            why = f"the MCP server {why}"
        line = self.tail.last_line()
        return f"{why}; its last stderr line: {line}" if line else why

    async def call(
        self, name: str, arguments: dict[str, Any], timeout: float
    ) -> types.CallToolResult:
        """tools/call within `timeout` seconds; RigError for a timeout or a closed connection."""
        try:
            with anyio.fail_after(timeout):
                result = await self.session.call_tool(name, arguments)
        except TimeoutError:
            raise RigError(f"MCP tool {name!r}: no answer within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise RigError(f"MCP tool {name!r}: {await self.closed_reason()}") from None
            raise RigError(f"MCP tool {name!r}: MCP error {exc.code}: {exc}") from None
        return result


async def _list(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise RigError(f"the tool list did not end after {MAX_PAGES} pages")


@asynccontextmanager
async def connect(
    *,
    argv: Sequence[str] | None,
    url: str | None,
    env: Mapping[str, str],
    cwd: str | None,
    headers: Mapping[str, str] | None,
    timeout: float,
    tail: StderrTail,
    on_server: Any = None,
) -> AsyncIterator[Connection]:
    """Start or reach the server, initialize, list every tool (all within `timeout`), yield.

    `on_server(server)` is called as soon as a stdio server runs, before the handshake,
    so a caller learns its pid even when the handshake fails.
    """
    async with AsyncExitStack() as stack:
        server: StdioServer | None = None
        read: Any
        write: Any
        if argv is not None:
            server = await stack.enter_async_context(stdio_server(argv, env, cwd, tail))
            if on_server is not None:
                on_server(server)
            read, write = server.read, server.write
        else:
            assert url is not None
            client = httpx2.AsyncClient(
                headers=dict(headers or {}),
                timeout=httpx2.Timeout(timeout, read=max(timeout, _SSE_READ_S)),
            )
            await stack.enter_async_context(client)
            read, write = await stack.enter_async_context(
                streamable_http_client(url, http_client=client)
            )
        info = types.Implementation(name="rig_nb", version=__version__)
        session = await stack.enter_async_context(ClientSession(read, write, client_info=info))
        with anyio.fail_after(timeout):
            await session.initialize()
            tools = await _list(session)
        yield Connection(session, tools, server, tail)
