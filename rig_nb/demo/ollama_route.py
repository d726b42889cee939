"""Ollama's native routes on the demo endpoint: every persona on `POST /api/chat`, and
`GET /api/tags`, `GET /api/version`, `POST /api/show` beside it.

Personas speak chat completions. The request is converted to the chat body a persona
reads (`rig_nb.wire.ollama.serve`), the persona answers as on `/chat/completions`, and
its reply (a recorded stream assembled first) goes back as Ollama's reply object or
NDJSON lines, in this one place for every persona. Errors are the persona's own status
with Ollama's `{"error": "text"}` body, never streamed. An `ollama-*` persona's reply is
what Ollama sends on this route: its reasoning in `thinking`, calls without ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..testing import Response
from ..wire.ollama.serve import chat_request, error_body, ndjson_body, ollama_lines, ollama_reply
from .context_personas import DEMO_OLLAMA_VERSION
from .kit import Persona
from .wire_route import Pace, asked, completion_of

__all__ = ["OLLAMA_ROUTES", "answer_ollama"]

_NDJSON_HEADERS = {"content-type": "application/x-ndjson"}
# The context length /api/show reports for every persona (its `model_info`).
_TRAINED_CONTEXT = 32768


def _error(status: int, message: str) -> Response:
    return Response({"error": message}, status)


def answer_ollama(
    raw: bytes, personas: Mapping[str, Persona], pace: Pace
) -> Response | Mapping[str, Any]:
    """The demo's answer to one `/api/chat` request body."""
    ask = asked(raw, personas, chat_request, _error)
    if isinstance(ask, Response):
        return ask
    if ask.persona is None:
        return _error(404, f"model '{ask.turn.model}' not found")
    reply = ask.persona.reply(ask.chat)
    completion = completion_of(reply)
    if completion is None:
        if isinstance(reply, Response):
            return Response(error_body(reply.body), reply.status)
        return _error(500, "the persona's reply is not a chat completion")
    turn = ask.turn
    if not turn.streaming:
        return ollama_reply(completion)
    lines = ollama_lines(completion, piece_chars=pace.piece_chars)
    stream = ndjson_body(lines, interval=pace.interval, first_delay=pace.first_delay)
    return Response(stream, headers=_NDJSON_HEADERS)


def _tag(name: str) -> dict[str, Any]:
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {
        "name": name,
        "model": name,
        "modified_at": "2026-01-01T00:00:00Z",
        "size": 0,
        "digest": digest,
        "details": {"format": "gguf", "family": "rig-nb-demo", "parameter_size": "0B"},
    }


def _tags(method: str, raw: bytes, personas: Mapping[str, Persona]) -> Response | Mapping[str, Any]:
    if method != "GET":
        return _error(405, f"method {method} not allowed")
    return {"models": [_tag(name) for name in personas]}


def _version(
    method: str, raw: bytes, personas: Mapping[str, Persona]
) -> Response | Mapping[str, Any]:
    if method != "GET":
        return _error(405, f"method {method} not allowed")
    return {"version": DEMO_OLLAMA_VERSION}


def _show(method: str, raw: bytes, personas: Mapping[str, Persona]) -> Response | Mapping[str, Any]:
    if method != "POST":
        return _error(405, f"method {method} not allowed")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return _error(400, "invalid JSON in request body")
    name = body.get("model", body.get("name")) if isinstance(body, dict) else None
    if not isinstance(name, str) or name not in personas:
        return _error(404, f"model '{name}' not found")
    return {
        "modelfile": f"FROM {name}\n",
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": _tag(name)["details"],
        "model_info": {
            "general.architecture": "rig-nb-demo",
            "rig-nb-demo.context_length": _TRAINED_CONTEXT,
        },
        "capabilities": ["completion", "tools", "thinking"],
    }


# Ollama's routes beside /api/chat: path -> answer(method, body, personas).
OLLAMA_ROUTES: dict[
    str, Callable[[str, bytes, Mapping[str, Persona]], Response | Mapping[str, Any]]
] = {
    "/api/tags": _tags,
    "/api/version": _version,
    "/api/show": _show,
}
