"""What a real vLLM refuses, as rig_nb reports it: the context error with vLLM's numbers, a
`max_tokens` past the window, and a `structured_outputs` grammar it cannot compile.

vLLM 0.32.0's words (tests/real/FINDINGS.md ("vLLM")): past the window, a 400 "This model's maximum
context length is 2048 tokens. However, your prompt contains at least 2049 input tokens, ...";
max_tokens over the window, a 400 "max_tokens=5000 cannot be greater than max_model_len=2048.
..." (not a prompt that does not fit); a grammar it refuses, a 400 before any token when not
streamed, and a 200 whose only event is `{"error": {..., "code": 400}}` when streamed: the same
BackendError both ways.
"""

from __future__ import annotations

import pytest
from vllm_server import MAX_MODEL_LEN, MODEL

from rig_nb import BackendError, Client, RunRequest
from rig_nb.capabilities.long_context import long_prompt

STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
BAD_GRAMMAR = {"structured_outputs": {"grammar": "root ::= foo"}}
GRAMMAR_SAID = (
    "Invalid grammar specification: Failed to convert the grammar from GBNF to Lark: "
    "Rule 'foo' not found"
)


def _error(client: Client, request: RunRequest) -> BackendError:
    trace = client.run_trace(request)
    exc = trace.exception
    assert isinstance(exc, BackendError), trace.error
    [it] = trace.iterations
    assert it.ending == "error"
    return exc


@STREAMS
def test_a_prompt_past_the_window_is_kind_context_with_vllms_numbers(
    client: Client, stream: bool
) -> None:
    exc = _error(client, RunRequest(MODEL, 8, prompt=long_prompt(2300), stream=stream))
    assert (exc.kind, exc.status_code) == ("context", 400)
    # vLLM counts the prompt only up to the window plus one token.
    assert (exc.context_window, exc.prompt_tokens) == (MAX_MODEL_LEN, MAX_MODEL_LEN + 1)
    assert "your prompt contains at least 2049 input tokens" in exc.message


@STREAMS
def test_max_tokens_past_the_window_is_kind_http_not_context(client: Client, stream: bool) -> None:
    exc = _error(client, RunRequest(MODEL, 5000, prompt="Hi", stream=stream))
    assert (exc.kind, exc.status_code) == ("http", 400)
    assert (exc.context_window, exc.prompt_tokens) == (None, None)
    assert "max_tokens=5000 cannot be greater than max_model_len=2048" in exc.message


def test_a_grammar_vllm_refuses_is_kind_http_with_its_words(client: Client) -> None:
    exc = _error(client, RunRequest(MODEL, 8, prompt="Hi", extra_body=BAD_GRAMMAR))
    assert (exc.kind, exc.status_code) == ("http", 400)
    assert GRAMMAR_SAID in exc.message


def test_a_grammar_vllm_refuses_is_the_same_error_streamed(client: Client) -> None:
    # Its in-stream error object's `code` is the HTTP status (issue 45).
    exc = _error(client, RunRequest(MODEL, 8, prompt="Hi", stream=True, extra_body=BAD_GRAMMAR))
    assert GRAMMAR_SAID in exc.message
    assert (exc.kind, exc.status_code) == ("http", 400)
    whole = _error(client, RunRequest(MODEL, 8, prompt="Hi", extra_body=BAD_GRAMMAR))
    assert (whole.kind, whole.status_code, whole.message) == (exc.kind, 400, exc.message)
