"""rig_nb against llama.cpp's own llama-server: every reasoning-leak shape, produced for real.

A request grammar (`extra_body={"grammar": ...}`, tests/real/grammars.py) fixes what SmolLM2
writes; the server's real chat template and reasoning parser decide what the client receives
(tests/real/FINDINGS.md has the wire view). Each case runs through rig_nb's loop, streamed and
not, and asserts what the client recorded: reasoning_shape, reasoning_field, leaks, ending, the
stripped text, finish_reason, and how the loop ended. Greedy decoding on the servers
(llama_server_procs.DETERMINISTIC) makes every forced reply exact.

Shape b (the bare `</think>` leak) is the same request as shape a: the grammar writes
`reasoning</think>\\n\\nanswer` after a prompt that opened `<think>`, and only a server that parses
no reasoning (--skip-chat-parsing, or a template without think markers) hands the bare closing
tag to the client. So the deepseek and none rows say "a", the skip and Hermes rows "b".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import grammars as G
import pytest
from client_view import (
    CALL,
    CLOSED,
    CUT,
    CUT_HERMES,
    D2_TEXT,
    D_TEXT,
    E_TEXT,
    OPEN,
    RC,
    TAG,
    A,
    R,
    Seen,
    answer,
    check_prefill_calls,
    check_redacted_http_error,
    check_split_tag,
    check_streaming,
    check_text_call_recovery,
    client_for,
    deltas,
    prefill_round,
    run_loop,
    seen,
    shape_rows,
    stream_events,
    weather_tool,
)
from llama_server_procs import Proc

from rig_nb import BackendError, RigError, RunRequest
from rig_nb.demo.recording import RecordingProxy

# Outcomes of runs that returned without an answer: the last turn's ending.
NO_ANSWER, AS_TEXT = "reasoning_only", "text_tool_calls"
pytestmark = pytest.mark.real

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])

LENGTH = "OutputLimitError"
# Content only, as --skip-chat-parsing and the Hermes template hand it over (no reasoning field).
VERBATIM = {
    "b": answer(CLOSED, "unopened"),
    "d": answer(D_TEXT, "none", D_TEXT),  # all reasoning, and nothing tells the client so
    "d2": Seen(D2_TEXT, "", "", "unopened", (), NO_ANSWER, "", "stop", NO_ANSWER),
    "e": Seen(E_TEXT, "", "", "unopened", TAG, AS_TEXT, CALL, "stop", AS_TEXT),
}
SHAPES_ON_LLAMA_SERVER = [
    *shape_rows(
        "think_deepseek_server",
        {
            "a": Seen(A, R, RC, "none", (), "answer", A, "stop", "ok"),
            "c": Seen("", CUT, RC, "none", (), "length_in_reasoning", "", "length", LENGTH),
            "d": Seen("", D_TEXT, RC, "none", (), NO_ANSWER, "", "stop", NO_ANSWER),
            "d2": Seen("", D_TEXT, RC, "none", (), NO_ANSWER, "", "stop", NO_ANSWER),
            "e": Seen(CALL, R, RC, "none", TAG, AS_TEXT, CALL, "stop", AS_TEXT),
        },
    ),
    *shape_rows(
        "think_none_server",
        {
            "a": answer(OPEN + CLOSED, "closed"),
            "c": Seen(
                OPEN + CUT, "", "", "unclosed", (), "length_in_reasoning", "", "length", LENGTH
            ),
            "d": Seen(OPEN + D_TEXT, "", "", "unclosed", (), NO_ANSWER, "", "stop", NO_ANSWER),
            "d2": Seen(OPEN + D2_TEXT, "", "", "closed", (), NO_ANSWER, "", "stop", NO_ANSWER),
            "e": Seen(OPEN + E_TEXT, "", "", "closed", TAG, AS_TEXT, CALL, "stop", AS_TEXT),
        },
    ),
    *shape_rows(
        "think_skip_server",
        {**VERBATIM, "c": Seen(CUT, "", "", "none", (), "length", CUT, "length", LENGTH)},
    ),
    *shape_rows(
        "hermes_tools_server",
        {
            **VERBATIM,
            "c": Seen(CUT_HERMES, "", "", "none", (), "length", CUT_HERMES, "length", LENGTH),
        },
    ),
]


@STREAMS
@pytest.mark.parametrize(("server", "key", "want"), SHAPES_ON_LLAMA_SERVER)
def test_each_forced_shape_is_recorded_as_the_server_sent_it(
    request: pytest.FixtureRequest, server: str, key: str, want: Seen, stream: bool
) -> None:
    proc: Proc = request.getfixturevalue(server)
    shape = G.SHAPES[key]
    run = RunRequest(
        proc.model,
        shape.max_tokens,
        prompt=G.QUESTION,
        stream=stream,
        extra_body={"grammar": shape.grammar},
    )
    with client_for(proc.base_url) as client:
        trace, result = run_loop(client, run)
    assert seen(trace) == want
    [it] = trace.iterations
    check_streaming(it, stream)
    assert it.tool_calls == []
    # llama-server counts tokens, never reasoning tokens (FINDINGS.md, "Usage").
    assert "reasoning_tokens" not in it.usage
    if want.finish == "length":
        assert it.usage["completion_tokens"] == shape.max_tokens
        assert isinstance(result, RigError) and result.trace is trace
        assert it.error.startswith("OutputLimitError: ")
    else:
        assert 0 < it.usage["completion_tokens"] < shape.max_tokens
        # The loop returns what it recorded: the stripped text, one round, nothing run.
        assert (result.text, result.iterations, result.tool_calls) == (want.text, 1, 0)


@STREAMS
@pytest.mark.parametrize(
    "server",
    ["think_deepseek_server", "think_none_server", "think_skip_server", "hermes_tools_server"],
)
def test_a_tool_call_written_as_text_is_run_only_when_recovery_is_on(
    request: pytest.FixtureRequest, server: str, stream: bool
) -> None:
    proc: Proc = request.getfixturevalue(server)
    with client_for(proc.base_url) as client:
        check_text_call_recovery(client, proc.model, stream)


CALLED = Seen("", "", "", "none", (), "tool_calls", "", "tool_calls", "ok")
PREFILL = [
    pytest.param("hermes_tools_server", CALLED, id="hermes"),
    pytest.param("think_deepseek_server", CALLED, id="deepseek"),
    # `none` echoes the prefill turn's empty think block, which the template rendered.
    pytest.param(
        "think_none_server",
        Seen(OPEN + "\n</think>\n\n", "", "", "closed", (), "tool_calls", "", "tool_calls", "ok"),
        id="none",
    ),
]


@STREAMS
@pytest.mark.parametrize(("server", "want"), PREFILL)
def test_a_prefill_and_required_tool_choice_give_real_tool_calls(
    request: pytest.FixtureRequest, server: str, want: Seen, stream: bool
) -> None:
    proc: Proc = request.getfixturevalue(server)
    with client_for(proc.base_url) as client:
        trace, it, reply = prefill_round(client, proc.model, stream)
    assert seen(trace) == want
    check_streaming(it, stream)
    check_prefill_calls(reply)


@STREAMS
def test_skip_chat_parsing_makes_no_tool_call_from_the_prefill(
    think_skip_server: Proc, stream: bool
) -> None:
    with client_for(think_skip_server.base_url) as client:
        trace, it, reply = prefill_round(client, think_skip_server.model, stream)
    # No parser, no tool grammar: the model writes a new turn in words (which words varies with
    # the prompt; the turn header and the category do not). The round's goal is a tool call, so
    # an answer is not "ok": the outcome is the ending.
    assert reply.tool_calls == [] and trace.outcome == "answer"
    assert (it.finish_reason, it.ending, it.reasoning_shape) == ("stop", "answer", "none")
    assert it.raw_content.startswith("assistant\n") and it.text == it.raw_content


SPLIT = [
    pytest.param("think_none_server", OPEN + CLOSED, id="none"),
    pytest.param("think_skip_server", CLOSED, id="skip"),
    pytest.param("hermes_tools_server", CLOSED, id="hermes"),
]


@pytest.mark.parametrize(("server", "raw"), SPLIT)
def test_a_closing_tag_split_over_deltas_is_reassembled(
    request: pytest.FixtureRequest, server: str, raw: str, tmp_path: Path
) -> None:
    proc: Proc = request.getfixturevalue(server)
    check_split_tag(proc.base_url, "", proc.model, raw, tmp_path / "stream.jsonl")


def test_deepseek_streams_reasoning_then_content_and_never_the_tag(
    think_deepseek_server: Proc, tmp_path: Path
) -> None:
    out = tmp_path / "stream.jsonl"
    run = RunRequest(
        think_deepseek_server.model,
        64,
        prompt=G.QUESTION,
        stream=True,
        extra_body={"grammar": G.CLOSED_THINK},
    )
    with RecordingProxy(think_deepseek_server.base_url, out) as proxy:
        with client_for(proxy.base_url) as client:
            trace, _ = run_loop(client, run)
    events = stream_events(out)
    kinds = [
        key
        for e in events
        for key in (RC, "content")
        if e.get("choices") and e["choices"][0]["delta"].get(key)
    ]
    # Every reasoning delta before every content delta; `</think>` in none of them.
    assert kinds == sorted(kinds, key=lambda k: k == "content") and set(kinds) == {RC, "content"}
    assert "".join(deltas(events, RC)) == R and "".join(deltas(events, "content")) == A
    assert seen(trace) == Seen(A, R, RC, "none", (), "answer", A, "stop", "ok")


GRAMMAR_PLUS_TOOLS = re.escape("Cannot use custom grammar constraints with tools.")
OVER_THE_CONTEXT = (
    re.escape("request (")
    + r"\d+"
    + re.escape(" tokens) exceeds the available context size (2048 tokens), try increasing it")
)
ERRORS = [
    pytest.param(
        {"tools": True, "extra_body": {"grammar": G.CLOSED_THINK}},
        GRAMMAR_PLUS_TOOLS,
        id="grammar-plus-tools",
    ),
    pytest.param({"prompt": "word " * 3000}, OVER_THE_CONTEXT, id="prompt-over-the-context"),
]


@STREAMS
@pytest.mark.parametrize(("options", "message"), ERRORS)
@pytest.mark.parametrize("server", ["think_deepseek_server", "hermes_tools_server"])
def test_a_400_is_an_http_backend_error_with_the_servers_message_and_no_address(
    request: pytest.FixtureRequest,
    server: str,
    options: dict[str, Any],
    message: str,
    stream: bool,
) -> None:
    proc: Proc = request.getfixturevalue(server)
    run = RunRequest(
        proc.model,
        64,
        prompt=options.get("prompt", G.QUESTION),
        tools=(weather_tool([]),) if options.get("tools") else (),
        stream=stream,
        extra_body=options.get("extra_body", {}),
    )
    with client_for(proc.base_url) as client:
        trace, exc = run_loop(client, run)
    assert isinstance(exc, BackendError) and exc.trace is trace
    # A prompt past the window is the 400 of kind context, with the server's numbers.
    kind = "context" if "prompt" in options else "http"
    check_redacted_http_error(exc, proc, message, kind)
    if kind == "context":
        assert isinstance(exc, BackendError) and exc.context_window == 2048
        assert exc.prompt_tokens is not None and exc.prompt_tokens > 2048
    [it] = trace.iterations
    assert (trace.outcome, it.ending, it.error) == ("BackendError", "error", f"BackendError: {exc}")
    assert it.raw_content == "" and it.finish_reason == ""
