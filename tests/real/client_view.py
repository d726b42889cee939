"""What rig_nb records for a real reply, as one comparable value, and the texts the servers send.

`Seen` holds the fields of an `Iteration` (and the run's outcome) that the real-tier tables
assert on; `seen(trace)` reads them from a finished trace. The expected values are built from
the grammar texts of grammars.py, as tests/real/FINDINGS.md recorded them on the wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grammars as G
import pytest
from llama_server_procs import Proc

from rig_nb import BackendError, Client, Iteration, RigError, RunRequest, Tool, Trace
from rig_nb.demo.recording import RecordingProxy
from rig_nb.record import finalizing, record_round
from rig_nb.wire import Reply, Request, ToolSpec, turns_of
from rig_nb.wire.thinking import applied_template

# What the loop owns in a chat body: the rest of a hand-built body goes out as extra fields.
_OWNED = {"model", "messages", "max_tokens", "tools", "tool_choice", "stream", "stream_options"}


def request_of(body: Mapping[str, Any]) -> Request:
    """A hand-built chat body as the wire-neutral Request a backend sends; over the chat
    wire it goes out as the same body (its own fields, `temperature: 0` included, as extra)."""
    tools = tuple(
        ToolSpec(fn["name"], fn.get("description", ""), fn.get("parameters", {}))
        for fn in (t["function"] for t in body.get("tools", ()))
    )
    return Request(
        body["model"],
        turns_of(list(body["messages"])),
        body.get("max_tokens", 64),
        tools=tools,
        tool_choice=body.get("tool_choice"),
        stream=bool(body.get("stream")),
        extra={k: v for k, v in body.items() if k not in _OWNED},
    )


def apply_template_of(client: Client, body: Mapping[str, Any]) -> str:
    """llama-server's `/apply-template` prompt for a hand-built body (its own fields too)."""
    prompt = applied_template(client.server_route("/apply-template", body))
    assert prompt is not None, "/apply-template sent no prompt"
    return prompt


# The replies' texts, as the grammars force them (tests/real/grammars.py).
R = G.REASONING  # "I add 2 and 2, which gives 4."
A = G.ANSWER  # "The answer is 4."
CLOSED = G.CLOSED_THINK_TEXT  # R + "</think>\n\n" + A
D_TEXT = G.REASONING_ONLY_TEXT  # R + " " + A
D2_TEXT = G.REASONING_ONLY_CLOSED_TEXT  # R + " " + A + "</think>"
E_TEXT = G.TEXT_TOOL_CALL_TEXT  # R + "</think>\n\n" + CALL
CALL = f"<tool_call>\n{G.TEXT_TOOL_CALL_JSON}\n</tool_call>"
OPEN = "<think>\n"  # what `--reasoning-format none` puts back in front (the template opened it)
# Shape c stops at max_tokens (12) inside "Let me think. Still thinking. Still thinking...":
# under greedy decoding the cut is the same every time, and where it falls depends on how the
# prompt made the model tokenize the forced text (the Hermes prompt gives one more letter).
CUT = "Let me think. Still th"
CUT_HERMES = "Let me think. Still thi"
RC = "reasoning_content"
TAG = ("tool-call-tag",)
TIMEOUT_S = 120.0
DEADLINE_S = 300.0


@dataclass(frozen=True)
class Seen:
    """What the client recorded for one reply, and how the loop ended."""

    raw: str  # Iteration.raw_content
    reasoning: str  # Iteration.reasoning_content
    field: str  # Iteration.reasoning_field
    shape: str  # Iteration.reasoning_shape
    leaks: tuple[str, ...]  # Iteration.leaks
    ending: str  # Iteration.ending
    text: str  # Iteration.text (stripped)
    finish: str  # Iteration.finish_reason
    outcome: str  # Trace.outcome


def answer(raw: str, shape: str, text: str = A) -> Seen:
    """Content only (no reasoning field), finish stop, an answer."""
    return Seen(raw, "", "", shape, (), "answer", text, "stop", "ok")


def seen(trace: Trace, index: int = -1) -> Seen:
    it = trace.iterations[index]
    return Seen(
        it.raw_content,
        it.reasoning_content,
        it.reasoning_field,
        it.reasoning_shape,
        tuple(it.leaks),
        it.ending,
        it.text,
        it.finish_reason,
        trace.outcome,
    )


def shape_rows(server: str, expected: Mapping[str, Seen]) -> list[Any]:
    """pytest params (server, shape key, Seen), one per shape, each with a readable id."""
    return [
        pytest.param(server, key, want, id=f"{server}-{key}-{want.ending}")
        for key, want in expected.items()
    ]


def client_for(base_url: str, api_key: str = "") -> Client:
    return Client(base_url, api_key, timeout=TIMEOUT_S, deadline=DEADLINE_S)


def weather_tool(calls: list[dict[str, Any]]) -> Tool:
    """get_weather(city), as the grammar and the prefill request name it; records its calls."""

    def run(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"{args.get('city', '?')}: 16 C, overcast"

    function = G.TOOLS[0]["function"]
    return Tool(G.TOOL_NAME, function["description"], function["parameters"], run)


def check_streaming(it: Iteration, stream: bool) -> None:
    """A streamed reply counts its deltas and the time to the first; an unstreamed one neither."""
    assert it.streamed is stream
    if stream:
        assert it.chunks > 0 and it.ttft_s > 0
    else:
        assert (it.chunks, it.ttft_s) == (0, 0.0)


def run_loop(client: Client, request: RunRequest) -> tuple[Trace, Any]:
    """The loop's trace and its result: a RunResult, or the RigError it raised."""
    trace = Trace()
    try:
        return trace, client.run(request, trace=trace)
    except RigError as exc:
        return trace, exc


def check_text_call_recovery(client: Client, model: str, stream: bool) -> None:
    """Shape e with the tool declared, without and then with recover_text_tool_calls.

    Grammar plus tools is a 400 on llama-server unless tool_choice is "none" (then the server
    builds no tool grammar of its own, and parses no call either), so the loop sends
    tool_choice "none" and the grammar writes the call as text after the reasoning.
    """
    ran: list[dict[str, Any]] = []

    def request_for(recover: bool) -> RunRequest:
        return RunRequest(
            model,
            96,
            prompt=G.QUESTION,
            tools=(weather_tool(ran),),
            tool_choice="none",
            max_iterations=2,
            stream=stream,
            recover_text_tool_calls=recover,
            extra_body={"grammar": G.TEXT_TOOL_CALL},
        )

    plain, result = run_loop(client, request_for(False))
    # Off (the default): the run ends on the text, nothing runs.
    assert plain.outcome == "text_tool_calls" and (result.text, result.tool_calls) == (CALL, 0)
    assert [it.ending for it in plain.iterations] == ["text_tool_calls"]
    assert plain.iterations[0].tool_calls == [] and ran == []

    recovered, error = run_loop(client, request_for(True))
    # On: the call runs as if native, round after round (the grammar writes it every time),
    # until the iteration cap; never from the reasoning before it.
    assert recovered.outcome == "IterationLimitError" and isinstance(error, RigError)
    assert ran == [G.TOOL_ARGUMENTS, G.TOOL_ARGUMENTS]
    for index, it in enumerate(recovered.iterations):
        assert (it.ending, it.leaks, it.text) == ("text_tool_calls", list(TAG), CALL)
        [rec] = it.tool_calls
        assert (rec.source, rec.name, rec.received_id, rec.id) == (
            "text",
            G.TOOL_NAME,
            "",
            f"call_{index}_0",
        )
        assert json.loads(rec.arguments) == G.TOOL_ARGUMENTS
        assert (rec.result, rec.is_error) == ("Paris: 16 C, overcast", False)
        check_streaming(it, stream)
    # The second round sent the call back as a native one, with its result, and the real
    # template rendered both: the server answered it.
    echoed, result_message = recovered.iterations[1].messages[-2:]
    assert echoed["role"] == "assistant" and echoed["content"] == ""
    assert [c["function"]["name"] for c in echoed["tool_calls"]] == [G.TOOL_NAME]
    assert result_message == {
        "role": "tool",
        "tool_call_id": "call_0_0",
        "content": "Paris: 16 C, overcast",
    }
    assert recovered.iterations[1].finish_reason == "stop"


def prefill_round(client: Client, model: str, stream: bool) -> tuple[Trace, Iteration, Reply]:
    """The real tool call request: tools, tool_choice "required", an assistant prefill
    `<tool_call>\\n` (grammars.tool_call_body), recorded into an Iteration the way the loop
    records its rounds (rig_nb.record.record_round, over Client.chat / Client.stream).

    The loop cannot send it: RunRequest builds the messages (system, user) itself and has no
    assistant prefill, so this goes through the Client's lower level with a hand-built body.
    """
    body = G.tool_call_body(model, stream=stream)
    trace = Trace(model=model)
    it = Iteration(index=0, messages=body["messages"])
    trace.iterations.append(it)
    with finalizing(trace, goal="tool_calls"):  # the prefill asks for a call, as the probe does
        reply = record_round(client, request_of(body), it, trace)
    return trace, it, reply


def check_prefill_calls(reply: Reply) -> None:
    # SmolLM2 writes the same call twice (parallel calls are on); the server's tool grammar and
    # parser make each a well-formed native call with llama-server's 32-character id.
    assert len(reply.tool_calls) >= 1
    for call in reply.tool_calls:
        assert call.name == G.TOOL_NAME
        assert json.loads(call.arguments) == G.TOOL_ARGUMENTS
        assert re.fullmatch(r"[A-Za-z0-9]{32}", call.id)


def stream_events(recording: Path) -> list[dict[str, Any]]:
    """The JSON events of the one streamed exchange in a RecordingProxy file."""
    [line] = recording.read_text().splitlines()
    return [e for e in json.loads(line)["response"]["events"] if isinstance(e, dict)]


def deltas(events: list[dict[str, Any]], key: str) -> list[str]:
    return [
        e["choices"][0]["delta"][key]
        for e in events
        if e.get("choices") and e["choices"][0].get("delta", {}).get(key)
    ]


def check_split_tag(base_url: str, api_key: str, model: str, raw: str, out: Path) -> None:
    """Shape a streamed through a RecordingProxy: `</think>` reaches the client in pieces, and
    the trace holds the joined text with the tag handled as if it had come whole."""
    run = RunRequest(
        model, 64, prompt=G.QUESTION, stream=True, extra_body={"grammar": G.CLOSED_THINK}
    )
    with RecordingProxy(base_url, out) as proxy, client_for(proxy.base_url, api_key) as client:
        trace, result = run_loop(client, run)
    pieces = deltas(stream_events(out), "content")
    # On the wire: no delta holds the whole tag (llama-server sends `</`, `think`, `>`; the
    # Hermes prompt makes the model pick other tokens), and its first and last characters
    # arrive in different deltas.
    assert not any("</think>" in d for d in pieces)
    ends = [sum(map(len, pieces[: n + 1])) for n in range(len(pieces))]
    start = "".join(pieces).index("</think>")
    first = next(n for n, end in enumerate(ends) if end > start)
    last = next(n for n, end in enumerate(ends) if end >= start + len("</think>"))
    assert last > first
    [it] = trace.iterations
    assert it.raw_content == "".join(pieces) == raw
    assert (it.text, result.text, it.ending) == (A, A, "answer")
    assert it.chunks >= len(pieces)


def check_redacted_http_error(
    exc: BaseException, proc: Proc, message: str, kind: str = "http"
) -> None:
    """A BackendError of `kind` (http; context for a prompt past the window), status 400,
    with the endpoint's own message (a regex), and neither the endpoint's address nor its
    key anywhere in it or its causes."""
    assert isinstance(exc, BackendError)
    assert (exc.kind, exc.status_code) == (kind, 400)
    assert re.fullmatch(f"ai backend: HTTP 400: {message}", str(exc), re.DOTALL), str(exc)
    address = proc.base_url.split("//")[1].split("/")[0]  # 127.0.0.1:<port>
    secrets = [proc.base_url, address, ":" + address.rsplit(":", 1)[1]]
    if proc.api_key:
        secrets.append(proc.api_key)
    node: BaseException | None = exc
    while node is not None:
        for text in (str(node), repr(node)):
            assert not [s for s in secrets if s in text]
        node = node.__cause__ or node.__context__
