"""Responses streams as their specification says (issue 35): items told apart by
output_index, whole arguments replacing deltas, content over summary, surrogate pairs split
across deltas, the terminal event ending the reply at once, and what the reader forgave
recorded as stream faults.

The openai SDK's own reader (`client.responses.stream`, `ResponseStreamState`) reads the
same bytes from the same loopback server: call names, arguments and texts must agree.
"""

from __future__ import annotations

import json
import threading
import tracemalloc
from collections.abc import Iterator, Mapping
from typing import Any

import openai
import pytest
from responses_events import RECORD, RID, SSE, Events, recorded, rig_read, rig_trace, served

from rig_nb import BackendError, Client, RunRequest
from rig_nb.testing import Response, ScriptedServer, sse_body

GRIN = "\U0001f600"  # one character outside the BMP: two UTF-16 halves in JSON


def sdk_read(events: list[Any]) -> dict[str, Any]:
    """What the openai SDK's own stream reader makes of the same bytes: the final
    response's texts and calls, and its last snapshot of the streamed output text."""
    with ScriptedServer() as srv:
        srv.push(served(events))
        with openai.OpenAI(base_url=srv.base_url, api_key="k", max_retries=0) as sdk:
            snapshot = ""
            with sdk.responses.stream(model="m", input="hi") as stream:
                for event in stream:
                    if event.type == "response.output_text.delta":
                        snapshot = event.snapshot
                final = stream.get_final_response()
    reasoning = [
        part.text
        for item in final.output
        if item.type == "reasoning"
        for part in item.content or []
    ]
    calls = [
        (item.call_id, item.name, item.arguments)
        for item in final.output
        if item.type == "function_call"
    ]
    return {
        "text": final.output_text,
        "snapshot": snapshot,
        "reasoning": "".join(reasoning),
        "calls": calls,
    }


def utf16(text: str) -> str:
    """Python keeps two JSON halves as two code points: read them as UTF-16 does."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def answered() -> dict[str, Any]:
    from rig_nb.testing import chat_reply

    return chat_reply("Recorded.")


# Items 2, 3, 7, 8: each stream read by rig_nb and by the SDK to the same result.

SAME_ID = (
    Events()
    .call(0, "fc_1", "call_a", ['{"a": ', "1}"], '{"a": 1}')
    .call(1, "fc_1", "call_b", ['{"b": ', "2}"], '{"b": 2}')
    .end()
)
LATE_DELTAS = (
    Events().call(0, "fc_1", "call_a", ['{"a": ', "1}"], '{"a": 1}', late=('{"a": 1}',)).end()
)
DONE_REPLACES = (
    # Deltas that lost a piece: the whole arguments of .done are what the call carries.
    Events().call(0, "fc_1", "call_a", ['{"a"', "1}"], '{"a": 1}').end()
)
ITEM_DONE_REPLACES = (
    Events()
    .call(0, "fc_1", "call_a", ['{"a": 1}', '{"a": 1}'], None, item_arguments='{"a": 1}')
    .end()
)
SPLIT_PAIR = Events().message(0, "msg_1", ["Hi \ud83d", "\ude00!"], None).end()
SPLIT_PAIR_WHOLE = Events().message(0, "msg_1", ["Hi \ud83d", "\ude00!"], f"Hi {GRIN}!").end()
SPLIT_ARGUMENTS = (
    Events().call(0, "fc_1", "call_a", ['{"a": "\ud83d', '\ude00"}'], f'{{"a": "{GRIN}"}}').end()
)


def _reasoning_stream(first: str) -> list[dict[str, Any]]:
    return (
        Events()
        .reasoning(0, "rs_1", ["Full ", "chain."], ["Short."], first=first)
        .message(1, "msg_1", ["Answer."], "Answer.")
        .end()
    )


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param(
            SAME_ID,
            {"calls": [("call_a", "record", '{"a": 1}'), ("call_b", "record", '{"b": 2}')]},
            id="two-calls-one-item-id",
        ),
        pytest.param(
            LATE_DELTAS, {"calls": [("call_a", "record", '{"a": 1}')]}, id="deltas-after-done"
        ),
        pytest.param(
            DONE_REPLACES, {"calls": [("call_a", "record", '{"a": 1}')]}, id="done-replaces"
        ),
        pytest.param(
            ITEM_DONE_REPLACES,
            {"calls": [("call_a", "record", '{"a": 1}')]},
            id="item-done-replaces",
        ),
        pytest.param(
            SPLIT_ARGUMENTS,
            {"calls": [("call_a", "record", f'{{"a": "{GRIN}"}}')]},
            id="split-pair-in-arguments",
        ),
        pytest.param(
            SPLIT_PAIR_WHOLE, {"text": f"Hi {GRIN}!", "calls": []}, id="split-pair-in-text"
        ),
        pytest.param(
            _reasoning_stream("content"),
            {"text": "Answer.", "reasoning": "Full chain."},
            id="content-then-summary",
        ),
        pytest.param(
            _reasoning_stream("summary"),
            {"text": "Answer.", "reasoning": "Full chain."},
            id="summary-then-content",
        ),
    ],
)
def test_rig_nb_reads_a_stream_as_the_sdk_does(
    events: list[dict[str, Any]], expected: Mapping[str, Any]
) -> None:
    sdk = sdk_read(events)
    trace = rig_trace(events, then=answered())
    ours = rig_read(trace)
    for key, value in expected.items():
        assert ours[key] == value, key
        assert (utf16(sdk[key]) if isinstance(value, str) else sdk[key]) == value, key
    if "text" in expected:  # the SDK's running snapshot of the deltas: the same text
        assert utf16(sdk["snapshot"]) == expected["text"]
    assert trace.outcome == "ok"
    assert [c.result for c in trace.tool_calls] == [
        recorded(json.loads(args)) for _, _, args in expected.get("calls", [])
    ]


def test_two_items_with_one_id_are_two_calls_unstreamed(server: ScriptedServer) -> None:
    output = [
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_a",
            "name": "record",
            "arguments": '{"a": 1}',
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_b",
            "name": "record",
            "arguments": '{"b": 2}',
        },
    ]
    server.push(
        Response({"id": RID, "object": "response", "status": "completed", "output": output}),
        answered(),
    )
    with Client(server.base_url, api="responses", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", tools=(RECORD,)))
    assert [c.arguments for c in trace.tool_calls] == ['{"a": 1}', '{"b": 2}']
    assert trace.outcome == "ok"


# Item 1: the terminal event ends the reply at once, whatever the connection does next.


def _held_open(events: list[Any], pings: int, release: threading.Event) -> Iterator[bytes]:
    # One write: the events, then keep-alive comments the reader must not wait past.
    yield b"".join(sse_body(events, done=False)) + b": keep-alive\n\n" * pings
    release.wait(timeout=120)


@pytest.mark.parametrize("pings", [0, 3], ids=["silence", "keep-alive-pings"])
@pytest.mark.parametrize(
    ("terminal", "response", "outcome"),
    [
        pytest.param("completed", {}, "ok", id="completed"),
        pytest.param(
            "incomplete",
            {"incomplete_details": {"reason": "content_filter"}},
            "content_filter",
            id="incomplete",
        ),
        pytest.param("failed", {"error": {"message": "boom"}}, "BackendError", id="failed"),
    ],
)
def test_the_terminal_event_ends_the_reply_while_the_connection_stays_open(
    terminal: str, response: dict[str, Any], outcome: str, pings: int
) -> None:
    events = Events().message(0, "msg_1", ["Done."], "Done.").end(terminal, **response)
    release = threading.Event()
    with ScriptedServer() as srv:
        srv.push(Response(_held_open(events, pings, release), headers=SSE))
        try:
            # The server holds the connection until the run has returned: a reader that
            # waited for it to close would end at the deadline (outcome BackendError, kind
            # deadline) with the answer lost.
            with Client(
                srv.base_url, api="responses", max_retries=0, timeout=30, deadline=30
            ) as client:
                trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=True))
        finally:
            release.set()
    if isinstance(trace.exception, BackendError):
        assert trace.exception.kind != "deadline"
    assert trace.outcome == outcome
    it = trace.iterations[0]
    assert it.raw_content == "Done."
    if outcome == "BackendError":
        assert isinstance(trace.exception, BackendError)
        assert (
            trace.exception.kind == "reply" and "response failed: boom" in trace.exception.message
        )
    else:
        assert it.ending == ("answer" if outcome == "ok" else outcome)


# Item 8 beyond the SDK's reading: lone halves, and the live text of a broken stream.


@pytest.mark.parametrize(
    ("deltas", "text"),
    [
        pytest.param(["Hi \ud83d", "\ude00!"], f"Hi {GRIN}!", id="pair-split"),
        pytest.param(["a\ud83d", "b"], "a\ufffdb", id="lone-high"),
        pytest.param(["a", "\ude00b"], "a\ufffdb", id="lone-low"),
        pytest.param(["x\ud83d"], "x\ufffd", id="high-at-the-end"),
        pytest.param(["\ud83d", "\ud83d", "\ude00"], f"\ufffd{GRIN}", id="two-highs"),
    ],
)
def test_surrogate_halves_are_paired_across_deltas_and_lone_ones_replaced(
    deltas: list[str], text: str
) -> None:
    # The done item carries no text: the answer is the deltas' own.
    trace = rig_trace(Events().message(0, "msg_1", deltas, None).end())
    it = trace.iterations[0]
    assert (trace.outcome, it.raw_content, it.stream_faults) == ("ok", text, [])


def test_a_broken_stream_keeps_a_split_pair_whole(server: ScriptedServer) -> None:
    events = Events().message(0, "msg_1", ["Hi \ud83d", "\ude00"], None).events[:5]
    server.push(served(events))
    with Client(server.base_url, api="responses", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=True))
    assert isinstance(trace.exception, BackendError) and trace.exception.kind == "protocol"
    assert trace.iterations[0].raw_content == f"Hi {GRIN}"


# Item 9: what the grammar does not allow and the reader forgave, one short line each.


MSG_A = {"id": "msg_a", "type": "message", "role": "assistant"}
MSG_B = {"id": "msg_b", "type": "message", "role": "assistant"}


@pytest.mark.parametrize(
    ("events", "text", "calls", "faults"),
    [
        pytest.param(
            Events().add("output_text.delta", 0, item_id="msg_1", delta="Hi").end(),
            "Hi",
            [],
            ["output_text.delta for output_index 0, never added"],
            id="delta-never-added",
        ),
        pytest.param(
            Events()
            .message(0, "msg_1", ["Hi"], "Hi")
            .add("output_text.delta", 0, item_id="msg_1", delta=" late")
            .end(),
            "Hi",
            [],
            ["output_text.delta after output_index 0 was done"],
            id="delta-after-done",
        ),
        pytest.param(
            Events()
            .add("output_item.added", 1, item=MSG_B)
            .add("output_item.added", 0, item=MSG_A)
            .add("output_text.delta", 1, item_id="msg_b", delta="second")
            .add("output_text.delta", 0, item_id="msg_a", delta="first ")
            .end(),
            "first second",
            [],
            ["output_index 0 out of order"],
            id="index-out-of-order",
        ),
        pytest.param(
            LATE_DELTAS,
            "",
            ['{"a": 1}'],
            ["function_call_arguments.delta after its .done (output_index 0)"],
            id="arguments-after-done",
        ),
        pytest.param(
            Events()
            .message(0, "msg_1", ["Hi"], "Hi")
            .add("function_call_arguments.delta", 0, item_id="msg_1", delta="{}")
            .end(),
            "Hi",
            [],
            ["function_call_arguments.delta for output_index 0, a message item"],
            id="delta-for-another-kind",
        ),
        pytest.param(
            Events()
            .add(
                "output_item.done",
                0,
                item={"type": "message", "content": [{"type": "output_text", "text": "Whole."}]},
            )
            .end(),
            "Whole.",
            [],
            ["output_item.done for output_index 0, never added"],
            id="done-never-added",
        ),
    ],
)
def test_stream_faults_are_recorded_and_forgiven(
    events: list[Any], text: str, calls: list[str], faults: list[str]
) -> None:
    trace = rig_trace(events, then=answered())
    it = trace.iterations[0]
    assert trace.outcome == "ok"
    assert it.raw_content == text
    assert [c.arguments for c in it.tool_calls] == calls
    assert it.stream_faults == faults


def test_at_most_twenty_faults_are_kept() -> None:
    events = Events()
    for n in range(30):
        events.add("output_text.delta", None, item_id=f"msg_{n}", delta=str(n % 10))
    trace = rig_trace(events.end())
    it = trace.iterations[0]
    assert it.raw_content == "0123456789" * 3  # every forgiven delta's text kept, in order
    assert it.stream_faults == [
        f"output_text.delta for output_index {n}, never added" for n in range(20)
    ]


@pytest.mark.parametrize("model", ["reasoning-field", "well-behaved", "deepseek-thinking-tools"])
def test_a_conforming_stream_has_no_faults(demo: Any, model: str) -> None:
    from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, demo_tools

    request = RunRequest(
        model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), stream=True
    )
    with Client(demo.base_url, api="responses", max_retries=0) as client:
        trace = client.run_trace(request)
    assert trace.outcome == "ok"
    assert all(it.streamed and it.stream_faults == [] for it in trace.iterations)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("first", ["content", "summary"])
def test_a_reasoning_item_gives_its_content_streamed_or_not(
    server: ScriptedServer, stream: bool, first: str
) -> None:
    events = _reasoning_stream(first)
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    whole = {"id": RID, "object": "response", "status": "completed", "output": done}
    server.push(served(events) if stream else Response(whole))
    with Client(server.base_url, api="responses", max_retries=0) as client:
        trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=stream))
    it = trace.iterations[0]
    assert (it.reasoning_content, it.reasoning_field, it.text) == (
        "Full chain.",
        "reasoning_text",
        "Answer.",
    )


def test_a_flood_of_items_never_added_is_bounded(server: ScriptedServer) -> None:
    # Each delta names a new item: one item and one fault line each, up to the response cap.
    events = Events()
    for n in range(6000):
        events.add("output_text.delta", None, item_id=f"m{n}", delta="x")
    server.push(served(events.end()))
    tracemalloc.start()
    try:
        with Client(server.base_url, api="responses", max_retries=0) as client:
            trace = client.run_trace(RunRequest("m", 64, prompt="hi", stream=True))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    it = trace.iterations[0]
    assert trace.outcome == "ok" and it.raw_content == "x" * 6000
    assert len(it.stream_faults) == 20
    assert peak < 64 << 20


def test_the_local_servers_stream_is_read_alike_by_the_sdk() -> None:
    from rig_nb.testing import as_response, chat_reply, tool_call

    reply = chat_reply(
        f"Calling {GRIN}.",
        reasoning_content="Two calls are needed.",
        tool_calls=[tool_call("record", {"a": 1}, id="c1"), tool_call("record", {"b": 2}, "c2")],
    )
    events = [json.loads(chunk[6:]) for chunk in as_response(reply, stream=True).body]
    sdk = sdk_read(events)
    ours = rig_read(rig_trace(events, then=answered()))
    assert ours["text"] == sdk["text"] == f"Calling {GRIN}."
    assert ours["reasoning"] == sdk["reasoning"] == "Two calls are needed."
    assert (
        ours["calls"]
        == sdk["calls"]
        == [
            ("c1", "record", '{"a": 1}'),
            ("c2", "record", '{"b": 2}'),
        ]
    )
