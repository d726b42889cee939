"""`ClientProfile`: how one agent client shapes the requests it sends.

A profile names the wire the client speaks (`api`), the public reports its rules come
from (`sources`), and builds, once per run, the `Shape` that reshapes each body the wire
rendered (`rig_nb.wire.Request.shape`): what the client adds, moves or drops. The wire
modules know no client; the loop hands the run's shape to every request it builds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..wire import Request

__all__ = ["ClientProfile", "Shape"]

# One run's reshaping of a rendered body: (body, request) -> the body as the client sends it.
Shape = Callable[[dict[str, Any], Request], dict[str, Any]]


@dataclass(frozen=True)
class ClientProfile:
    """An agent client's request shape: its `name`, the wire it speaks (`api`), the public
    reports its rules come from (`sources`), whether it always streams (`stream`), the
    field it sends earlier reasoning back in (`replay_field`, "" for the wire's own), and
    `session()`, the shape of one run (what stays fixed over a run, such as a session id,
    is drawn once; what changes per request, such as a nonce, each time)."""

    name: str
    api: str
    sources: tuple[str, ...]
    stream: bool = False
    replay_field: str = ""
    shaper: Callable[[], Shape] = field(repr=False, compare=False, kw_only=True)

    def session(self) -> Shape:
        """A fresh run's shape: apply it to each body the run sends, in order."""
        return self.shaper()

    def shape(self, body: dict[str, Any], request: Request) -> dict[str, Any]:
        """`body` (rendered for `request` by this profile's wire) as the client sends it,
        in a run of its own."""
        return self.session()(body, request)
