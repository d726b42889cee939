"""The doctor's stream_grammar check, judged on the streamed requests it already sends."""

from __future__ import annotations

from typing import Any

from doctor_fakes import FakeServer, report_of

from rig_nb.capabilities import describe_report
from rig_nb.capabilities.advice import advice
from rig_nb.testing import (
    RecordedRequest,
    Response,
    chat_reply,
    sse_body,
    tool_call,
    wants_stream,
)
from rig_nb.wire import stream_chunks


class NoIndexServer(FakeServer):
    """Streams its tool calls without `index` in the fragments, as Ollama before 0.4.7 did."""

    def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
        out = super().__call__(request)
        if not (wants_stream(request) and request.json.get("tools")):
            return out
        events = stream_chunks(chat_reply(None, tool_calls=[tool_call("ping", {"message": "hi"})]))
        for event in events:
            for choice in event.get("choices") or []:
                for fragment in choice["delta"].get("tool_calls") or []:
                    del fragment["index"]
        return Response(sse_body(events), headers={"content-type": "text/event-stream"})


def test_a_fault_the_reader_forgave_is_named_with_its_fix() -> None:
    report, _ = report_of(NoIndexServer(owned_by="library"))
    check = report.check("stream_grammar")
    assert check.verdict == "faults: a tool call fragment without index"
    assert check.evidence == "1 of 2 streamed replies had faults"
    assert "ollama/ollama#7881" in check.advice and "upgrade Ollama" in check.advice
    assert check.trace is not None
    assert check.trace.iterations[0].stream_faults == ["a tool call fragment without index"]
    assert report.check("stream_parity").verdict == "same"  # forgiven: the same calls
    assert "stream_grammar             faults: a tool call fragment without index" in (
        describe_report(report)
    )


def test_a_conforming_stream_says_so() -> None:
    report, requests = report_of(FakeServer())
    check = report.check("stream_grammar")
    assert (check.verdict, check.evidence, check.advice) == (
        "conforms",
        "no fault in any of 2 streamed replies",
        "",
    )
    names = [c.name for c in report.checks]
    assert names.index("stream_grammar") == names.index("stream_parity") + 1
    streamed = [r for r in requests if r.method == "POST" and wants_stream(r)]
    assert len(streamed) == 2  # no request of its own


def test_nothing_streamed_is_not_applicable() -> None:
    report, _ = report_of(FakeServer(), stream=False)
    check = report.check("stream_grammar")
    assert (check.verdict, check.advice) == ("n/a", "")


def test_advice_only_for_faults() -> None:
    assert "upgrade it" in advice("", "stream_grammar", "faults: x", auto="tool call")
    assert "upgrade LiteLLM" in advice("litellm", "stream_grammar", "faults: x", auto="")
    for verdict in ("conforms", "n/a", "error 500"):
        assert advice("vllm", "stream_grammar", verdict, auto="tool call") == ""
