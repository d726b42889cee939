"""Every server kind as a plug-in: what rig_nb knows of each, in one place.

`SERVERS` maps each kind to its `Server` (`base.py`): how it is recognised, its thinking
fields and the field reasoning goes back in, its metadata routes (version, context
window), its tool-schema dialect and its advice for each doctor check. One module a kind;
`unknown` is the base profile (`base.BASE`), what a server the guess cannot place gets.
`guess_server` and `server_of_models` (`recognise.py`) are the one guess the backend and
the doctor share. Adding a kind: one module here and its line in `SERVERS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .base import BASE, SchemaDialect, Server, Thinking
from .litellm import LITELLM
from .llama_cpp import LLAMA_CPP
from .lm_studio import LM_STUDIO
from .ollama import OLLAMA
from .openai import OPENAI
from .recognise import Models, entry_for, guess, owners_of
from .sglang import SGLANG
from .vllm import VLLM

if TYPE_CHECKING:
    from ..wire import Reply

__all__ = [
    "SERVERS",
    "SERVER_KINDS",
    "Models",
    "SchemaDialect",
    "Server",
    "Thinking",
    "entry_for",
    "guess_server",
    "profile",
    "server_of_models",
]

# Every kind by name, in the order the guess tries them; "unknown" (the base profile) last.
SERVERS: dict[str, Server] = {
    s.name: s for s in (LLAMA_CPP, VLLM, OLLAMA, LM_STUDIO, SGLANG, LITELLM, OPENAI, BASE)
}
SERVER_KINDS = tuple(SERVERS)


def profile(kind: str) -> Server:
    """The `Server` of `kind`; the base profile for a kind rig_nb does not know."""
    return SERVERS.get(kind, BASE)


def guess_server(
    owned_by: str, reply: Reply | None, headers: Mapping[str, str] | None = None
) -> str:
    """The server kind from a model's owned_by and what a reply (or, without one, a
    response's `headers`) carried."""
    owner = owned_by.strip().lower() if isinstance(owned_by, str) else ""
    return guess(list(SERVERS.values()), owners=[owner], reply=reply, headers=headers)


def server_of_models(models: Models, model: str = "", reply: Reply | None = None) -> str:
    """The server kind from a model list (the owner of `model`'s entry; with no entry for
    it, every owner in order), its headers, and a reply when there is one: the backend's
    and the doctor's one guess."""
    headers = models.headers if reply is None else {**models.headers, **reply.headers}
    return guess(
        list(SERVERS.values()),
        owners=owners_of(models, model),
        reply=reply,
        headers=headers,
        items=models.items,
    )
