"""Running the loop in one call, against a loopback server: the helper test modules share.

    def test_x(server, run_loop):
        trace = run_loop.trace(chat_reply("hi"), api="responses", stream=True)
        result = run_loop.result(chat_reply("hi"), prompt="go")  # raises as Client.run does

The replies given are pushed to the scripted server first. Client settings are keywords
of their own (`api`, `key`, `kind`, `max_retries`); every other keyword is a `RunRequest`
field, with `loop_request`'s defaults (model "m", max_tokens 64, prompt "hi").
A module of its own, not conftest (see tests/loopback.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rig_nb import Client, RunRequest, RunResult, Trace
from rig_nb.testing import Handler, Response, ScriptedServer

__all__ = ["LoopRunner", "loop_request"]

Reply = Response | Mapping[str, Any] | Handler


def loop_request(**fields: Any) -> RunRequest:
    """A RunRequest with the suite's defaults: model "m", max_tokens 64, prompt "hi"."""
    merged: dict[str, Any] = {"model": "m", "max_tokens": 64, "prompt": "hi", **fields}
    return RunRequest(merged.pop("model"), merged.pop("max_tokens"), **merged)


@dataclass
class LoopRunner:
    """Runs the loop against `server` with a fresh Client per run (closed after it)."""

    server: ScriptedServer

    def client(
        self, *, api: str = "chat", key: str = "", kind: str = "auto", max_retries: int = 0
    ) -> Client:
        """A Client on the server: `kind` is the server kind ("auto" detects it)."""
        return Client(self.server.base_url, key, api=api, server=kind, max_retries=max_retries)

    def result(
        self,
        *replies: Reply,
        api: str = "chat",
        key: str = "",
        kind: str = "auto",
        max_retries: int = 0,
        **fields: Any,
    ) -> RunResult:
        """`replies` pushed, then `Client.run` (a RigError is raised, with its trace)."""
        self.server.push(*replies)
        with self.client(api=api, key=key, kind=kind, max_retries=max_retries) as client:
            return client.run(loop_request(**fields))

    def trace(
        self,
        *replies: Reply,
        api: str = "chat",
        key: str = "",
        kind: str = "auto",
        max_retries: int = 0,
        **fields: Any,
    ) -> Trace:
        """`replies` pushed, then `Client.run_trace`: the finished trace, never a RigError."""
        self.server.push(*replies)
        with self.client(api=api, key=key, kind=kind, max_retries=max_retries) as client:
            return client.run_trace(loop_request(**fields))
