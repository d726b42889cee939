"""The demo endpoint's HTTP surface: listings, determinism, errors, extra personas, limits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from demo_requests import chat, post
from shared import PERSONAS

from rig_nb import (
    BackendError,
    Client,
    RunRequest,
)
from rig_nb.demo import (
    DemoServer,
    Persona,
    Stream,
    demo_tools,
)
from rig_nb.testing import RecordedRequest, Response


def test_models_lists_every_persona(demo: DemoServer) -> None:
    assert demo.models == PERSONAS
    listing = httpx.get(f"{demo.base_url}/models", timeout=10).json()
    assert [m["id"] for m in listing["data"]] == PERSONAS
    assert all(m["object"] == "model" and m["description"] for m in listing["data"])
    one = httpx.get(f"{demo.base_url}/models/tool-spinner", timeout=10).json()
    assert one["id"] == "tool-spinner"


@pytest.mark.parametrize("model", PERSONAS)
def test_replies_are_deterministic(demo: DemoServer, model: str) -> None:
    tools = [t.to_openai() for t in demo_tools()]
    first = chat(demo, model, tools=tools, tool_choice="auto", max_tokens=300)
    assert chat(demo, model, tools=tools, tool_choice="auto", max_tokens=300) == first
    assert first["model"] == model
    usage = first["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@pytest.mark.parametrize(
    ("tool_choice", "names"),
    [
        pytest.param("none", [], id="none"),
        pytest.param("auto", ["get_weather", "get_weather"], id="auto"),
        pytest.param({"type": "function", "function": {"name": "add"}}, ["add"], id="named"),
    ],
)
def test_tool_choice_is_honoured(demo: DemoServer, tool_choice: Any, names: list[str]) -> None:
    tools = [t.to_openai() for t in demo_tools()]
    body = chat(demo, "well-behaved", tools=tools, tool_choice=tool_choice)
    calls = body["choices"][0]["message"].get("tool_calls", [])
    assert [c["function"]["name"] for c in calls] == names


def test_numbers_are_not_made_up_unless_a_call_is_required(demo: DemoServer) -> None:
    add = [demo_tools()[1].to_openai()]
    messages = [{"role": "user", "content": "Please add the two numbers."}]
    body = post(demo, {"model": "well-behaved", "messages": messages, "tools": add}).json()
    assert "tool_calls" not in body["choices"][0]["message"]
    forced = {
        "model": "well-behaved",
        "messages": messages,
        "tools": add,
        "tool_choice": "required",
    }
    calls = post(demo, forced).json()["choices"][0]["message"]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"a": 1, "b": 2}]
    messages = [{"role": "user", "content": "Please add 17 and 25."}]
    body = post(demo, {"model": "well-behaved", "messages": messages, "tools": add}).json()
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert json.loads(call["arguments"]) == {"a": 17, "b": 25}


def test_tool_names_come_from_the_request(demo: DemoServer) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "lookup_city",
            "parameters": {
                "type": "object",
                "properties": {"place": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["place", "days"],
            },
        },
    }
    messages = [{"role": "user", "content": "Forecast for Tokyo for 3 days, please."}]
    body = post(demo, {"model": "r1-json-sketch", "messages": messages, "tools": [tool]}).json()
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "lookup_city"
    assert json.loads(call["arguments"]) == {"days": 3, "place": "Tokyo"}


def test_a_small_budget_cuts_any_persona(demo: DemoServer) -> None:
    body = chat(demo, "well-behaved", max_tokens=3)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["choices"][0]["message"]["content"] == "I cannot check"
    assert body["usage"]["completion_tokens"] == 3
    plain = chat(demo, "well-behaved", max_completion_tokens=3)
    assert plain["choices"][0]["message"]["content"] == "I cannot check"


def test_prompt_tokens_grow_with_the_conversation(demo: DemoServer) -> None:
    short = chat(demo, "well-behaved")["usage"]["prompt_tokens"]
    longer = chat(demo, "well-behaved", tools=[t.to_openai() for t in demo_tools()])
    assert longer["usage"]["prompt_tokens"] > short > 0


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}',
            404,
            "model 'nope' not found",
            id="unknown-model",
        ),
        pytest.param(
            "POST", "/v1/chat/completions", b"{not json", 400, "not valid JSON", id="bad-json"
        ),
        pytest.param("POST", "/v1/chat/completions", b"[1]", 400, "JSON object", id="array"),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved"}',
            400,
            "'messages'",
            id="no-messages",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved", "stream": "yes", "messages": [{"role": "user"}]}',
            400,
            "'stream' must be a boolean",
            id="stream-not-bool",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved", "stream": true, "stream_options": 1, '
            b'"messages": [{"role": "user"}]}',
            400,
            "'stream_options' must be an object",
            id="stream-options",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "nope", "stream": true, "messages": [{"role": "user", "content": "hi"}]}',
            404,
            "model 'nope' not found",
            id="stream-unknown-model",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved", "max_tokens": 0, "messages": [{"role": "user"}]}',
            400,
            "max_tokens",
            id="zero-budget",
        ),
        pytest.param("GET", "/v1/chat/completions", b"", 405, "not allowed", id="get-chat"),
        pytest.param("GET", "/v1/embeddings", b"", 404, "no route", id="unknown-path"),
        pytest.param("GET", "/v1/models/nope", b"", 404, "model 'nope' not found", id="model-404"),
    ],
)
def test_http_errors_are_json(
    demo: DemoServer, method: str, path: str, body: bytes, status: int, message: str
) -> None:
    reply = httpx.request(method, demo.origin + path, content=body, timeout=10)
    assert reply.status_code == status
    assert reply.headers["content-type"] == "application/json"
    assert message in reply.json()["error"]["message"]


def test_unknown_model_through_the_client_is_a_backend_error(demo_client: Client) -> None:
    with pytest.raises(BackendError) as info:
        demo_client.probe_tool_calling("gpt-nope")
    assert info.value.status_code == 404
    assert "not found" in info.value.message


class Replay(Persona):
    """A persona that answers with a recorded body, to prove extra personas plug in."""

    name = "replay"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = len(request["messages"])
        return {
            "choices": [
                {
                    "message": {"role": "assistant", "content": f"recorded turn {turn}"},
                    "finish_reason": "stop",
                }
            ]
        }


def test_extra_personas_are_served() -> None:
    with DemoServer(extra_personas=[Replay()]) as server, Client(server.base_url) as c:
        assert server.models == [*PERSONAS, "replay"]
        result = c.run(RunRequest("replay", 64, system="s", prompt="p"))
        assert result.text == "recorded turn 2"
        assert isinstance(server.requests[-1], RecordedRequest)
        assert server.requests[-1].json["model"] == "replay"


def test_persona_names_must_be_unique_and_present() -> None:
    class Nameless(Persona):
        pass

    clash = Replay()
    clash.name = "well-behaved"
    with pytest.raises(ValueError, match="duplicate persona name"):
        DemoServer(extra_personas=[clash])
    with pytest.raises(ValueError, match="has no name"):
        DemoServer(extra_personas=[Nameless()])


def test_binds_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        DemoServer(host="0.0.0.0")


def test_request_log_is_bounded() -> None:
    with DemoServer() as server:
        for i in range(1005):
            server.requests.append(RecordedRequest("GET", f"/{i}", {}, b""))
        assert len(server.requests) == 1000
        assert server.requests[0].path == "/5"
