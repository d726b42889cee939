"""Ollama's native wire carries the context window (`num_ctx`), and so shows its silent cut.

Ollama keeps the system prompt and the newest messages within num_ctx and reports what it
kept as `prompt_eval_count`. Over `/api/chat` the loop sends `RunRequest.context_window` as
`options.num_ctx`; a later turn whose prompt tokens equal that window, while the
conversation grew, kept only what fit: `Iteration.context_cut`, outcome `context_truncated`.
"""

from __future__ import annotations

from typing import Any

from runs import LoopRunner
from shared import ECHO

from rig_nb import Trace
from rig_nb.testing import ScriptedServer

DONE = {"done": True, "done_reason": "stop"}


def _reply(prompt_tokens: int, **message: Any) -> dict[str, Any]:
    body = {"role": "assistant", "content": "", **message}
    return {"model": "m", "message": body, "prompt_eval_count": prompt_tokens, **DONE}


def _call_then_answer(server: ScriptedServer, first: int, second: int) -> None:
    call = {"function": {"name": "echo", "arguments": {"text": "hi"}}}
    server.push(_reply(first, tool_calls=[call]), _reply(second, content="Echoed."))


def _run(run_loop: LoopRunner, **request: Any) -> Trace:
    return run_loop.trace(api="ollama", max_retries=2, max_tokens=32, **request)


def test_num_ctx_goes_out_and_a_turn_at_the_window_is_a_cut(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    _call_then_answer(server, 50, 64)
    trace = _run(run_loop, prompt="Echo hi.", tools=(ECHO,), context_window=64)
    assert [r.json["options"]["num_ctx"] for r in server.requests] == [64, 64]
    assert trace.settings["context_window_sent"] is True
    assert [it.context_cut for it in trace.iterations] == [False, True]
    assert trace.outcome == "context_truncated"


def test_a_grown_prompt_under_the_window_is_no_cut(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    _call_then_answer(server, 50, 63)
    trace = _run(run_loop, prompt="Echo hi.", tools=(ECHO,), context_window=64)
    assert [it.context_cut for it in trace.iterations] == [False, False]
    assert trace.outcome == "ok"


def test_a_first_turn_at_the_window_is_no_cut(server: ScriptedServer, run_loop: LoopRunner) -> None:
    # Nothing grew yet: a first prompt that fills the window exactly was not cut by a turn.
    server.push(_reply(64, content="Hello."))
    trace = _run(run_loop, context_window=64)
    assert trace.iterations[0].context_cut is False and trace.outcome == "ok"


def test_without_a_window_sent_equal_counts_claim_nothing(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    # No num_ctx went out: prompt tokens equal to some number prove nothing.
    _call_then_answer(server, 50, 64)
    trace = _run(run_loop, prompt="Echo hi.", tools=(ECHO,))
    assert "num_ctx" not in server.requests[0].json.get("options", {})
    assert [it.context_cut for it in trace.iterations] == [False, False]
