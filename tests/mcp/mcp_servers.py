"""MCP servers for the McpTools tests: the toy server (tests/mcp/toy_server.py, built with the
SDK's MCPServer) over stdio or HTTP, and checks that a server process and McpTools' threads
are gone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from project_setup import CACHE, run_setup

TOY = Path(__file__).resolve().parent / "toy_server.py"


def toy(*modes: str) -> list[str]:
    """The argv that starts the toy server over stdio in `modes`."""
    return [sys.executable, str(TOY), *modes]


def pid_gone(pid: int) -> bool:
    """True when no process has this pid (the server was reaped, not left a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def thread_names() -> set[str]:
    """The threads alive, but the demo endpoint's request handlers (they come and go with
    the loop's requests and are not McpTools')."""
    return {
        f"{t.name}:{t.ident}"
        for t in threading.enumerate()
        if not t.name.endswith("(process_request_thread)")
    }


def left_behind(before: set[str]) -> set[str]:
    """The threads alive now that were not alive at `before`: what the code under test left.
    Threads of other tests that end meanwhile (compare's closer) do not count."""
    return thread_names() - before


@contextmanager
def toy_http(*modes: str) -> Iterator[str]:
    """The toy server over streamable HTTP on 127.0.0.1: its MCP endpoint's URL."""
    proc = subprocess.Popen(
        [*toy("--http", *modes)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    try:
        words = proc.stdout.readline().split()
        assert words[:1] == ["PORT"], words
        yield f"http://127.0.0.1:{words[1]}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


REPO = Path(__file__).resolve().parents[2]
# Keep in step with scripts/setup-mcp (the install is keyed by it).
EVERYTHING_VERSION = "2026.8.31"


def everything_argv() -> list[str]:
    """`node .../server-everything/dist/index.js stdio`, installed by scripts/setup-mcp first
    (about 10 s once; then it returns at once)."""
    run_setup("mcp", 600)
    cache = CACHE
    package = "node_modules/@modelcontextprotocol/server-everything"
    entry = cache / f"mcp-everything-{EVERYTHING_VERSION}" / package / "dist" / "index.js"
    assert entry.is_file(), f"{entry} is missing after scripts/setup-mcp"
    return ["node", str(entry), "stdio"]
