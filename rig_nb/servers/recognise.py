"""Which server answers: one guess from what an endpoint shows, for the backend
(`Client.server_kind`, found once) and the doctor (`EndpointReport.server`) alike.

Each kind's `Server` says what marks it: response headers, a reply's own fields, the model
list as a whole, the owner of a model's entry, and weaker reply marks; the first kind in
`SERVERS` order whose mark is seen, taken in that order of strength, wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import Server

if TYPE_CHECKING:
    from ..wire import Reply

__all__ = ["Models", "entry_for", "guess", "owners_of"]


@dataclass
class Models:
    """An endpoint's model list and the response headers that name the server."""

    items: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


def entry_for(items: Sequence[Mapping[str, Any]], model: str) -> Mapping[str, Any] | None:
    """The model list's entry for `model`: its own id, else `model:latest` (Ollama lists a
    model named without its tag with the tag)."""
    for wanted in (model, f"{model}:latest"):
        for m in items:
            if m.get("id") == wanted:
                return m
    return None


def _owner(entry: Mapping[str, Any] | None) -> str:
    owner = entry.get("owned_by") if entry is not None else None
    return owner.strip().lower() if isinstance(owner, str) else ""


def guess(
    servers: Sequence[Server],
    *,
    owners: Sequence[str] = (),
    reply: Reply | None = None,
    headers: Mapping[str, str] | None = None,
    items: list[dict[str, Any]] | None = None,
) -> str:
    """The kind that `owners` (the model entries' owned_by, most relevant first), a reply, the
    response `headers` and the whole model list `items` point to; "unknown" when none does."""
    said = headers if headers is not None else (reply.headers if reply is not None else {})

    def first(test: Callable[[Server], bool]) -> str:
        return next((s.name for s in servers if test(s)), "")

    found = first(lambda s: s.headers_say(said))
    if not found and reply is not None:
        found = first(lambda s: s.reply_says(reply))
    if not found and items:
        found = first(lambda s: s.models_say(items))
    for owner in owners:
        found = found or next((s.name for s in servers if owner in s.owners), "")
    if not found and reply is not None:
        found = first(lambda s: s.reply_hints(reply))
    return found or "unknown"


def owners_of(models: Models, model: str = "") -> list[str]:
    """The owners the guess reads: that of `model`'s entry, or with no entry for it (or no
    model named), every owner in the list's order."""
    entry = entry_for(models.items, model) if model else None
    owners = [_owner(entry)] if entry is not None else [_owner(m) for m in models.items]
    return list(dict.fromkeys(o for o in owners if o))
