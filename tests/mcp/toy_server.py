"""A small MCP server built with the SDK's own server API (MCPServer), for McpTools' tests.

    python toy_server.py [MODE ...]          over stdio (the default)
    python toy_server.py --http [MODE ...]   streamable HTTP on 127.0.0.1, a free port,
                                             printed as `PORT <n>` on stdout

Tools: echo, add, env (the server's environment as JSON), pid, picture (an image and
an audio block), structured (structured content only), fail (isError), slow (sleeps),
die (the process exits 3 mid-call), shout (writes to stderr, then answers).

Modes change what it does before it serves: `never-start` (never reads stdin),
`exit-at-start` (a line on stderr, then exit 2), `flood` (writes stderr without pause
from a thread, all the time it runs), `many-tools` (10,000 more tools), `big-schema`
(a tool whose input schema is over 1 MB), `odd-names` (tools named with characters
outside [a-zA-Z0-9_-], two that clean to the same name), `stubborn` (SIGTERM ignored, and
it stays alive after its stdin closes: only a kill ends it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from typing import Annotated

MODES = set(sys.argv[1:])


def _fail_early() -> None:
    """The modes that fail at start do so before the SDK's import (seconds on a busy machine)."""
    if "never-start" in MODES:
        print("starting, slowly", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)
    if "exit-at-start" in MODES:
        token = os.environ.get("TOY_TOKEN", "")
        print(f"fatal: bad token {token}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    _fail_early()

from mcp import types  # noqa: E402
from mcp.server.mcpserver import Audio, Image, MCPServer  # noqa: E402
from pydantic import Field  # noqa: E402


class ToyServer(MCPServer):
    """MCPServer whose listing also holds 10,000 listed-only tools in mode `many-tools`
    (registering them one by one would take half a minute)."""

    async def list_tools(self) -> list[types.Tool]:
        tools = await super().list_tools()
        if "many-tools" in MODES:
            schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
            tools += [
                types.Tool(name=f"tool_{i}", description=f"Tool number {i}.", input_schema=schema)
                for i in range(10_000)
            ]
        return tools


server = ToyServer("toy")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo {text}"


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


@server.tool()
def env() -> str:
    """The server's environment variables as a JSON object."""
    return json.dumps(dict(os.environ), sort_keys=True)


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def picture() -> list[Image | Audio]:
    """An image and a sound."""
    return [Image(data=b"\x89PNG....", format="png"), Audio(data=b"RIFF....", format="wav")]


@server.tool()
def structured() -> types.CallToolResult:
    """Structured content only."""
    return types.CallToolResult(content=[], structured_content={"answer": 42, "count": 3})


@server.tool()
def fail(reason: str) -> types.CallToolResult:
    """Always fails with the reason."""
    text = types.TextContent(type="text", text=f"failed on purpose: {reason}")
    return types.CallToolResult(content=[text], is_error=True)


@server.tool()
def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    time.sleep(seconds)
    return "slept"


@server.tool()
def die() -> str:
    """The process exits mid-call."""
    print("dying on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def shout(text: str) -> str:
    """Writes the text to stderr, then answers."""
    print(text, file=sys.stderr, flush=True)
    return "shouted"


def _odd() -> str:
    return "odd"


def _add_modes() -> None:
    if "big-schema" in MODES:

        def big(text: Annotated[str, Field(description="x" * 1_100_000)]) -> str:
            return text

        server.add_tool(big, name="big", description="A tool with a 1 MB schema.")
    if "odd-names" in MODES:
        for name in ("get.weather", "get weather", "a/b:c", "x" * 80, "ok-name_1"):
            server.add_tool(_odd, name=name, description=f"Named {name!r}.")


def _flood() -> None:
    line = b"E" * 1023 + b"\n"
    while True:
        os.write(2, line * 64)


def main() -> None:
    if "stubborn" in MODES:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "flood" in MODES:
        threading.Thread(target=_flood, daemon=True).start()
    _add_modes()
    if "--http" in MODES:
        _serve_http()
    else:
        server.run("stdio")
    while "stubborn" in MODES:
        time.sleep(60)


def _serve_http() -> None:
    import anyio
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
