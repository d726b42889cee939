"""A persona that fails only under load: a server that mixes concurrent requests' streams.

Tool-call parsers that keep their state per server instead of per request hand
one stream's call arguments to another running at the same time (vLLM #48089;
GLM argument errors only under concurrency, vLLM PR#49249; mlx-lm #965). A
one-request probe never sees it; compare's load sweep and the doctor's
`concurrency` check send requests that each carry a nonce, and look for another
request's nonce in what came back.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from ..testing import Response
from .evaluation_personas import agent_step
from .kit import Heard, Persona, Said, Stream

__all__ = ["CrossedStreams", "load_personas"]

# The nonces compare's sweep and the doctor's concurrency check put in each request.
NONCE = re.compile(r"nonce-[0-9a-f]{12}")
# How long a request with a nonce waits for another to arrive, and how long it then stays
# in flight (its decode time): long enough on a busy machine for copies started together
# to overlap, short enough for a lone request.
_PEER_WAIT_S = 0.1
_HOLD_S = 0.05


class CrossedStreams(Persona):
    """A model behind a tool-call parser whose state is shared across requests.

    Alone it answers as `well-behaved` does, and a request that carries a nonce
    (`nonce-` and 12 hex digits) gets it back: as a `ref` argument of each tool
    call and at the end of the answer, as a model asked to keep a reference
    does. While another request with a nonce is in flight, the reply carries
    that request's nonce instead: compare's outcome `crossed_stream`, the
    doctor's `concurrency` verdict `crossed`.

    Demo run: ends `answer` after two tool rounds, outcome ok (nothing runs beside it).
    """

    name = "crossed-streams"
    owned_by = "vllm"

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._in_flight: dict[int, str] = {}
        self._arrived = 0

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        found = NONCE.findall(turn.prompt)
        if not found:
            return self.finish(turn, self._said(turn, ""))
        own = found[-1]
        with self._state:
            key = self._arrived
            self._arrived += 1
            self._in_flight[key] = own
            self._state.notify_all()
            self._state.wait_for(lambda: len(self._in_flight) > 1, timeout=_PEER_WAIT_S)
            others = [m for k, m in self._in_flight.items() if k != key]
            # Stays in flight while it "decodes", so that requests started with it see it.
            self._state.wait(timeout=_HOLD_S)
            del self._in_flight[key]
        return self.finish(turn, self._said(turn, others[0] if others else own))

    def _said(self, turn: Heard, marker: str) -> Said:
        said = agent_step(turn)
        if said is None:
            plan = turn.plan()
            said = Said(None, plan) if plan else Said(turn.answer())
        if not marker:
            return said
        calls = [
            (name, {**args, "ref": marker} if isinstance(args, Mapping) else args)
            for name, args in said.tool_calls
        ]
        content = f"{said.content} (ref {marker})" if said.content else said.content
        return Said(content, calls)

    def respond(self, turn: Heard) -> Said:
        return self._said(turn, "")


def load_personas() -> list[Persona]:
    """The personas that show what only concurrent requests reveal."""
    return [CrossedStreams()]
