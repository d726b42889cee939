"""The protocol every wire follows, and what a wire is handed to send a request.

A `Wire` is the one place that knows its route, its headers, its framing (`sse` or
`ndjson`), how a `Request` becomes its body, how a reply or a stream becomes a `Reply`,
how thinking is switched and reasoning sent back, and where the model list is. The HTTP
backend sends what a wire builds over one guarded transport; the loop, the probe and
the doctor never look inside.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .turns import Call, Request

if TYPE_CHECKING:
    import httpx
    import openai

    from ..servers import Server

__all__ = [
    "HTTPStatusFailure",
    "Reader",
    "Reply",
    "SdkWire",
    "Sender",
    "Wire",
    "json_or_none",
    "profile_of",
]


@dataclass
class Reply:
    """A reply as the loop acts on it, whatever the wire, and what identifies the server.

    `tool_calls` are `Call`s, whatever the wire sent."""

    content: str = ""
    reasoning: str = ""
    reasoning_field: str = ""
    finish_reason: str = ""
    tool_calls: list[Call] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    # What the server says about its own work (Iteration.server_timings).
    server_timings: dict[str, float] = field(default_factory=dict)
    # The server said it cut the prompt to fit its window (Iteration.context_cut).
    context_cut: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    top_level: frozenset[str] = frozenset()
    system_fingerprint: str = ""
    # The opaque signature of the last thinking block (sent back unchanged on replay).
    reasoning_signature: str = ""
    # What a stream did that its grammar does not allow (Iteration.stream_faults).
    stream_faults: list[str] = field(default_factory=list)
    # Opaque redacted-thinking data, in order (sent back unchanged on replay).
    reasoning_redacted: list[str] = field(default_factory=list)


class Reader(Protocol):
    """Builds a Reply from a stream's events, event by event; keeps what arrived on failure."""

    done: bool

    @property
    def content(self) -> str: ...

    @property
    def reasoning(self) -> str: ...

    def feed(self, event: Any) -> bool:
        """Take one decoded event; True when it carried text (content or reasoning)."""
        ...

    def reply(self) -> Reply:
        """The reply so far (what arrived, also after a failure)."""
        ...

    def fault(self, line: str) -> None:
        """Record what the stream did that its grammar does not allow (forgiven)."""
        ...


class Sender(Protocol):
    """What a wire sends through: the openai SDK and the guarded httpx client, one transport."""

    @property
    def sdk(self) -> openai.OpenAI: ...

    @property
    def http(self) -> httpx.Client: ...

    def url(self, path: str) -> str:
        """`path` under the wire's root URL."""
        ...


class HTTPStatusFailure(Exception):
    """A non-2xx answer to a request sent without the SDK (the error maker reads it)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response
        self.status_code = response.status_code


def profile_of(server: Server | str) -> Server:
    """`server` as a profile: a kind's name is looked up (the base profile when unknown)."""
    if isinstance(server, str):
        from ..servers import profile

        return profile(server)
    return server


def json_or_none(content: bytes) -> Any:
    """`content` as JSON, or None when it is not JSON."""
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        return None


class Wire:
    """One wire. A subclass names its route and its parts: `render` (a Request as its
    body), `parse_body` (a reply's bytes as a Reply), `reader_type` and `read_events` (a
    stream read into a Reply by a reader of that type), `thinking` (the fields `thinking`
    maps to on a server, for wires whose switch is the server's); everything else has the
    defaults most wires share."""

    name: ClassVar[str]
    # The request route under the wire's root, and the model list's.
    route: ClassVar[str]
    models_route: ClassVar[str] = "/models"
    framing: ClassVar[str] = "sse"
    # The thinking switches this wire sends: a caller's extra_body key among them means the
    # mapping sends none of them (the caller set that switch).
    switch_keys: ClassVar[frozenset[str]] = frozenset()
    # The `Request.options` this wire sends (`context_window`: Ollama's num_ctx); the others
    # are recorded as not sent.
    options: ClassVar[frozenset[str]] = frozenset()
    # The `Request` parameters this wire has a field for (`stop`, `parallel_tool_calls`); a
    # request that sets one it lacks is refused with a ValueError when rendered.
    params: ClassVar[frozenset[str]] = frozenset({"stop", "parallel_tool_calls"})
    # The token counts this wire's replies can carry (a count its grammar has no field for
    # is never reported, and says nothing about the server).
    usage_keys: ClassVar[frozenset[str]] = frozenset(
        {"prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens"}
    )
    # Said after a 404 from the route: what the endpoint may lack ("" for nothing to add).
    not_found: ClassVar[str] = ""
    # The wire's parts, as plain functions (staticmethod) and the stream reader's class.
    render: staticmethod[[Request], dict[str, Any]]
    parse_body: staticmethod[[bytes], Reply]
    reader_type: ClassVar[type[Reader]]
    read_events: staticmethod[..., Reply]

    def __repr__(self) -> str:
        return f"<wire {self.name}: {self.route}>"

    def root(self, base_url: str) -> str:
        """The URL the wire's routes hang off, for a normalized base URL."""
        return base_url

    def headers(self, api_key: str) -> dict[str, str]:
        """The auth and protocol headers of every request (the key only when one is given)."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def body(self, request: Request) -> dict[str, Any]:
        """`request` as this wire's request body (reshaped by `request.shape` when set)."""
        body = self.render(request)
        return body if request.shape is None else request.shape(body, request)

    def parse(self, content: bytes) -> Reply:
        """A whole reply's bytes as a Reply; BackendError when they are not one."""
        return self.parse_body(content)

    def reader(self) -> Reader:
        """A fresh reader for one stream of this wire."""
        return self.reader_type()

    def sent_body(self, request: Request) -> dict[str, Any]:
        """`request` as this wire's body, as a backend sends it: `request.sent` (the
        recorder's, `Iteration.prefix_break`) sees that body and `request` once, whatever
        `body` made of it."""
        body = self.body(request)
        if request.sent is not None:
            request.sent(body, request)
        return body

    def read_stream(
        self,
        chunks: Iterable[bytes],
        reader: Reader,
        on_event: Callable[[bool], None] | None = None,
    ) -> Reply:
        """Frame `chunks` and feed each event to `reader` (made by `reader()`) until the
        stream's terminal event; `on_event(grew)` after each. The finished Reply."""
        return self.read_events(chunks, reader, on_event)

    def thinking_fields(
        self, thinking: bool | str | int | None, server: Server | str
    ) -> dict[str, Any]:
        """The request fields `thinking` maps to on `server` (a profile, or a kind's name)
        ({} when none): the server's own on the chat-shaped wires; a wire with a switch of
        its own overrides this. ValueError for a `thinking` that is not one."""
        from .thinking import check_thinking

        check_thinking(thinking)
        return profile_of(server).thinking_fields(thinking)

    def held(self, fields: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        """The mapped thinking `fields` as a request of `max_tokens` sends them (a wire
        whose budget must stay under the output limit holds it there)."""
        return fields

    def replay_field(self, server: Server | str) -> str:
        """The field this wire sends an assistant turn's reasoning back in on `server` (a
        profile, or a kind's name)."""
        return profile_of(server).replay_field

    def parse_models(self, content: bytes) -> list[dict[str, Any]]:
        """The entries of the model list (`data`), empty when the body is not one."""
        data = json_or_none(content)
        items = data.get("data") if isinstance(data, dict) else None
        return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []

    def post(self, sender: Sender, body: Mapping[str, Any]) -> Any:
        """POST `body` to the route, not streamed: the httpx.Response, read.

        Raises HTTPStatusFailure for a non-2xx answer. Wires the SDK sends override this.
        """
        http = sender.http
        response = http.post(sender.url(self.route), json=dict(body))
        if response.status_code >= 300:
            raise HTTPStatusFailure(response)
        return response

    @contextmanager
    def send(self, sender: Sender, body: Mapping[str, Any], stream: bool) -> Iterator[Any]:
        """POST `body` to the route; the open httpx.Response (body unread when streaming).

        Raises HTTPStatusFailure for a non-2xx answer. Wires the SDK sends override this.
        """
        http = sender.http
        request = http.build_request("POST", sender.url(self.route), json=dict(body))
        response = http.send(request, stream=stream)
        try:
            if response.status_code >= 300:
                response.read()
                raise HTTPStatusFailure(response)
            yield response
        finally:
            response.close()

    def models(self, sender: Sender) -> Any:
        """GET the model list: the httpx.Response, read (HTTPStatusFailure when not 2xx)."""
        response = sender.http.get(sender.url(self.models_route))
        if response.status_code >= 300:
            raise HTTPStatusFailure(response)
        return response


class SdkWire(Wire):
    """A wire the openai SDK sends, over the same guarded transport.

    The SDK's own request path (`OpenAI.post`, `OpenAI.get`) sends the body as built and
    hands back the httpx.Response: its headers, its error types and its status errors,
    without typing the body into its params and out again (the wire reads the reply).
    """

    @staticmethod
    def _body(body: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        sent = {k: v for k, v in body.items() if k != "stream"}
        if stream:
            sent["stream"] = True
        return sent

    def post(self, sender: Sender, body: Mapping[str, Any]) -> Any:
        import httpx

        return sender.sdk.post(self.route, cast_to=httpx.Response, body=self._body(body, False))

    @contextmanager
    def send(self, sender: Sender, body: Mapping[str, Any], stream: bool) -> Iterator[Any]:
        import httpx

        response = sender.sdk.post(
            self.route, cast_to=httpx.Response, body=self._body(body, stream), stream=stream
        )
        try:
            yield response
        finally:
            response.close()

    def models(self, sender: Sender) -> Any:
        import httpx

        return sender.sdk.get(self.models_route, cast_to=httpx.Response)
