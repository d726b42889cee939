"""Ollama's native wire (issue 32): what goes on the wire, how replies and streams are read,
its routes at the base URL without `/v1`, and the demo's Ollama routes."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from shared import ECHO
from wire_rows_native import ollama_line

from rig_nb import BackendError, Client, RunRequest, Trace
from rig_nb.capabilities import endpoint_report
from rig_nb.demo import DEMO_PROMPT, DemoServer, demo_tools
from rig_nb.demo.context_personas import DEMO_OLLAMA_VERSION
from rig_nb.servers.ollama import context_window
from rig_nb.testing import Response, ScriptedServer, chat_reply
from rig_nb.wire import WIRES, Call, Request, ToolSpec, Turn
from rig_nb.wire.ollama.serve import ndjson_body

OLLAMA = WIRES["ollama"]
NDJSON = {"content-type": "application/x-ndjson"}
SPEC = ToolSpec("echo", "Echo the text back.", {"type": "object"})
DONE = {
    "done": True,
    "done_reason": "stop",
    "total_duration": 3_000_000_000,
    "load_duration": 500_000_000,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 250_000_000,
    "eval_count": 290,
    "eval_duration": 2_000_000_000,
}


def _request(**kw: Any) -> Request:
    turns = (Turn("system", "Be brief."), Turn("user", "Echo hi."))
    return Request("qwen3:4b", kw.pop("turns", turns), kw.pop("max_tokens", 64), **kw)


# What goes on the wire.


def test_the_body_is_ollamas() -> None:
    body = OLLAMA.body(_request(tools=(SPEC,), stream=True))
    assert body == {
        "model": "qwen3:4b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Echo hi."},
        ],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "echo",
                    "description": "Echo the text back.",
                    "parameters": {"type": "object"},
                },
            }
        ],
        # temperature 0 is sent: Ollama's own default is 0.8
        "options": {"num_predict": 64, "temperature": 0.0},
    }


def test_stream_false_is_sent_and_num_ctx_comes_from_the_context_window() -> None:
    body = OLLAMA.body(_request(options={"context_window": 16384}, temperature=0.7))
    assert body["stream"] is False  # Ollama streams unless told not to
    assert body["options"] == {"num_predict": 64, "temperature": 0.7, "num_ctx": 16384}
    assert "num_ctx" not in WIRES["chat"].body(_request(options={"context_window": 16384}))


def test_replayed_turns_carry_thinking_objects_and_tool_names() -> None:
    turns = (
        Turn("user", "Echo hi."),
        Turn(
            "assistant",
            "",
            reasoning="I should echo.",
            reasoning_field="thinking",
            calls=(Call("c1", "echo", '{"text": "hi"}'), Call("c2", "echo", "not json")),
        ),
        Turn("tool", "hi", call_id="c1", name="echo"),
        Turn("tool", "error: bad arguments", call_id="c2", name="echo", is_error=True),
    )
    messages = OLLAMA.body(_request(turns=turns))["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "",
        "thinking": "I should echo.",
        "tool_calls": [
            {"function": {"name": "echo", "arguments": {"text": "hi"}}},
            {"function": {"name": "echo", "arguments": {}}},  # Ollama takes only an object
        ],
    }
    assert messages[2:] == [
        {"role": "tool", "content": "hi", "tool_name": "echo"},
        {"role": "tool", "content": "error: bad arguments", "tool_name": "echo"},
    ]


@pytest.mark.parametrize(
    ("thinking", "sent"),
    [(None, {}), (False, {"think": False}), (True, {"think": True}), ("high", {"think": "high"})]
    + [(2048, {"think": True}), (0, {"think": False})],
)
def test_thinking_maps_to_think_on_every_server_kind(thinking: Any, sent: Any) -> None:
    for kind in ("ollama", "llama.cpp", "unknown"):
        assert OLLAMA.thinking_fields(thinking, kind) == sent
    assert OLLAMA.replay_field("vllm") == "thinking"


def test_extra_body_wins_and_its_options_merge(server: ScriptedServer) -> None:
    server.push(chat_reply("hi"))
    request = RunRequest(
        "m",
        32,
        prompt="hi",
        thinking=True,
        extra_body={"think": "low", "keep_alive": "5m", "options": {"seed": 7, "num_predict": 1}},
    )
    with Client(server.base_url, api="ollama", max_retries=0, server="ollama") as client:
        trace = client.run(request).trace
    body = server.requests[0].json
    assert server.requests[0].path == "/api/chat"
    assert (body["think"], body["keep_alive"]) == ("low", "5m")
    assert trace.iterations[0].thinking_sent == {}  # the caller set the switch
    assert body["options"] == {"num_predict": 32, "temperature": 0.0, "seed": 7}


def test_options_in_extra_body_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="options must be a mapping"):
        OLLAMA.body(_request(extra={"options": ["num_ctx", 8192]}))


def test_tool_choice_none_offers_no_tools_and_a_named_one_offers_it_alone() -> None:
    two = (SPEC, ToolSpec("add", "Add.", {"type": "object"}))
    assert "tools" not in OLLAMA.body(_request(tools=two, tool_choice="none"))
    named = {"type": "function", "function": {"name": "add"}}
    tools = OLLAMA.body(_request(tools=two, tool_choice=named))["tools"]
    assert [t["function"]["name"] for t in tools] == ["add"]


def test_a_response_format_is_ollamas_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    wrapped = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    assert OLLAMA.body(_request(response_format=wrapped))["format"] == schema
    assert OLLAMA.body(_request(response_format={"type": "json_object"}))["format"] == "json"


@pytest.mark.parametrize("key", ["", "sk-ollama-proxy"])
def test_routes_hang_off_the_base_url_without_v1(server: ScriptedServer, key: str) -> None:
    tags = {"models": [{"name": "qwen3:4b", "digest": "abc"}]}
    server.push(tags, tags, chat_reply("hi"))
    with Client(server.base_url, key, api="ollama", max_retries=0) as client:
        assert [m["id"] for m in client.list_models().items] == ["qwen3:4b"]
        assert client.server_kind == "ollama"
        client.run(RunRequest("qwen3:4b", 16, prompt="hi"))
    assert [r.path for r in server.requests] == ["/api/tags", "/api/tags", "/api/chat"]
    for r in server.requests:
        assert r.headers.get("authorization") == (f"Bearer {key}" if key else None)


def test_a_server_without_api_chat_says_so(server: ScriptedServer) -> None:
    server.push(Response("404 page not found", 404))
    with Client(server.base_url, api="ollama", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 16, prompt="hi"))
    exc = trace.exception
    assert exc is not None and "may not be Ollama" in str(exc) and "without /v1" in str(exc)


# Replies and streams.


def test_a_reply_is_read_with_its_counts_and_durations(server: ScriptedServer) -> None:
    message = {"role": "assistant", "content": "Hi.", "thinking": "Say hi."}
    server.push({"model": "m", "message": message, **DONE})
    with Client(server.base_url, api="ollama") as client:
        trace = client.run(RunRequest("m", 16, prompt="hi")).trace
    it = trace.iterations[0]
    assert (it.text, it.reasoning_content, it.reasoning_field) == ("Hi.", "Say hi.", "thinking")
    assert (it.finish_reason, it.ending) == ("stop", "answer")
    assert it.usage == {"prompt_tokens": 26, "completion_tokens": 290}
    assert it.server_timings == {
        "load_s": 0.5,
        "prompt_s": 0.25,
        "decode_s": 2.0,
        "total_s": 3.0,
        "prompt_tokens": 26,
        "decode_tokens": 290,
    }
    assert Trace.from_json(trace.to_json()).to_json() == trace.to_json()


def test_streamed_lines_build_the_same_reply_and_calls_get_ids(server: ScriptedServer) -> None:
    call = {"function": {"index": 0, "name": "echo", "arguments": {"text": "hi"}}}
    lines = [
        ollama_line(thinking="I will "),
        ollama_line(thinking="echo."),
        ollama_line(tool_calls=[call]),
        {"model": "m", "message": {"role": "assistant", "content": ""}, **DONE},
    ]
    # The second turn's prompt holds the first's: more prompt tokens, not fewer (a cut).
    grown = {"prompt_tokens": 40, "completion_tokens": 2}
    server.push(Response(ndjson_body(lines), headers=NDJSON), chat_reply("Echoed.", usage=grown))
    request = RunRequest("m", 64, prompt="Echo hi.", tools=(ECHO,), stream=True)
    with Client(server.base_url, api="ollama") as client:
        trace = client.run(request).trace
    first = trace.iterations[0]
    assert (first.reasoning_content, first.finish_reason, first.ending) == (
        "I will echo.",
        "tool_calls",
        "tool_calls",
    )
    record = first.tool_calls[0]
    assert (record.name, json.loads(record.arguments), record.received_id) == (
        "echo",
        {"text": "hi"},
        "",
    )
    assert record.id  # the loop made one
    assert first.chunks == 4 and first.stream_faults == []
    assert trace.outcome == "ok"
    replay = server.requests[1].json["messages"]
    assert replay[-2]["thinking"] == "I will echo."
    assert replay[-1] == {"role": "tool", "content": "echo hi", "tool_name": "echo"}


def test_done_reason_length_is_finish_length(server: ScriptedServer) -> None:
    server.push(
        {"message": {"role": "assistant", "content": "Once upon"}, **DONE}
        | {"done_reason": "length"}
    )
    with Client(server.base_url, api="ollama") as client:
        trace = client.run_trace(RunRequest("m", 2, prompt="story"))
    assert (trace.iterations[0].ending, trace.outcome) == ("length", "OutputLimitError")


def test_a_split_call_and_lines_after_done_are_stream_faults(server: ScriptedServer) -> None:
    head = {"function": {"name": "echo", "arguments": '{"text": '}}
    tail = {"function": {"arguments": '"hi"}'}}
    end = {"message": {"role": "assistant", "content": ""}, **DONE}
    body = [
        json.dumps(x).encode() + b"\n"
        for x in (ollama_line(tool_calls=[head]), ollama_line(tool_calls=[tail]), end)
    ]
    # The line after done arrives in the same chunk as done: read, recorded, not waited for.
    body[-1] += json.dumps(ollama_line(content="late")).encode() + b"\n"
    server.push(Response(iter(body), headers=NDJSON))
    with Client(server.base_url, api="ollama") as client:
        trace = client.run_trace(
            RunRequest("m", 64, prompt="hi", tools=(ECHO,), stream=True, max_iterations=1)
        )
    it = trace.iterations[0]
    assert it.stream_faults == ["a tool call split across lines", "a line after done: true"]
    assert json.loads(it.tool_calls[0].arguments) == {"text": "hi"}
    assert it.raw_content == ""


# The demo's Ollama routes.


def test_the_demo_serves_tags_version_and_show(demo: DemoServer) -> None:
    with Client(demo.base_url, api="ollama") as client:
        assert [m["id"] for m in client.list_models().items] == demo.models
        version = json.loads(client.server_route("/api/version"))
        show = client.server_route("/api/show", {"model": "well-behaved"})
        with pytest.raises(BackendError, match="HTTP 404 from /api/show"):
            client.server_route("/api/show", {"model": "nope"})
    assert version["version"] == DEMO_OLLAMA_VERSION
    assert context_window(show) == 4096  # Ollama's default: the Modelfile sets none
    assert context_window(show, requested=65536) == 32768  # held to the trained length


def test_context_window_reads_the_modelfile_num_ctx() -> None:
    show = {
        "parameters": 'stop "<|im_end|>"\nnum_ctx 8192',
        "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
    }
    assert context_window(json.dumps(show).encode()) == 8192
    assert context_window(b"<html>not ollama</html>") is None


def test_the_demo_serves_every_persona_streamed_and_not(demo: DemoServer) -> None:
    request = RunRequest("well-behaved", 512, prompt=DEMO_PROMPT, tools=demo_tools())
    with Client(demo.base_url, api="ollama") as client:
        for stream in (False, True):
            trace = client.run(dataclasses.replace(request, stream=stream)).trace
            assert trace.outcome == "ok" and trace.settings["api"] == "ollama"
            assert len(trace.iterations) == 3


def test_a_persona_error_is_ollamas_error_shape(demo: DemoServer) -> None:
    with Client(demo.base_url, api="ollama", max_retries=0) as client:
        trace = client.run_trace(RunRequest("no-such-model", 16, prompt="hi"))
    assert trace.exception is not None
    assert "HTTP 404: model 'no-such-model' not found" in str(trace.exception)


def test_api_parity_compares_the_ollama_wire(demo: DemoServer) -> None:
    with Client(demo.base_url, api="ollama") as client:
        report = endpoint_report(client, "well-behaved", stream=False)
    check = report.check("api_parity")
    assert check.verdict == "same"
    assert "ollama" in check.evidence and "chat" in check.evidence
