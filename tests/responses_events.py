"""A Responses event stream built item by item, as the specification gives it (and the openai
SDK's reader needs), served from a loopback server, and rig_nb's reading of its first turn:
what the Responses stream tests share. A module of its own, not conftest (see
tests/loopback.py)."""

from __future__ import annotations

import json
from typing import Any

from rig_nb import Client, RunRequest, Tool, Trace
from rig_nb.testing import Response, ScriptedServer, sse_body

SSE = {"content-type": "text/event-stream", "cache-control": "no-cache"}
RID = "resp_1"


def recorded(args: dict[str, Any]) -> str:
    return "recorded " + json.dumps(args, sort_keys=True)


RECORD = Tool(
    "record",
    "Record an object.",
    {"type": "object", "properties": {}, "additionalProperties": True},
    recorded,
)


class Events:
    """A Responses event stream built item by item, in the shapes the specification gives
    (and the SDK's reader needs): sequence numbers, item ids, content parts."""

    def __init__(self) -> None:
        head = {"id": RID, "object": "response", "created_at": 0, "model": "m"}
        self.head = head
        self.events: list[dict[str, Any]] = [
            {
                "type": "response.created",
                "response": {**head, "status": "in_progress", "output": []},
            }
        ]

    def add(self, kind: str, index: int | None = None, **fields: Any) -> Events:
        event = {"type": f"response.{kind}", **fields}
        if index is not None:
            event["output_index"] = index
        self.events.append(event)
        return self

    def message(self, index: int, item_id: str, deltas: list[str], whole: str | None) -> Events:
        base = {"item_id": item_id, "content_index": 0}
        item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress"}
        part = {"type": "output_text", "text": "", "annotations": []}
        self.add("output_item.added", index, item={**item, "content": []})
        self.add("content_part.added", index, **base, part=part)
        for delta in deltas:
            self.add("output_text.delta", index, **base, delta=delta, logprobs=[])
        text = "".join(deltas) if whole is None else whole
        self.add("output_text.done", index, **base, text=text, logprobs=[])
        self.add("content_part.done", index, **base, part={**part, "text": text})
        done = {**item, "status": "completed"}
        done["content"] = [] if whole is None else [{**part, "text": whole}]
        return self.add("output_item.done", index, item=done)

    def call(
        self,
        index: int,
        item_id: str,
        call_id: str,
        deltas: list[str],
        done: str | None,
        *,
        item_arguments: str | None = None,
        late: tuple[str, ...] = (),
    ) -> Events:
        item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": "record"}
        self.add(
            "output_item.added", index, item={**item, "arguments": "", "status": "in_progress"}
        )
        for delta in deltas:
            self.add("function_call_arguments.delta", index, item_id=item_id, delta=delta)
        if done is not None:
            self.add("function_call_arguments.done", index, item_id=item_id, arguments=done)
        for delta in late:
            self.add("function_call_arguments.delta", index, item_id=item_id, delta=delta)
        arguments = done if item_arguments is None else item_arguments
        finished = {**item, "arguments": arguments or "", "status": "completed"}
        return self.add("output_item.done", index, item=finished)

    def reasoning(
        self, index: int, item_id: str, content: list[str], summary: list[str], *, first: str
    ) -> Events:
        """A reasoning item with content and summary deltas (`first` says which come first)."""
        item = {"id": item_id, "type": "reasoning", "summary": [], "status": "in_progress"}
        self.add("output_item.added", index, item=item)
        streams = [
            ("reasoning_text.delta", content, {"content_index": 0}),
            ("reasoning_summary_text.delta", summary, {"summary_index": 0}),
        ]
        for kind, deltas, where in streams if first == "content" else streams[::-1]:
            for delta in deltas:
                self.add(kind, index, item_id=item_id, delta=delta, **where)
        done = {
            **item,
            "status": "completed",
            "content": [{"type": "reasoning_text", "text": "".join(content)}],
            "summary": [{"type": "summary_text", "text": "".join(summary)}],
        }
        return self.add("output_item.done", index, item=done)

    def end(self, kind: str = "completed", **response: Any) -> list[dict[str, Any]]:
        status = {"completed": "completed", "incomplete": "incomplete", "failed": "failed"}[kind]
        self.add(kind, response={**self.head, "status": status, **response})
        for number, event in enumerate(self.events):
            event["sequence_number"] = number
        return self.events


def served(events: list[Any]) -> Response:
    return Response(sse_body(events, done=False), headers=SSE)


def rig_trace(events: list[Any], *, then: Any = None) -> Trace:
    """rig_nb's trace of one streamed run over `events` (`then` answers the next round)."""
    with ScriptedServer() as srv:
        srv.push(served(events))
        if then is not None:
            srv.push(then)
        with Client(srv.base_url, api="responses", max_retries=0) as client:
            request = RunRequest("m", 64, prompt="hi", tools=(RECORD,), stream=True)
            return client.run_trace(request)


def rig_read(trace: Trace) -> dict[str, Any]:
    """rig_nb's reading of the first turn, in the shape of `sdk_read`."""
    it = trace.iterations[0]
    calls = [(c.received_id, c.name, c.arguments) for c in it.tool_calls]
    return {"text": it.raw_content, "reasoning": it.reasoning_content, "calls": calls}
