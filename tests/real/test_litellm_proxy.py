"""rig_nb through a LiteLLM proxy (1.108.7) in front of llama-server, with the proxy's master key.

LiteLLM passes streams through unchanged, but in a non-streamed reply it moves a content that
STARTS with `<think>` and holds a closing tag into content plus reasoning_content
(FINDINGS.md, "Through the LiteLLM proxy"). So the same endpoint differs between stream and
non-stream behind `--reasoning-format none`, and not behind `--skip-chat-parsing`, whose bare
`</think>` leak has no opening tag; behind `deepseek` there is nothing to rewrite. The tables
say what the client records each way; the doctor's stream_parity must see the difference.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grammars as G
import pytest
from client_view import (
    CALL,
    CLOSED,
    CUT,
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
    prefill_round,
    run_loop,
    seen,
    weather_tool,
)
from llama_server_procs import LiteLLMProxy
from shared import report_checks

from rig_nb import Client, RunRequest
from rig_nb.capabilities import EndpointReport, describe_report, endpoint_report

# Outcomes of runs that returned without an answer: the last turn's ending.
NO_ANSWER, AS_TEXT = "reasoning_only", "text_tool_calls"
pytestmark = pytest.mark.real

LENGTH = "OutputLimitError"
DEEPSEEK = {
    "a": Seen(A, R, RC, "none", (), "answer", A, "stop", "ok"),
    "c": Seen("", CUT, RC, "none", (), "length_in_reasoning", "", "length", LENGTH),
    "d": Seen("", D_TEXT, RC, "none", (), "reasoning_only", "", "stop", NO_ANSWER),
    "d2": Seen("", D_TEXT, RC, "none", (), "reasoning_only", "", "stop", NO_ANSWER),
    "e": Seen(CALL, R, RC, "none", TAG, "text_tool_calls", CALL, "stop", AS_TEXT),
}
# Streamed: as llama-server sent it. Not streamed: what LiteLLM made of it.
NONE_STREAMED = {
    "a": answer(OPEN + CLOSED, "closed"),
    "c": Seen(OPEN + CUT, "", "", "unclosed", (), "length_in_reasoning", "", "length", LENGTH),
    "d": Seen(OPEN + D_TEXT, "", "", "unclosed", (), "reasoning_only", "", "stop", NO_ANSWER),
    "d2": Seen(OPEN + D2_TEXT, "", "", "closed", (), "reasoning_only", "", "stop", NO_ANSWER),
    "e": Seen(OPEN + E_TEXT, "", "", "closed", TAG, "text_tool_calls", CALL, "stop", AS_TEXT),
}
NONE_WHOLE = {
    # Rewritten: the whitespace around the tags stays, on both sides of the split.
    "a": Seen("\n\n" + A, "\n" + R, RC, "none", (), "answer", A, "stop", "ok"),
    # No closing tag: nothing to rewrite.
    "c": NONE_STREAMED["c"],
    "d": NONE_STREAMED["d"],
    "d2": Seen("", "\n" + D_TEXT, RC, "none", (), "reasoning_only", "", "stop", NO_ANSWER),
    "e": Seen("\n\n" + CALL, "\n" + R, RC, "none", TAG, "text_tool_calls", CALL, "stop", AS_TEXT),
}
SKIP = {
    "b": answer(CLOSED, "unopened"),
    "c": Seen(CUT, "", "", "none", (), "length", CUT, "length", LENGTH),
    "d": answer(D_TEXT, "none", D_TEXT),
    "d2": Seen(D2_TEXT, "", "", "unopened", (), "reasoning_only", "", "stop", NO_ANSWER),
    "e": Seen(E_TEXT, "", "", "unopened", TAG, "text_tool_calls", CALL, "stop", AS_TEXT),
}


def rows() -> list[Any]:
    out: list[Any] = []
    for flavour, whole, streamed in (
        ("think-deepseek", DEEPSEEK, DEEPSEEK),
        ("think-none", NONE_WHOLE, NONE_STREAMED),
        ("think-skip", SKIP, SKIP),
    ):
        for key in whole:
            for stream, want in ((False, whole[key]), (True, streamed[key])):
                how = "streamed" if stream else "whole"
                name = f"{flavour}-{key}-{how}-{want.ending}"
                out.append(pytest.param(flavour, key, stream, want, id=name))
    return out


def test_the_rewrite_differs_between_the_two_paths_only_behind_none() -> None:
    # The tables themselves: LiteLLM changes replies only where content starts with `<think>`.
    assert [k for k in NONE_WHOLE if NONE_WHOLE[k] != NONE_STREAMED[k]] == ["a", "d2", "e"]
    assert SKIP["b"].raw == CLOSED and SKIP["b"].shape == "unopened"


def key(proxy: LiteLLMProxy) -> str:
    """The proxy's master key (generated per run)."""
    assert proxy.api_key
    return proxy.api_key


@pytest.fixture
def proxy_client(litellm_server: LiteLLMProxy) -> Iterator[Client]:
    with client_for(litellm_server.base_url, key(litellm_server)) as client:
        yield client


@pytest.mark.parametrize(("flavour", "key", "stream", "want"), rows())
def test_each_forced_shape_through_the_proxy(
    litellm_server: LiteLLMProxy,
    proxy_client: Client,
    flavour: str,
    key: str,
    stream: bool,
    want: Seen,
) -> None:
    shape = G.SHAPES[key]
    run = RunRequest(
        litellm_server.models[flavour],
        shape.max_tokens,
        prompt=G.QUESTION,
        stream=stream,
        extra_body={"grammar": shape.grammar},
    )
    trace, result = run_loop(proxy_client, run)
    assert seen(trace) == want
    [it] = trace.iterations
    check_streaming(it, stream)
    # LiteLLM adds its own reasoning_tokens estimate to streamed usage only (FINDINGS.md).
    assert ("reasoning_tokens" in it.usage) is stream
    if want.outcome == "ok":
        assert result.text == want.text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("flavour", ["think-deepseek", "think-none", "think-skip"])
def test_text_tool_call_recovery_through_the_proxy(
    litellm_server: LiteLLMProxy, proxy_client: Client, flavour: str, stream: bool
) -> None:
    # Behind none, the non-streamed call text arrives after LiteLLM's rewrite ("\n\n<tool_call>")
    # and the streamed one after `</think>`: the loop runs the same call either way.
    check_text_call_recovery(proxy_client, litellm_server.models[flavour], stream)


CALLED = Seen("", "", "", "none", (), "tool_calls", "", "tool_calls", "ok")
PREFILL = [
    pytest.param("think-deepseek", False, CALLED, id="deepseek-whole"),
    pytest.param("think-deepseek", True, CALLED, id="deepseek-streamed"),
    # The empty think block the template rendered for the prefill turn: rewritten when whole.
    pytest.param(
        "think-none",
        False,
        Seen("\n\n", "\n\n", RC, "none", (), "tool_calls", "", "tool_calls", "ok"),
        id="none-whole",
    ),
    pytest.param(
        "think-none",
        True,
        Seen(OPEN + "\n</think>\n\n", "", "", "closed", (), "tool_calls", "", "tool_calls", "ok"),
        id="none-streamed",
    ),
]


@pytest.mark.parametrize(("flavour", "stream", "want"), PREFILL)
def test_real_tool_calls_pass_through_the_proxy(
    litellm_server: LiteLLMProxy, proxy_client: Client, flavour: str, stream: bool, want: Seen
) -> None:
    trace, it, reply = prefill_round(proxy_client, litellm_server.models[flavour], stream)
    assert seen(trace) == want
    check_streaming(it, stream)
    check_prefill_calls(reply)


def test_the_split_closing_tag_passes_the_proxy_unchanged(
    litellm_server: LiteLLMProxy, tmp_path: Path
) -> None:
    model = litellm_server.models["think-none"]
    out = tmp_path / "stream.jsonl"
    check_split_tag(litellm_server.base_url, key(litellm_server), model, OPEN + CLOSED, out)
    # The key went to LiteLLM (the request was served) and never into the recording.
    assert key(litellm_server) not in out.read_text()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_400_through_the_proxy_is_an_http_error_without_key_or_address(
    litellm_server: LiteLLMProxy, proxy_client: Client, stream: bool
) -> None:
    run = RunRequest(
        litellm_server.models["think-deepseek"],
        64,
        prompt=G.QUESTION,
        tools=(weather_tool([]),),
        stream=stream,
        extra_body={"grammar": G.CLOSED_THINK},
    )
    trace, exc = run_loop(proxy_client, run)
    message = (
        "litellm\\.BadRequestError: OpenAIException - Cannot use custom grammar constraints "
        "with tools\\..*"
    )
    check_redacted_http_error(exc, litellm_server, message)
    assert trace.iterations[-1].ending == "error"


def report_of(litellm_server: LiteLLMProxy, flavour: str) -> tuple[str, EndpointReport]:
    with client_for(litellm_server.base_url, key(litellm_server)) as client:
        report = endpoint_report(client, litellm_server.models[flavour], checks=report_checks())
    text = describe_report(report)
    print(f"\n{text}")
    assert key(litellm_server) not in text
    return text, report


def test_the_doctor_sees_the_proxys_rewrite_as_a_stream_parity_difference(
    litellm_server: LiteLLMProxy,
) -> None:
    """Behind `none` with a reasoning budget (the server closes the think block itself), the
    doctor's question comes back as `<think>\\n...</think>` when streamed and as content plus
    reasoning_content when not."""
    _, report = report_of(litellm_server, "think-none-budget")
    assert report.server == "litellm"
    parity = report.check("stream_parity")
    assert parity.verdict.startswith("differs: ")
    assert "question: reasoning in the field only when not streamed" in parity.verdict
    assert "--reasoning-format deepseek" in parity.advice and "LiteLLM" in parity.advice
    # What the non-streamed path shows: the reasoning field, LiteLLM's doing.
    assert report.check("reasoning_location").verdict == "field:reasoning_content"
    # LiteLLM's own estimate in streamed usage (not a count from the server).
    assert report.check("reasoning_tokens_reported").verdict == "yes"
    assert report.check("usage_reported").verdict == "yes"


def test_the_doctor_behind_plain_none_sees_no_rewrite_because_smollm2_never_closes_the_block(
    litellm_server: LiteLLMProxy,
) -> None:
    """Unforced, SmolLM2 stops inside the think block the template opened (content
    `<think>\\n17 * 23 = 347`): no closing tag, nothing for LiteLLM to rewrite, so both paths
    agree. (DESIGN.md's expectation of `differs` here needs a model that closes its block;
    the budget flavour above is that model.)"""
    _, report = report_of(litellm_server, "think-none")
    assert report.server == "litellm"
    question = report.check("stream_parity").trace
    assert question is not None
    closed = "</think>" in question.iterations[-1].raw_content
    assert report.check("stream_parity").verdict.startswith("differs" if closed else "same")
    assert report.check("reasoning_location").verdict.startswith("content:")
