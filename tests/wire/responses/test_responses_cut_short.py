"""A turn cut short keeps its calls (issue 45): a Responses reply with status `incomplete` that
holds a complete function call, whole and streamed, read by the openai SDK and by rig_nb; and
a reply that ends at its output limit or its content filter on every wire. The calls are
shown on the iteration as received, never run.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from responses_events import RECORD, RID, Events, rig_read, rig_trace, served

from rig_nb import Client, RunRequest
from rig_nb.testing import Response, ScriptedServer, chat_reply, tool_call

INCOMPLETE = {"incomplete_details": {"reason": "max_output_tokens"}}
CALL_A = {"name": "record", "arguments": {"a": 1}}
COMPLETE_CALL = ("call_a", "record", '{"a": 1}')


def sdk_items(events: list[Any]) -> list[tuple[str, str, str]]:
    """The function calls the SDK's stream reader hands over for a stream that ends without
    `response.completed` (its get_final_response refuses one): each finished item."""
    with ScriptedServer() as srv:
        srv.push(served(events))
        with openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0) as sdk:
            with sdk.responses.stream(model="m", input="hi") as stream:
                done = [e.item for e in stream if e.type == "response.output_item.done"]
    return [(i.call_id, i.name, i.arguments) for i in done if i.type == "function_call"]


def test_an_incomplete_stream_keeps_its_complete_call_as_the_sdk_does() -> None:
    events = Events().call(0, "fc_1", "call_a", ['{"a": ', "1}"], '{"a": 1}')
    events = events.end("incomplete", **INCOMPLETE)
    assert sdk_items(events) == [COMPLETE_CALL]
    trace = rig_trace(events)
    assert rig_read(trace)["calls"] == [COMPLETE_CALL]
    assert trace.outcome == "OutputLimitError"
    [call] = trace.tool_calls
    assert (call.result, call.is_error) == ("", False)  # received, not run


def test_an_incomplete_response_keeps_its_complete_call_as_the_sdk_does(
    server: ScriptedServer,
) -> None:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_a",
        "name": "record",
        "arguments": '{"a": 1}',
        "status": "completed",
    }
    body = {
        "id": RID,
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "incomplete",
        **INCOMPLETE,
        "output": [item],
    }
    server.push(Response(body), Response(body))
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
        theirs = sdk.responses.create(model="m", input="hi")
    calls = [(i.call_id, i.name, i.arguments) for i in theirs.output if i.type == "function_call"]
    assert calls == [COMPLETE_CALL]
    with Client(server.base_url, api="responses", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", tools=(RECORD,)))
    assert rig_read(trace)["calls"] == [COMPLETE_CALL]
    assert trace.outcome == "OutputLimitError" and trace.tool_calls[0].result == ""


@pytest.mark.parametrize(
    ("api", "finish"),
    [
        *((api, "length") for api in ("chat", "responses", "messages", "ollama")),
        # Ollama has no content filter.
        *((api, "content_filter") for api in ("chat", "responses", "messages")),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_calls_of_a_turn_cut_short_are_kept_on_every_wire(
    server: ScriptedServer, api: str, stream: bool, finish: str
) -> None:
    call = tool_call("record", {"a": 1}, id="call_a")
    reply: Any = chat_reply(tool_calls=[call], finish_reason=finish)
    if api == "ollama":  # as Ollama says it (the local servers' Ollama says stop with calls)
        message = {"role": "assistant", "content": "", "tool_calls": [{"function": CALL_A}]}
        line = {"model": "m", "message": message, "done": True, "done_reason": "length"}
        reply = Response(json.dumps(line).encode() + b"\n" if stream else line)
    server.push(reply)
    with Client(server.base_url, api=api, max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", tools=(RECORD,), stream=stream))
    [it] = trace.iterations
    assert [(c.name, json.loads(c.arguments), c.result) for c in it.tool_calls] == [
        ("record", {"a": 1}, "")
    ]
    assert trace.outcome == ("OutputLimitError" if finish == "length" else "content_filter")
