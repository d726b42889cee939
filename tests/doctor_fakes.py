"""A fake endpoint the doctor tests script check by check, and the report it gets."""

from __future__ import annotations

from typing import Any

from rig_nb import Client
from rig_nb.capabilities import endpoint_report
from rig_nb.testing import (
    RecordedRequest,
    Response,
    ScriptedServer,
    chat_reply,
    tool_call,
    wants_stream,
)

KEY = "sk-doctor-SECRET-31337"


class FakeServer:
    """Answers like a configurable server: what it does with tools, reasoning and streams."""

    def __init__(
        self,
        *,
        owned_by: str = "someone",
        calls_with: tuple[str | None, ...] = ("auto", "required"),
        content: str = "17 * 23 = 391.",
        reasoning: dict[str, str] | None = None,
        stream_content: str | None = None,
        headers: dict[str, str] | None = None,
        extra_top: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        self.owned_by = owned_by
        self.calls_with = calls_with
        self.content = content
        self.reasoning = reasoning or {}
        self.stream_content = stream_content
        self.headers = headers or {}
        self.extra_top = extra_top or {}
        self.usage = usage

    def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET":
            return Response(
                {"data": [{"id": "m", "owned_by": self.owned_by}]}, headers=self.headers
            )
        body = request.json
        usage = self.usage or {"prompt_tokens": 10, "completion_tokens": 5}
        if body.get("tools"):
            if body.get("tool_choice") in self.calls_with:
                reply = chat_reply(None, tool_calls=[tool_call("ping", {"message": "hi"})])
            else:
                reply = chat_reply("I would call ping.", usage=usage)
        else:
            content = self.stream_content if wants_stream(request) else None
            reply = chat_reply(
                self.content if content is None else content,
                usage=usage,
                message_extra=self.reasoning,
            )
        reply.update(self.extra_top)
        if wants_stream(request):
            from rig_nb.testing import streamed

            out = streamed(reply)
            out.headers = {**out.headers, **self.headers}
            return out
        return Response(reply, headers=self.headers)


def report_of(fake: FakeServer, **kw: Any) -> tuple[Any, list[RecordedRequest]]:
    with ScriptedServer([fake] * 64) as server, Client(server.base_url, KEY) as client:
        report = endpoint_report(client, "m", **kw)
        return report, list(server.requests)
