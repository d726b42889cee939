"""Reasoning across turns in the loop: the thinking switch per server kind, replay, server_kind.

Every line of DESIGN.md's "Reasoning across turns" about RunRequest, Iteration and
Client.server_kind, over a scripted server on loopback (and the in-process backend for
stream parity).
"""

from __future__ import annotations

from typing import Any

import pytest
from runs import LoopRunner, loop_request
from shared import ECHO

from rig_nb import BackendError, Client, RunRequest, Trace
from rig_nb.loop import run
from rig_nb.testing import (
    Response,
    ScriptedBackend,
    ScriptedServer,
    chat_reply,
    tool_call,
)
from rig_nb.wire.thinking import replays

KEY = "sk-replay-secret-5150"
PLAN = "I should echo hi first, then answer."
FIELDS: dict[str, Any] = {"prompt": "go", "tools": (ECHO,)}
# A run_loop run: keyed, with a Client's default retries, the request _request makes.
RUN: dict[str, Any] = {"key": KEY, "max_retries": 2, **FIELDS}


def _request(**kw: Any) -> RunRequest:
    return loop_request(**FIELDS, **kw)


def _call_then_answer(**reasoning: Any) -> list[dict[str, Any]]:
    first = chat_reply(tool_calls=[tool_call("echo", {"text": "hi"}, id="c1")], **reasoning)
    return [first, chat_reply("done")]


def _echoed(server: ScriptedServer, request: int = 1) -> dict[str, Any]:
    messages = server.requests[request].json["messages"]
    [assistant] = [m for m in messages if m["role"] == "assistant"]
    return dict(assistant)


# thinking -> the fields sent, per server kind (DESIGN's table).
OFF_TEMPLATE = {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}}
ON_TEMPLATE = {"chat_template_kwargs": {"enable_thinking": True, "thinking": True}}
MAPPING = [
    pytest.param(
        "llama.cpp",
        False,
        {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": False}},
        id="llama.cpp-off",
    ),
    pytest.param(
        "llama.cpp", True, {"chat_template_kwargs": {"enable_thinking": True}}, id="llama.cpp-on"
    ),
    pytest.param(
        "llama.cpp",
        "high",
        {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "high"},
        id="llama.cpp-effort",
    ),
    pytest.param("llama.cpp", 300, {"thinking_budget_tokens": 300}, id="llama.cpp-budget"),
    pytest.param("vllm", False, OFF_TEMPLATE, id="vllm-off"),
    pytest.param("vllm", True, ON_TEMPLATE, id="vllm-on"),
    pytest.param("vllm", "low", {**ON_TEMPLATE, "reasoning_effort": "low"}, id="vllm-effort"),
    pytest.param("vllm", 128, {"thinking_token_budget": 128}, id="vllm-budget"),
    pytest.param("sglang", False, OFF_TEMPLATE, id="sglang-off"),
    pytest.param("sglang", 0, {"thinking_token_budget": 0}, id="sglang-budget-0"),
    pytest.param("ollama", False, {"reasoning_effort": "none"}, id="ollama-off"),
    pytest.param("ollama", True, {"reasoning_effort": "medium"}, id="ollama-on"),
    pytest.param("lm-studio", "high", {"reasoning_effort": "high"}, id="lm-studio-effort"),
    pytest.param("litellm", False, {"reasoning_effort": "none"}, id="litellm-off"),
    pytest.param("openai", True, {"reasoning_effort": "medium"}, id="openai-on"),
    pytest.param("openai", 500, {}, id="openai-budget-not-sent"),
    pytest.param("ollama", 500, {}, id="ollama-budget-not-sent"),
    pytest.param(
        "unknown",
        False,
        {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "none"},
        id="generic-off",
    ),
    pytest.param(
        "unknown", True, {"chat_template_kwargs": {"enable_thinking": True}}, id="generic-on"
    ),
    pytest.param(
        "unknown",
        "medium",
        {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "medium"},
        id="generic-effort",
    ),
    pytest.param("unknown", 64, {}, id="generic-budget-not-sent"),
    pytest.param("vllm", None, {}, id="unset-sends-nothing"),
]
SWITCH_FIELDS = ("reasoning_effort", "chat_template_kwargs", "thinking_budget_tokens")


@pytest.mark.parametrize(("kind", "thinking", "sent"), MAPPING)
def test_thinking_maps_to_the_fields_the_server_kind_reads(
    server: ScriptedServer, run_loop: LoopRunner, kind: str, thinking: Any, sent: dict[str, Any]
) -> None:
    server.push(*_call_then_answer())
    trace = run_loop.result(kind=kind, thinking=thinking, **RUN).trace
    for request in server.requests:
        body = request.json
        got = {k: body[k] for k in (*SWITCH_FIELDS, "thinking_token_budget") if k in body}
        assert got == sent
    assert [it.thinking_sent for it in trace.iterations] == [sent, sent]
    assert trace.settings["thinking"] == thinking
    # A kind given to the Client is used as is: no request but the two chat requests.
    assert [r.method for r in server.requests] == ["POST", "POST"]
    assert Trace.from_json(trace.to_json()).iterations[0].thinking_sent == sent


@pytest.mark.parametrize(
    ("extra", "sent", "recorded"),
    [
        pytest.param(
            {"reasoning_effort": "low"},
            {"reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": False}},
            {"chat_template_kwargs": {"enable_thinking": False}},
            id="a-top-level-key",
        ),
        pytest.param(
            {"chat_template_kwargs": {"enable_thinking": True, "preserve_thinking": True}},
            {
                "reasoning_effort": "none",
                "chat_template_kwargs": {"enable_thinking": True, "preserve_thinking": True},
            },
            {"reasoning_effort": "none"},
            id="a-key-inside-chat_template_kwargs",
        ),
        pytest.param(
            {"chat_template_kwargs": {"preserve_thinking": True}},
            {
                "reasoning_effort": "none",
                "chat_template_kwargs": {"enable_thinking": False, "preserve_thinking": True},
            },
            {"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": False}},
            id="other-keys-merge",
        ),
    ],
)
def test_a_key_the_caller_sets_in_extra_body_wins(
    server: ScriptedServer,
    run_loop: LoopRunner,
    extra: dict[str, Any],
    sent: dict[str, Any],
    recorded: dict[str, Any],
) -> None:
    server.push(chat_reply("done"))
    trace = run_loop.result(kind="llama.cpp", thinking=False, extra_body=extra, **RUN).trace
    body = server.requests[0].json
    assert {k: body[k] for k in sent} == sent
    assert trace.iterations[0].thinking_sent == recorded
    assert trace.settings["extra_body"] == extra  # what the caller gave, not the merge


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"thinking": "off"}, "thinking must be", id="unknown-thinking"),
        pytest.param({"thinking": "max"}, "thinking must be", id="unknown-effort"),
        pytest.param({"thinking": -1}, "thinking budget must be >= 0", id="negative-budget"),
        pytest.param({"thinking": 1.5}, "thinking must be", id="float-budget"),
        pytest.param({"reasoning_replay": "some"}, "reasoning_replay must be", id="replay"),
        pytest.param({"reasoning_replay": None}, "reasoning_replay must be", id="replay-none"),
        pytest.param({"reasoning_field": "reasoning_text"}, "reasoning_field must be", id="field"),
    ],
)
def test_bad_values_are_a_value_error_before_any_request(
    server: ScriptedServer, run_loop: LoopRunner, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        run_loop.result(**options, **RUN)
    assert server.requests == []


def test_an_unknown_server_kind_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="server must be 'auto' or one of"):
        Client("http://127.0.0.1:9/v1", server="vLLM")


@pytest.mark.parametrize(
    ("reasoning", "kind", "field"),
    [
        pytest.param({"reasoning_content": PLAN}, "vllm", "reasoning_content", id="rc-as-sent"),
        pytest.param({"reasoning": PLAN}, "llama.cpp", "reasoning", id="reasoning-as-sent"),
        pytest.param(
            {"message_extra": {"thinking": PLAN}}, "unknown", "thinking", id="thinking-as-sent"
        ),
        pytest.param(
            {"message_extra": {"reasoning_details": [{"type": "reasoning.text", "text": PLAN}]}},
            "vllm",
            "reasoning",
            id="details-to-vllm-input-field",
        ),
        pytest.param(
            {"content": f"<think>{PLAN}</think>"}, "vllm", "reasoning", id="inline-to-vllm"
        ),
        pytest.param(
            {"content": f"{PLAN}</think>"}, "ollama", "reasoning", id="bare-close-to-ollama"
        ),
        pytest.param(
            {"content": f"<think>{PLAN}</think>"},
            "llama.cpp",
            "reasoning_content",
            id="inline-to-llama.cpp",
        ),
        pytest.param(
            {"content": f"<think>{PLAN}</think>"},
            "sglang",
            "reasoning_content",
            id="inline-to-sglang",
        ),
    ],
)
def test_tool_turns_send_reasoning_back_in_the_auto_field(
    server: ScriptedServer, run_loop: LoopRunner, reasoning: dict[str, Any], kind: str, field: str
) -> None:
    server.push(*_call_then_answer(**reasoning))
    trace = run_loop.result(kind=kind, **RUN).trace
    echoed = _echoed(server)
    assert echoed[field] == PLAN
    assert echoed["content"] == ""  # the stripped content, never the reasoning
    others = {"reasoning_content", "reasoning", "thinking", "reasoning_details"} - {field}
    assert not others & set(echoed)
    assert [it.replayed for it in trace.iterations] == [field, ""]
    assert trace.outcome == "ok"


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param("reasoning_content", {"reasoning_content": PLAN}, id="reasoning_content"),
        pytest.param("reasoning", {"reasoning": PLAN}, id="reasoning"),
        pytest.param("thinking", {"thinking": PLAN}, id="thinking"),
        pytest.param("content", {"content": f"<think>{PLAN}</think>\n\nEchoing."}, id="content"),
    ],
)
def test_a_named_reasoning_field_is_used_whatever_the_reply_used(
    server: ScriptedServer, run_loop: LoopRunner, field: str, expected: dict[str, Any]
) -> None:
    first = chat_reply(
        "Echoing.", tool_calls=[tool_call("echo", {"text": "hi"})], reasoning_content=PLAN
    )
    server.push(first, chat_reply("done"))
    trace = run_loop.result(kind="vllm", reasoning_field=field, **RUN).trace
    echoed = _echoed(server)
    assert {k: echoed[k] for k in expected} == expected
    if field != "content":
        assert echoed["content"] == "Echoing."
    assert trace.iterations[0].replayed == field


def test_replay_none_is_the_seeds_echo(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(*_call_then_answer(reasoning_content=PLAN))
    trace = run_loop.result(kind="vllm", reasoning_replay="none", **RUN).trace
    assert set(_echoed(server)) == {"role", "content", "tool_calls"}
    assert [it.replayed for it in trace.iterations] == ["", ""]
    assert trace.settings["reasoning_replay"] == "none"


def test_every_tool_turn_of_the_run_carries_its_own_reasoning(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    server.push(
        chat_reply(tool_calls=[tool_call("echo", {"text": "a"}, id="a")], reasoning="first"),
        chat_reply(tool_calls=[tool_call("echo", {"text": "b"}, id="b")]),
        chat_reply(tool_calls=[tool_call("echo", {"text": "c"}, id="c")], reasoning="third"),
        chat_reply("done"),
    )
    trace = run_loop.result(kind="vllm", **RUN).trace
    messages = server.requests[3].json["messages"]
    turns = [m for m in messages if m["role"] == "assistant"]
    assert [m.get("reasoning") for m in turns] == ["first", None, "third"]
    # A turn without reasoning sends no empty field.
    assert "reasoning_content" not in turns[1] and "reasoning" not in turns[1]
    assert [it.replayed for it in trace.iterations] == ["reasoning", "", "reasoning", ""]


@pytest.mark.parametrize(
    ("mode", "has_calls", "sent"),
    [
        pytest.param("none", True, False, id="none-tool-turn"),
        pytest.param("tool_turns", True, True, id="tool_turns-tool-turn"),
        pytest.param("tool_turns", False, False, id="tool_turns-plain-turn"),
        pytest.param("all", False, True, id="all-plain-turn"),
        pytest.param("all", True, True, id="all-tool-turn"),
    ],
)
def test_which_echoed_turns_carry_reasoning(mode: str, has_calls: bool, sent: bool) -> None:
    assert replays(mode, has_calls) is sent


def test_all_replays_every_turn_the_loop_echoes(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    # The loop echoes only turns it acted on, which all carried calls: "all" sends the same.
    server.push(*_call_then_answer(reasoning=PLAN))
    run_loop.result(kind="vllm", reasoning_replay="all", **RUN)
    assert _echoed(server)["reasoning"] == PLAN


def test_server_kind_is_detected_once_from_the_model_list(server: ScriptedServer) -> None:
    models = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "vllm"}]}
    inline = {"content": f"<think>{PLAN}</think>"}
    first_reply, answer = _call_then_answer(**inline)
    server.push(first_reply, models, answer)  # the GET comes when the first turn is echoed
    with Client(server.base_url, KEY) as client:
        first = client.run(_request()).trace
        assert client.server_kind == "vllm"
        server.push(*_call_then_answer(**inline))
        client.run(_request(thinking=False))
    methods = [(r.method, r.path.rsplit("/", 1)[-1]) for r in server.requests]
    assert methods == [
        ("POST", "completions"),
        ("GET", "models"),
        ("POST", "completions"),
        ("POST", "completions"),
        ("POST", "completions"),
    ]
    assert first.iterations[0].replayed == "reasoning"
    assert server.requests[3].json["chat_template_kwargs"] == OFF_TEMPLATE["chat_template_kwargs"]


@pytest.mark.parametrize(
    ("listing", "kind"),
    [
        pytest.param(
            Response({"data": [{"id": "x", "owned_by": "llamacpp"}]}), "llama.cpp", id="llama"
        ),
        pytest.param(Response({"data": [{"id": "x", "owned_by": "library"}]}), "ollama", id="ol"),
        pytest.param(
            Response({"data": []}, headers={"x-litellm-version": "1.108.7"}),
            "litellm",
            id="litellm-header",
        ),
        # LiteLLM's proxy (1.108.7, openai/ provider): owned_by "openai", no header, its time.
        pytest.param(
            Response({"data": [{"id": "smollm2", "created": 1677610602, "owned_by": "openai"}]}),
            "litellm",
            id="litellm-created",
        ),
        pytest.param(
            Response(
                {
                    "data": [
                        {"id": "gpt-3.5-turbo", "created": 1677610602, "owned_by": "openai"},
                        {"id": "gpt-4o", "created": 1715367049, "owned_by": "system"},
                    ]
                }
            ),
            "openai",
            id="openai",
        ),
        pytest.param(Response({"error": {"message": "no"}}, 404), "unknown", id="no-model-list"),
    ],
)
def test_server_kind_uses_the_doctors_detection(
    server: ScriptedServer, listing: Response, kind: str
) -> None:
    server.push(listing)
    with Client(server.base_url, KEY, max_retries=0) as client:
        assert client.server_kind == kind
        assert client.server_kind == kind
    assert len(server.requests) == 1


def test_a_refused_switch_names_the_fields_it_sent(server: ScriptedServer) -> None:
    refusal = {"error": {"message": "Unrecognized request argument: chat_template_kwargs"}}
    server.push(Response(refusal, 400))
    with Client(server.base_url, KEY, server="vllm", max_retries=0) as client:
        with pytest.raises(BackendError) as caught:
            client.run(_request(thinking=False))
    message = caught.value.message
    assert "chat_template_kwargs.enable_thinking, chat_template_kwargs.thinking" in message
    assert "extra_body" in message and "Unrecognized request argument" in message
    assert caught.value.status_code == 400
    assert caught.value.trace is not None
    assert "chat_template_kwargs.enable_thinking" in caught.value.trace.error


def test_a_400_without_a_switch_is_left_as_it_came(server: ScriptedServer) -> None:
    server.push(Response({"error": {"message": "bad"}}, 400))
    with Client(server.base_url, KEY, server="vllm", max_retries=0) as client:
        with pytest.raises(BackendError) as caught:
            client.run(_request())
    assert "thinking" not in caught.value.message


def test_streamed_and_unstreamed_replay_send_the_same_turns() -> None:
    sent = []
    for stream in (False, True):
        backend = ScriptedBackend(_call_then_answer(reasoning=PLAN), server="vllm")
        result = run(backend, _request(stream=stream, thinking="low"))
        sent.append(backend.bodies[1]["messages"])
        assert result.trace.iterations[0].replayed == "reasoning"
        assert backend.bodies[0]["reasoning_effort"] == "low"
    assert sent[0] == sent[1]
    assert sent[0][1]["reasoning"] == PLAN
