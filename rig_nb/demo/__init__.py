"""The embedded demo endpoint: an OpenAI-compatible server whose models are failure-mode personas.

    with DemoServer() as server:
        client = Client(server.base_url)
        client.probe_tool_calling("qwen3-no-parser")
        client.run(RunRequest("qwen3-no-parser", 512, prompt=DEMO_PROMPT, tools=demo_tools()))

A real HTTP server on 127.0.0.1 (random free port unless `port` is given, one
thread per connection, TCP_NODELAY) serving `POST /v1/chat/completions` and
`GET /v1/models` (and `/v1/models/<id>`), and every persona on `POST /v1/responses`
too (`rig_nb.demo.responses_route`), and the metadata routes of the servers its
personas play (llama.cpp `/props`, Ollama `/api/version` and `/api/show`:
`rig_nb.demo.context_personas`). Each model is a `Persona`
(`rig_nb.demo.kit`) that reproduces reply shapes reported from real self-hosted
servers, deterministically from what the request holds
(`rig_nb.demo.personas`, `rig_nb.demo.dialect_personas`); the `*-recorded`
models replay real SmolLM2 sessions recorded from a llama.cpp server
(`rig_nb/demo/recordings/`, `rig_nb.demo.replay`). Register more with
`DemoServer(extra_personas=[...])`.

Every persona streams when the request asks for `"stream": true`: the same
reply as server-sent events (`rig_nb.testing.streamed`), `stream_first_delay`
seconds before the first event and `stream_interval` between events, so time to
first token and decode speed show; the usage chunk only with
`stream_options: {"include_usage": true}`. Errors (HTTP 4xx and 5xx) are never
streamed.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from ..testing import LoopbackServer, RecordedRequest, Response, sse_body, streamed
from ..tool import Tool, tool
from .context_personas import metadata_route
from .kit import Heard, Persona, Said, Stream
from .messages_route import answer_messages
from .ollama_route import OLLAMA_ROUTES, answer_ollama
from .personas import XSS_IMG, XSS_SCRIPT, default_personas
from .replay import recorded_personas
from .responses_route import answer_responses
from .wire_route import Pace, asked
from .wire_route import openai_error as _error

__all__ = [
    "DEMO_PROMPT",
    "DEMO_SYSTEM",
    "XSS_IMG",
    "XSS_SCRIPT",
    "DemoServer",
    "Persona",
    "Said",
    "Stream",
    "Heard",
    "demo_tools",
]

DEMO_SYSTEM = "You are a concise assistant. Use the tools for live data; never guess it."
DEMO_PROMPT = "What's the weather in Lisbon and in Oslo right now? Add the two temperatures too."

_WEATHER = {
    "lisbon": (21, "clear sky"),
    "oslo": (4, "light rain"),
    "paris": (16, "overcast"),
    "tokyo": (19, "scattered showers"),
    "new york": (12, "windy and dry"),
    "nairobi": (24, "sunny"),
    "sydney": (17, "partly cloudy"),
    "cairo": (30, "hot and clear"),
}
# A long-running serve-demo must not grow without bound; tests read recent requests only.
_KEEP_REQUESTS = 1000
# Characters per streamed content or reasoning delta: about two tokens.
_PIECE_CHARS = 8
_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


# Every wire's route but chat's (which the personas speak): the path, and what answers it
# for every persona (`answer_responses` is the pattern a wire's demo route follows).
WIRE_ROUTES: dict[str, Callable[..., Response | Mapping[str, Any]]] = {
    "/v1/responses": answer_responses,
    "/v1/messages": answer_messages,
    "/api/chat": answer_ollama,
}


@functools.cache
def demo_tools() -> tuple[Tool, ...]:
    """The demo's tools: `get_weather(city)` (a fixed table; unknown cities fail), `add(a, b)`."""

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city: temperature in Celsius and conditions."""
        found = _WEATHER.get(city.strip().lower())
        if found is None:
            raise ValueError(f"no weather station for {city!r}")
        return f"{city.strip()}: {found[0]} C, {found[1]}"

    @tool
    def add(a: float, b: float) -> str:
        """Add two numbers and return the sum."""
        return f"{a + b:g}"

    return (get_weather, add)


def _describe(persona: Persona) -> str:
    doc = inspect.getdoc(persona) or ""
    return doc.splitlines()[0] if doc else ""


class _RecentRequests(list[RecordedRequest]):
    def append(self, item: RecordedRequest) -> None:
        super().append(item)
        if len(self) > _KEEP_REQUESTS:
            del self[0]


def _seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number of seconds >= 0")
    if value < 0:
        raise ValueError(f"{name} must be a number of seconds >= 0")
    return float(value)


def _chat_body(reply: Mapping[str, Any] | Response) -> Mapping[str, Any] | None:
    """The chat.completion body a persona answered with (status 200), or None for anything else."""
    body = reply.body if isinstance(reply, Response) and reply.status == 200 else reply
    if isinstance(body, Mapping) and isinstance(body.get("choices"), list):
        return body
    return None


def _without_usage(event: Mapping[str, Any] | str) -> Mapping[str, Any] | str | None:
    """A recorded event with its usage removed; None when nothing else was in it."""
    if not isinstance(event, Mapping) or "usage" not in event:
        return event
    if not event.get("choices"):
        return None
    return {k: v for k, v in event.items() if k != "usage"}


class DemoServer(LoopbackServer):
    """The demo endpoint; a context manager with `.base_url` and `.models` (persona names).

    `stream_first_delay` (seconds before the first event of a streamed reply)
    and `stream_interval` (seconds between its events) pace every stream; 0
    sends at once.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        extra_personas: Iterable[Persona] = (),
        host: str = "127.0.0.1",
        stream_first_delay: float = 0.05,
        stream_interval: float = 0.004,
    ) -> None:
        self.stream_first_delay = _seconds("stream_first_delay", stream_first_delay)
        self.stream_interval = _seconds("stream_interval", stream_interval)
        personas: dict[str, Persona] = {}
        for p in [*default_personas(), *recorded_personas(), *extra_personas]:
            if not isinstance(p.name, str) or not p.name:
                raise ValueError(f"persona {type(p).__name__} has no name")
            if p.name in personas:
                raise ValueError(f"duplicate persona name {p.name!r}")
            personas[p.name] = p
        super().__init__(host, port)
        self.requests = _RecentRequests()
        self.personas = personas

    @property
    def models(self) -> list[str]:
        return list(self.personas)

    def __enter__(self) -> DemoServer:
        self.start()
        return self

    def _model(self, name: str) -> dict[str, Any]:
        return {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": self.personas[name].owned_by,
            "description": _describe(self.personas[name]),
        }

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        path = urlsplit(request.path).path.rstrip("/")
        if path in OLLAMA_ROUTES:  # Ollama's model list, version and model details
            return OLLAMA_ROUTES[path](request.method, request.body, self.personas)
        if path == "/v1/models":
            if request.method != "GET":
                return _error(405, f"method {request.method} not allowed on {path}")
            return {"object": "list", "data": [self._model(n) for n in self.personas]}
        if path.startswith("/v1/models/"):
            name = unquote(path[len("/v1/models/") :])
            if name not in self.personas:
                return _error(404, f"model {name!r} not found", "not_found_error")
            return self._model(name)
        served = metadata_route(self.personas, request)
        if served is not None:
            return served
        wire_route = WIRE_ROUTES.get(path)
        if path != "/v1/chat/completions" and wire_route is None:
            return _error(404, f"no route for {request.method} {path or '/'}", "not_found_error")
        if request.method != "POST":
            return _error(405, f"method {request.method} not allowed on {path}")
        if wire_route is not None:
            pace = Pace(
                lambda name: _error(404, f"model {name!r} not found", "not_found_error"),
                _PIECE_CHARS,
                self.stream_interval,
                self.stream_first_delay,
            )
            return wire_route(request.body, self.personas, pace)
        ask = asked(request.body, self.personas, dict, _error)
        if isinstance(ask, Response):
            return ask
        turn = ask.turn
        if ask.persona is None:
            return _error(404, f"model {turn.model!r} not found", "not_found_error")
        reply = ask.persona.reply(ask.chat)
        if isinstance(reply, Stream):
            return self._paced(reply.events, turn.include_usage)
        chat = _chat_body(reply) if turn.streaming else None
        if chat is None:
            return reply  # not asked to stream, or an error: sent as is
        if not turn.include_usage:
            chat = {k: v for k, v in chat.items() if k != "usage"}
        return streamed(
            chat,
            piece_chars=_PIECE_CHARS,
            interval=self.stream_interval,
            first_delay=self.stream_first_delay,
        )

    def _paced(self, events: Iterable[Mapping[str, Any] | str], include_usage: bool) -> Response:
        """A recorded stream, paced like the others (its `[DONE]`, if any, is among the events)."""
        kept = [
            e for e in (events if include_usage else map(_without_usage, events)) if e is not None
        ]
        body = sse_body(
            kept, done=False, interval=self.stream_interval, first_delay=self.stream_first_delay
        )
        return Response(body, headers=_SSE_HEADERS)
