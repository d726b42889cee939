"""Each wire's server side (the DemoServer's routes) read by an independent reader.

For every demo persona, the bytes the demo sends on `/v1/chat/completions` and
`/v1/responses` are captured once, then read twice: by the openai SDK (its own SSE
decoder and `ChatCompletionStreamState` / `ResponseStreamState` for streams, its typed
`create` for whole replies, from a loopback server replaying the bytes) and by rig_nb's
reader of the same bytes (`Wire.read_stream`, `Wire.parse`). Both must say the same:
content, reasoning where the SDK keeps it, tool call ids, names and arguments, finish.
A persona that answers an error is compared on the error. A misreading shared by
rig_nb's server side and rig_nb's reader no longer cancels out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.lib.streaming.responses import ResponseStreamState
from stream_reference import as_utf16, rig_read

from rig_nb import BackendError
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.demo.personas import default_personas
from rig_nb.demo.replay import recorded_personas
from rig_nb.testing import Response, ScriptedServer
from rig_nb.wire import WIRES, Call, Request, ToolSpec, Turn

# The persona names, known at collection without a second server (DemoServer's own list).
PERSONAS = [p.name for p in [*default_personas(), *recorded_personas()]]
REASONING_NAMES = ("reasoning_content", "reasoning", "thinking")
KEPT = (*REASONING_NAMES, "reasoning_details")
_captured: dict[tuple[str, str, bool], tuple[int, str, bytes]] = {}


def _request(model: str, stream: bool) -> Request:
    tools = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in demo_tools())
    turns = (Turn("system", DEMO_SYSTEM), Turn("user", DEMO_PROMPT))
    return Request(model, turns, 512, tools=tools, stream=stream)


def capture(
    demo: DemoServer, persona: str, api: str, stream: bool, request: Request | None = None
) -> tuple[int, str, bytes]:
    """(status, content-type, body bytes) of one request to the demo (the first turn unless
    `request` is given), once per persona, wire and way."""
    key = (persona, api, stream)
    if key not in _captured:
        wire = WIRES[api]
        body = wire.body(request or _request(persona, stream))
        if stream:
            body["stream"] = True  # the SDK adds it on the Responses wire
        with httpx.Client(trust_env=False, timeout=30) as http:
            got = http.post(demo.base_url + wire.route, json=body)
        _captured[key] = (got.status_code, got.headers.get("content-type", ""), got.content)
    return _captured[key]


@pytest.fixture(scope="module")
def replay() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


def _sdk(replay: ScriptedServer, captured: tuple[int, str, bytes]) -> openai.OpenAI:
    status, content_type, data = captured
    replay.push(Response(data, status=status, headers={"content-type": content_type}))
    return openai.OpenAI(base_url=replay.base_url, api_key="k", max_retries=0)


def _rig_stream(api: str, data: bytes) -> tuple[dict[str, Any], BackendError | None]:
    wire = WIRES[api]
    reader = wire.reader()
    chunks = (data[i : i + 512] for i in range(0, len(data), 512))
    try:
        return rig_read(wire.read_stream(chunks, reader)), None
    except BackendError as exc:
        return rig_read(reader.reply()), exc


def _rig_whole(api: str, data: bytes) -> tuple[dict[str, Any] | None, BackendError | None]:
    try:
        return rig_read(WIRES[api].parse(data)), None
    except BackendError as exc:
        return None, exc


def _kept_reasoning(rig: dict[str, Any]) -> dict[str, Any]:
    """rig_nb's reasoning where the SDK keeps it too (its string fields on the message)."""
    return {k: v for k, v in rig["reasoning"].items() if k in KEPT}


# Chat completions.


def _sdk_reasoning(extra: dict[str, Any]) -> dict[str, str]:
    """The reasoning the SDK kept on a message: string fields, and a list of parts' texts."""
    kept = {k: v for k, v in extra.items() if k in REASONING_NAMES and isinstance(v, str) and v}
    parts = extra.get("reasoning_details")
    if isinstance(parts, list):
        texts = [p.get("text") for p in parts if isinstance(p, dict)]
        kept["reasoning_details"] = "".join(t for t in texts if isinstance(t, str))
    return {k: as_utf16(v) for k, v in kept.items() if v}


def _sdk_chat_message(message: Any, finish: Any) -> dict[str, Any]:
    return {
        "content": as_utf16(message.content),
        "reasoning": _sdk_reasoning(message.model_extra or {}),
        "calls": [
            (as_utf16(c.id), as_utf16(c.function.name), as_utf16(c.function.arguments))
            for c in message.tool_calls or []
        ],
        "finish": finish or "",
    }


def _same_chat(rig: dict[str, Any], sdk: dict[str, Any]) -> None:
    assert rig["content"] == sdk["content"]
    assert rig["calls"] == sdk["calls"]
    assert rig["finish"] == sdk["finish"]
    kept = _kept_reasoning(rig)
    # Where the SDK keeps the reasoning, it holds rig_nb's field with the same text.
    for name, text in kept.items():
        assert sdk["reasoning"].get(name) == text, name
    if not rig["reasoning"]:
        assert sdk["reasoning"] == {}


def _error_words(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return str(getattr(exc, "message", exc))


def _same_error(rig: BackendError, sdk: BaseException, status: int | None) -> None:
    if status is not None:
        assert isinstance(sdk, openai.APIStatusError) and sdk.status_code == status
        assert rig.status_code == status
    assert _error_words(sdk)[:200] in rig.message


def _rig_http_error(api: str, captured: tuple[int, str, bytes]) -> BackendError:
    """rig_nb's error for a non-2xx answer, through a Client on the replayed bytes."""
    from rig_nb import Client

    status, content_type, data = captured
    with ScriptedServer(
        [Response(data, status=status, headers={"content-type": content_type})]
    ) as srv:
        with Client(srv.base_url, api=api, max_retries=0, server="openai") as client:
            with pytest.raises(BackendError) as info:
                client.chat(_request("m", False))
    return info.value


@pytest.mark.parametrize("persona", PERSONAS)
def test_chat_stream_read_alike(demo: DemoServer, replay: ScriptedServer, persona: str) -> None:
    captured = capture(demo, persona, "chat", True)
    status, _, data = captured
    if status >= 300:
        with _sdk(replay, captured) as sdk, pytest.raises(openai.APIStatusError) as info:
            sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        _same_error(_rig_http_error("chat", captured), info.value, status)
        return
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    sdk_error: Exception | None = None
    with _sdk(replay, captured) as sdk:
        try:
            for chunk in sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            ):
                state.handle_chunk(chunk)
        except openai.APIError as exc:
            sdk_error = exc
    rig, rig_error = _rig_stream("chat", data)
    if sdk_error is not None:
        assert rig_error is not None
        _same_error(rig_error, sdk_error, None)
        return
    choice = state.current_completion_snapshot.choices[0]
    _same_chat(rig, _sdk_chat_message(choice.message, choice.finish_reason))
    assert rig_error is None or rig_error.kind == "protocol"


@pytest.mark.parametrize("persona", PERSONAS)
def test_chat_reply_parsed_alike(demo: DemoServer, replay: ScriptedServer, persona: str) -> None:
    captured = capture(demo, persona, "chat", False)
    status, _, data = captured
    with _sdk(replay, captured) as sdk:
        try:
            completion = sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        except openai.APIStatusError as exc:
            _same_error(_rig_http_error("chat", captured), exc, status)
            return
    rig, rig_error = _rig_whole("chat", data)
    if not completion.choices:
        assert rig_error is not None and rig_error.kind == "reply"
        return
    assert rig is not None, rig_error
    choice = completion.choices[0]
    _same_chat(rig, _sdk_chat_message(choice.message, choice.finish_reason))


# Responses.


def _finish(response: Any) -> str:
    """The finish a Responses object means (DESIGN, "The Responses API as a second wire")."""
    if response.status == "incomplete":
        reason = getattr(response.incomplete_details, "reason", None)
        return "length" if reason == "max_output_tokens" else (reason or "")
    if any(item.type == "function_call" for item in response.output):
        return "tool_calls"
    return "stop" if response.status == "completed" else ""


def _sdk_response(response: Any) -> dict[str, Any]:
    texts, reasoning, calls = [], [], []
    for item in response.output:
        if item.type == "message":
            texts += [part.text for part in item.content if part.type == "output_text"]
        elif item.type == "reasoning":
            parts = item.content or item.summary or []
            reasoning += [part.text for part in parts]
        elif item.type == "function_call":
            calls.append((as_utf16(item.call_id), as_utf16(item.name), as_utf16(item.arguments)))
    return {
        "content": as_utf16("".join(texts)),
        "reasoning": as_utf16("".join(reasoning)),
        "calls": calls,
        "finish": _finish(response),
    }


def _same_response(rig: dict[str, Any], sdk: dict[str, Any]) -> None:
    assert rig["content"] == sdk["content"]
    assert "".join(rig["reasoning"].values()) == sdk["reasoning"]
    assert rig["calls"] == sdk["calls"]
    assert rig["finish"] == sdk["finish"]


@pytest.mark.parametrize("persona", PERSONAS)
def test_responses_stream_read_alike(
    demo: DemoServer, replay: ScriptedServer, persona: str
) -> None:
    captured = capture(demo, persona, "responses", True)
    status, _, data = captured
    if status >= 300:
        with _sdk(replay, captured) as sdk, pytest.raises(openai.APIStatusError) as info:
            sdk.responses.create(model="m", input="hi", stream=True)
        _same_error(_rig_http_error("responses", captured), info.value, status)
        return
    state: ResponseStreamState[Any] = ResponseStreamState(
        input_tools=openai.omit, text_format=openai.omit
    )
    final: Any = None
    with _sdk(replay, captured) as sdk:
        for event in sdk.responses.create(model="m", input="hi", stream=True):
            for out in state.handle_event(event):
                if out.type in ("response.completed", "response.incomplete", "response.failed"):
                    final = out.response
    rig, rig_error = _rig_stream("responses", data)
    assert final is not None and rig_error is None
    _same_response(rig, _sdk_response(final))


@pytest.mark.parametrize("persona", PERSONAS)
def test_responses_reply_parsed_alike(
    demo: DemoServer, replay: ScriptedServer, persona: str
) -> None:
    captured = capture(demo, persona, "responses", False)
    status, _, data = captured
    with _sdk(replay, captured) as sdk:
        try:
            response = sdk.responses.create(model="m", input="hi")
        except openai.APIStatusError as exc:
            _same_error(_rig_http_error("responses", captured), exc, status)
            return
    rig, rig_error = _rig_whole("responses", data)
    assert rig is not None, rig_error
    _same_response(rig, _sdk_response(response))


def test_every_persona_is_served_on_both_routes(demo: DemoServer) -> None:
    assert PERSONAS == demo.models and len(PERSONAS) > 30
    for persona in PERSONAS:
        for api in ("chat", "responses"):
            status, _, data = capture(demo, persona, api, False)
            assert status == 200 or json.loads(data).get("error"), (persona, api)


# Personas that answer an error: compared on the error.

UNREPLAYED = (
    Turn("user", DEMO_PROMPT),
    # A tool-call turn sent back without its reasoning: deepseek-thinking-tools refuses it.
    Turn("assistant", calls=(Call("call_1", "get_weather", '{"city": "Oslo"}'),)),
    Turn("tool", "Oslo: 4 C, light rain", call_id="call_1", name="get_weather"),
)
ERRORS = [
    pytest.param("deepseek-thinking-tools", UNREPLAYED, 400, id="missing-reasoning"),
    pytest.param("no-such-persona", (Turn("user", "hi"),), 404, id="unknown-model"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(("persona", "turns", "status"), ERRORS)
def test_an_error_answer_is_read_alike(
    demo: DemoServer,
    replay: ScriptedServer,
    persona: str,
    turns: tuple[Turn, ...],
    status: int,
    api: str,
    stream: bool,
) -> None:
    request = Request(persona, turns, 256, stream=stream)
    captured = capture(demo, f"{persona}/error", api, stream, request)
    assert captured[0] == status
    with _sdk(replay, captured) as sdk, pytest.raises(openai.APIStatusError) as info:
        if api == "chat":
            sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
            )
        else:
            sdk.responses.create(model="m", input="hi", stream=stream)
    rig = _rig_http_error(api, captured)
    _same_error(rig, info.value, status)
    assert rig.kind == "http"
