"""The embedded demo endpoint: an OpenAI-compatible server whose models are failure-mode personas.

    with DemoServer() as server:
        client = Client(server.base_url)
        client.probe_tool_calling("qwen3-no-parser")
        client.run(RunRequest("qwen3-no-parser", 512, prompt=DEMO_PROMPT, tools=demo_tools()))

A real HTTP server on 127.0.0.1 (random free port unless `port` is given, one
thread per connection, TCP_NODELAY) serving `POST /v1/chat/completions` and
`GET /v1/models` (and `/v1/models/<id>`). Each model is a `Persona` that
reproduces reply shapes reported from real self-hosted servers, deterministically
from what the request holds; the `*-recorded` models replay real SmolLM2 sessions
recorded from a llama.cpp server (`rig_nb/recordings/`). Register more with
`DemoServer(extra_personas=[...])`.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from ._persona_kit import Persona, Said, Turn
from ._personas import XSS_IMG, XSS_SCRIPT, default_personas
from .replay import recorded_personas
from .testing import LoopbackServer, RecordedRequest, Reply
from .tool import Tool, tool

__all__ = [
    "DEMO_PROMPT",
    "DEMO_SYSTEM",
    "XSS_IMG",
    "XSS_SCRIPT",
    "DemoServer",
    "Persona",
    "Said",
    "Turn",
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


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Reply:
    return Reply({"error": {"message": message, "type": kind, "param": None, "code": None}}, status)


def _describe(persona: Persona) -> str:
    doc = inspect.getdoc(persona) or ""
    return doc.splitlines()[0] if doc else ""


class _RecentRequests(list[RecordedRequest]):
    def append(self, item: RecordedRequest) -> None:
        super().append(item)
        if len(self) > _KEEP_REQUESTS:
            del self[0]


class DemoServer(LoopbackServer):
    """The demo endpoint; a context manager with `.base_url` and `.models` (persona names)."""

    def __init__(
        self,
        port: int = 0,
        *,
        extra_personas: Iterable[Persona] = (),
        host: str = "127.0.0.1",
    ) -> None:
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
            "owned_by": "rig-nb-demo",
            "description": _describe(self.personas[name]),
        }

    def handle(self, request: RecordedRequest) -> Reply | Mapping[str, Any]:
        path = urlsplit(request.path).path.rstrip("/")
        if path == "/v1/models":
            if request.method != "GET":
                return _error(405, f"method {request.method} not allowed on {path}")
            return {"object": "list", "data": [self._model(n) for n in self.personas]}
        if path.startswith("/v1/models/"):
            name = unquote(path[len("/v1/models/") :])
            if name not in self.personas:
                return _error(404, f"model {name!r} not found", "not_found_error")
            return self._model(name)
        if path != "/v1/chat/completions":
            return _error(404, f"no route for {request.method} {path or '/'}", "not_found_error")
        if request.method != "POST":
            return _error(405, f"method {request.method} not allowed on {path}")
        try:
            body = json.loads(request.body)
        except (ValueError, RecursionError):
            return _error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        try:
            Turn.parse(body)
        except ValueError as exc:
            return _error(400, str(exc))
        persona = self.personas.get(body["model"])
        if persona is None:
            return _error(404, f"model {body['model']!r} not found", "not_found_error")
        return persona.reply(body)
