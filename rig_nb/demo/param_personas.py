"""Personas whose server accepts a request parameter and does not apply it, or refuses it.

A 200 says nothing about whether `tool_choice`, `parallel_tool_calls`, `max_tokens` or
`stop` were applied; the doctor's `honored_params` check asks each once. Every other
persona applies them (`rig_nb.demo.kit.Persona.finish`); these follow public reports of
servers that do not. Each answers the demo's tool run as `well-behaved` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..testing import Response
from .kit import Heard, Persona, Said, Stream

__all__ = [
    "IgnoresLimits",
    "IgnoresParallelToolCalls",
    "IgnoresToolChoice",
    "RejectsStop",
    "param_personas",
]


def _honest(turn: Heard) -> Said:
    """What a model with working parsers says: its planned calls, else its answer."""
    plan = turn.plan()
    return Said(None, plan) if plan else Said(turn.answer())


class IgnoresToolChoice(Persona):
    """Ollama 0.32's OpenAI and Anthropic layers: `tool_choice` accepted and ignored.

    Forced (`required`, a named tool) and `none` alike, the model decides as it would on
    "auto" (ollama/ollama#17921): it calls a tool when the prompt names a place or one of
    the offered tools, and answers in text otherwise, so `none` still brings a call back,
    a named tool is passed over for the one the prompt asks about, and `required` on a
    prompt that needs no tool gets text. The native `/api/chat` has no tool_choice at all
    (rig_nb offers it only the named tool, or none).

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "ollama-ignores-tool-choice"
    owned_by = "library"

    def respond(self, turn: Heard) -> Said:
        turn.tool_choice = "auto"
        offered = any(t.name in turn.prompt for t in turn.tools)
        if not turn.calls and not turn.names and not offered:
            return Said(turn.answer())
        return _honest(turn)


class IgnoresParallelToolCalls(Persona):
    """SGLang: `parallel_tool_calls: false` accepted and not enforced (sgl-project/sglang#37157).

    A prompt that asks about two cities gets both calls in one reply, whatever the
    request says.

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "sglang-ignores-parallel"
    owned_by = "sglang"
    ignores = frozenset({"parallel_tool_calls"})

    def respond(self, turn: Heard) -> Said:
        return _honest(turn)


class IgnoresLimits(Persona):
    """A server that takes `max_tokens` and `stop` and applies neither.

    Ollama's `/v1/chat/completions` ignores `max_tokens` (ollama/ollama#18575; and
    `max_completion_tokens` on llama-cpp-python, abetlen/llama-cpp-python#1907); mlx-vlm's
    OpenAI-compatible server accepts `stop` and silently ignores it
    (Blaizzy/mlx-vlm#1044). The whole answer comes back: more completion tokens than
    asked for, the stop string in it.

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "ignores-limits"
    ignores = frozenset({"max_tokens", "stop"})

    def respond(self, turn: Heard) -> Said:
        return _honest(turn)


class RejectsStop(Persona):
    """A model that refuses `stop` with a 400, as OpenAI's reasoning models do
    ("Unsupported parameter: 'stop' is not supported with this model":
    EleutherAI/lm-evaluation-harness#3215); everything else it applies.

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "rejects-stop"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        if request.get("stop"):
            error = {
                "message": "Unsupported parameter: 'stop' is not supported with this model.",
                "type": "invalid_request_error",
                "param": "stop",
                "code": "unsupported_parameter",
            }
            return Response({"error": error}, status=400)
        return super().reply(request)

    def respond(self, turn: Heard) -> Said:
        return _honest(turn)


def param_personas() -> list[Persona]:
    """The personas of this module, in the demo's order."""
    return [IgnoresToolChoice(), IgnoresParallelToolCalls(), IgnoresLimits(), RejectsStop()]
