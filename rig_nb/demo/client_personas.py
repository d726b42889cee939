"""Personas that refuse what a coding-agent client sends, as the servers it met did.

Each answers like `well-behaved` until a request carries the shape its server refused:
Codex's non-function `custom` tool (llama-server, openai/codex#10635) or Claude Code's
`system` turn inside the conversation (vLLM before 0.23, vllm-project/vllm#44000; Ollama,
ollama/ollama#16372). The doctor's `agent_clients` check names the client that broke.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..testing import Response
from .evaluation_personas import agent_step
from .kit import Heard, Persona, Said, Stream

__all__ = ["CustomToolRejecting", "SystemTurnRejecting", "client_personas"]

# llama-server's words for a tool that is not a function (openai/codex#10635).
CUSTOM_TOOL_MESSAGE = "'type' of tool must be 'function'"


def _well_behaved(turn: Heard) -> Said:
    said = agent_step(turn)
    if said is not None:
        return said
    plan = turn.plan()
    return Said(None, plan) if plan else Said(turn.answer())


def _system_turn_message(index: int) -> str:
    """vLLM's words (before 0.23) for a system turn inside `messages` (vllm-project/vllm#44000)."""
    return (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'messages', "
        f"{index}, 'role'), 'msg': \"Input should be 'user' or 'assistant'\", 'input': "
        "'system', 'ctx': {'expected': \"'user' or 'assistant'\"}}"
    )


class CustomToolRejecting(Persona):
    """llama-server before it skipped non-function tools: a 400 for Codex's `custom` tool.

    A tool list holding any tool whose `type` is not `function` (Codex's freeform
    `apply_patch`) is answered 400 `'type' of tool must be 'function'`, llama-server's
    words (openai/codex#10635, ggml-org/llama.cpp#20156; fixed by skipping such tools in
    ggml-org/llama.cpp#23041). Anything else is answered as `well-behaved` answers it.

    Demo run: ends `answer` after two tool rounds, outcome ok (rig_nb's own tools are
    functions).
    """

    name = "custom-tool-rejecting"
    owned_by = "llamacpp"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        tools = request.get("tools")
        for tool in tools if isinstance(tools, list) else []:
            if isinstance(tool, dict) and tool.get("type", "function") != "function":
                error = {
                    "code": 400,
                    "message": CUSTOM_TOOL_MESSAGE,
                    "type": "invalid_request_error",
                }
                return Response({"error": error}, 400)
        return super().reply(request)

    def respond(self, turn: Heard) -> Said:
        return _well_behaved(turn)


class SystemTurnRejecting(Persona):
    """vLLM before 0.23 on /v1/messages: a 400 for a `system` turn inside the conversation.

    Claude Code 2.1.154 and later send a `system`-role turn inside `messages` (its
    reminders); vLLM's Messages route validated roles as `user` or `assistant` only and
    answered 400 with pydantic's `literal_error` (vllm-project/vllm#44000; Ollama's
    Anthropic layer refused it too, ollama/ollama#16372). A system message after the
    conversation began is refused with vLLM's words; anything else is answered as
    `well-behaved` answers it.

    Demo run: ends `answer` after two tool rounds, outcome ok (rig_nb sends its system
    prompt first).
    """

    name = "system-turn-rejecting"
    owned_by = "vllm"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        messages = request.get("messages")
        listed = messages if isinstance(messages, list) else []
        roles = [m.get("role") if isinstance(m, dict) else None for m in listed]
        leading = next((i for i, r in enumerate(roles) if r != "system"), len(roles))
        late = [i for i, r in enumerate(roles) if r == "system" and i >= leading]
        if late:
            # Counted as the Messages request counts it: the leading system prompt is not
            # one of its `messages`.
            message = _system_turn_message(late[0] - leading)
            error = {"message": message, "type": "Bad Request", "param": None, "code": 400}
            return Response({"error": error}, 400)
        return super().reply(request)

    def respond(self, turn: Heard) -> Said:
        return _well_behaved(turn)


def client_personas() -> list[Persona]:
    """The personas that refuse an agent client's request shape."""
    return [CustomToolRejecting(), SystemTurnRejecting()]
