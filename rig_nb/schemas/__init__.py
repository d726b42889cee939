"""A tool's JSON Schema in what a server kind holds: `sanitize` and `sanitize_tools`.

    schema, changes = sanitize(tool.input_schema, server="llama.cpp")
    tools, changes = sanitize_tools(mcp.tools, server="ollama")

Every dialect (`server="unknown"` is the base) inlines local `$ref`s into `$defs` /
`definitions` (a recursive one becomes `{"type": "object"}`, and the definitions are
dropped once inlined), writes `type` lists as `anyOf`, and drops `$schema`, `$id` and
`$comment`. Each server kind then applies its own rules (its profile's `schema_dialect`,
`rig_nb.servers`):
llama.cpp anchors unanchored patterns and drops the keywords it does not enforce, so
the caller learns what the server will not hold. Each change is one line that starts
with its JSON pointer in the returned schema.

The input is never changed; a schema the dialect holds as it is comes back equal, with
no lines. The work is linear in the schema's size, with explicit stacks: a value that
is not a JSON object, a schema that contains itself, one 1 MB deep, answer in linear
time or raise ValueError naming the JSON pointer (never RecursionError).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..servers import SERVERS, Server
from ..tool import Tool
from .walk import Walk

__all__ = ["sanitize", "sanitize_tools"]


def _server(server: str | Server) -> Server:
    """The profile `server` names (a kind's name or a `Server`); ValueError naming the kinds
    for any other value."""
    if isinstance(server, Server):
        return server
    found = SERVERS.get(server) if isinstance(server, str) else None
    if found is None:
        raise ValueError(f"unknown server kind {server!r}: one of {', '.join(SERVERS)}")
    return found


def sanitize(
    schema: Mapping[str, Any], *, server: str | Server = "unknown"
) -> tuple[dict[str, Any], list[str]]:
    """A copy of `schema` in what `server`'s dialect holds, and one line per change."""
    profile = _server(server)
    walk = Walk(schema, profile.schema_dialect, profile.name)
    return walk.run(), walk.lines


def sanitize_tools(
    tools: Iterable[Tool], *, server: str | Server = "unknown"
) -> tuple[tuple[Tool, ...], dict[str, list[str]]]:
    """Each tool with its schema sanitized for `server`, and each tool's lines by name."""
    server = _server(server)
    out: list[Tool] = []
    changes: dict[str, list[str]] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            raise ValueError(f"not a Tool: {type(tool).__name__}")
        schema, lines = sanitize(tool.input_schema, server=server)
        out.append(dataclasses.replace(tool, input_schema=schema))
        changes.setdefault(tool.name, []).extend(lines)
    return tuple(out), changes
