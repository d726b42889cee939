"""Demo personas for reasoning across turns: what a server reads back, and thinking switches.

Each reproduces a behaviour from the project's field notes and names its public
source. Each docstring also says how the demo run ends on it: the
`Iteration.ending` of the last round of `RunRequest(model, 512,
system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools())` (which replays
reasoning on tool turns by default), and the run's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..testing import Response
from .kit import Heard, Persona, Said, Stream, count_words

__all__ = [
    "DeepSeekThinkingTools",
    "HonorsThinkingSwitch",
    "IgnoresThinkingSwitch",
    "VllmReadsReasoning",
    "reasoning_personas",
]


def _tool_turns(turn: Heard) -> list[tuple[int, Mapping[str, Any]]]:
    """(index, message) of each assistant turn with tool calls in the request."""
    messages = turn.request.get("messages") or []
    return [
        (i, m)
        for i, m in enumerate(messages)
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
    ]


def _thinking_off(request: Mapping[str, Any]) -> bool:
    """The request turns thinking off in any of the ways rig_nb's mapping sends it."""
    kwargs = request.get("chat_template_kwargs")
    if isinstance(kwargs, dict) and (
        kwargs.get("enable_thinking") is False or kwargs.get("thinking") is False
    ):
        return True
    return request.get("reasoning_effort") == "none"


class DeepSeekThinkingTools(Persona):
    """DeepSeek in thinking mode with tools: HTTP 400 when a tool-call turn comes back without
    its `reasoning_content`.

    The DeepSeek API (and Moonshot's Kimi) require the reasoning of every assistant turn that
    made tool calls to be sent back: without it the request is refused with 400 "Missing
    `reasoning_content` field in the assistant message at message index N"
    (earendil-works/pi#3636; for Kimi, minpeter.v2 PR#78 in the field notes). Reasoning arrives in
    `reasoning_content`, calls in `tool_calls`.

    Demo run: ends `answer` after two tool rounds, outcome ok; with
    `reasoning_replay="none"` the second request is answered 400 (outcome BackendError).
    """

    name = "deepseek-thinking-tools"
    owned_by = "deepseek"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        for index, message in _tool_turns(turn):
            if not isinstance(message.get("reasoning_content"), str):
                return Response(
                    {
                        "error": {
                            "message": "Missing `reasoning_content` field in the assistant "
                            f"message at message index {index}",
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "invalid_request_error",
                        }
                    },
                    400,
                )
        return self.finish(turn, self.respond(turn))

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        thinking = turn.thinking(plan)
        if plan:
            return Said(None, plan, reasoning_content=thinking)
        return Said(turn.answer(), reasoning_content=thinking)


class VllmReadsReasoning(Persona):
    """vLLM >= 0.20: writes reasoning as `reasoning` and reads it back only from `reasoning`.

    `reasoning_content` on an assistant turn is dropped silently (vllm-project/vllm#38488,
    QwenLM/qwen-code#4285), so the template renders an empty prior thought. The reasoning
    it does read counts in `prompt_tokens`. Without the plan of its earlier tool turns it
    starts over (gpt-oss on vLLM, vllm-project/vllm#27653) and answers from the last result
    alone, the rest of its plan lost.

    Demo run: ends `answer` after two tool rounds, outcome ok; with
    `reasoning_field="reasoning_content"` or `reasoning_replay="none"` it answers after one
    round from its last result alone (Oslo, no Lisbon, no sum).
    """

    name = "vllm-reads-reasoning"
    owned_by = "vllm"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        body = self.finish(turn, self.respond(turn))
        read = sum(count_words(_reasoning(m)) for _, m in _tool_turns(turn))
        usage = body["usage"]
        usage["prompt_tokens"] += read
        usage["total_tokens"] += read
        return body

    def respond(self, turn: Heard) -> Said:
        turns = _tool_turns(turn)
        if turns and not all(_reasoning(m).strip() for _, m in turns):
            last = turn.calls[-1].result if turn.calls else ""
            return Said(
                f"I have a result but no longer know what I was doing: {last}.",
                reasoning="Starting over: there is a tool result, but no plan I can see.",
            )
        plan = turn.plan()
        thinking = turn.thinking(plan)
        return (
            Said(None, plan, reasoning=thinking)
            if plan
            else Said(turn.answer(), [], None, thinking)
        )


def _reasoning(message: Mapping[str, Any]) -> str:
    value = message.get("reasoning")
    return value if isinstance(value, str) else ""


class HonorsThinkingSwitch(Persona):
    """A server whose template reads the thinking switch: off means no reasoning at all.

    What vLLM and SGLang document for Qwen3 (`chat_template_kwargs: {"enable_thinking":
    false}`), and the `reasoning_effort: "none"` of llama-server and OpenAI-style servers:
    with the switch off the reply has no reasoning field, no reasoning tokens and no
    `<think>` (the behaviour QwenLM/Qwen3#1297 expected). On or unset, reasoning arrives in
    `reasoning` with `reasoning_tokens` reported.

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "honors-thinking-switch"
    owned_by = "vllm"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        said = self.respond(turn)
        if _thinking_off(request):
            said = Said(said.content, said.tool_calls)
        body = self.finish(turn, said)
        if said.reasoning:
            details = {"reasoning_tokens": count_words(said.reasoning)}
            body["usage"]["completion_tokens_details"] = details
        return body

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        thinking = turn.thinking(plan)
        return (
            Said(None, plan, reasoning=thinking)
            if plan
            else Said(turn.answer(), [], None, thinking)
        )


class IgnoresThinkingSwitch(Persona):
    """LM Studio ignoring the thinking switch: reasoning arrives whatever the request says.

    LM Studio ignores `reasoning_effort` on /v1 for some models
    (lmstudio-ai/lmstudio-bug-tracker#2413), Ollama's /v1 ignores `think`, and vLLM still
    emits reasoning with `enable_thinking: false` (vllm-project/vllm#40816). Reasoning is
    always in `reasoning_content`, LM Studio's field.

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "ignores-thinking-switch"
    owned_by = "organization_owner"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        thinking = turn.thinking(plan)
        if plan:
            return Said(None, plan, reasoning_content=thinking)
        return Said(turn.answer(), reasoning_content=thinking)


def reasoning_personas() -> list[Persona]:
    """The reasoning-across-turns personas, in the order the demo lists them."""
    return [
        DeepSeekThinkingTools(),
        VllmReadsReasoning(),
        IgnoresThinkingSwitch(),
        HonorsThinkingSwitch(),
    ]
