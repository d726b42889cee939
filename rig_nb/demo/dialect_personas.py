"""Demo personas for leak dialects beyond `<think>`: gpt-oss harmony, text calls, lost answers.

Each reproduces a reply shape from the project's field notes and names its
public source. Each docstring also says how the demo run ends on it: the
`Iteration.ending` of the last round of `RunRequest(model, 512,
system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools())`, and the run's
outcome. The personas that write tool calls as text run the tool loop to an
answer with `recover_text_tool_calls=True`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .kit import Heard, Persona, Said

__all__ = [
    "AnswerInReasoning",
    "DraftThenCall",
    "GatewayReasoningDetails",
    "GptOssRawHarmony",
    "GptOssStrippedTokens",
    "MistralMlxTextCalls",
    "MistralTextCalls",
    "Qwen3CoderTextCalls",
    "dialect_personas",
]

Plan = list[tuple[str, dict[str, Any]]]


class GptOssRawHarmony(Persona):
    """gpt-oss on a server without a harmony parser: raw channel tokens in content, calls as text.

    SGLang and lmdeploy serving gpt-oss without the gpt-oss reasoning and tool
    parsers send the harmony messages verbatim: `<|channel|>analysis<|message|>
    ...<|end|><|start|>assistant<|channel|>final<|message|>...`
    (sgl-project/sglang#10061, InternLM/lmdeploy#3954). A tool call is a
    commentary message written as text, `<|start|>assistant<|channel|>commentary
    to=functions.NAME <|constrain|>json<|message|>{...}<|call|>` (the format
    vLLM's openai tool parser and llama.cpp's gpt-oss handler read), with
    finish_reason "stop" and no `tool_calls`.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`, outcome ok
    (split_reasoning: the analysis is reasoning, the final message the answer).
    """

    name = "gpt-oss-raw-harmony"
    owned_by = "sglang"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        analysis = f"<|channel|>analysis<|message|>{turn.thinking(plan)}<|end|>"
        if not plan:
            final = f"<|start|>assistant<|channel|>final<|message|>{turn.answer()}"
            return Said(analysis + final)
        calls = "".join(
            f"<|start|>assistant<|channel|>commentary to=functions.{name} "
            f"<|constrain|>json<|message|>{json.dumps(args)}<|call|>"
            for name, args in plan
        )
        return Said(analysis + calls)


class GptOssStrippedTokens(Persona):
    """gpt-oss with its special tokens stripped: `analysis...assistantfinal...` in content.

    llama-server and MLX servers that drop special tokens from the text leave
    the channel names glued to the words: `analysisUser says "Hello World!"...
    assistantfinalHello! How can I help you today?`
    (oobabooga/text-generation-webui#7374). The server's tool parser still
    reads the calls, so they arrive in `tool_calls`, with the token-stripped
    analysis left in content beside them.

    Demo run: ends `answer`, outcome ok: split_reasoning splits the token-stripped form
    as the tokened one (the analysis is reasoning, the text after `assistantfinal` the
    answer); the content's leak is `harmony`.
    """

    name = "gpt-oss-stripped-tokens"
    owned_by = "llamacpp"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        analysis = f"analysis{turn.thinking(plan)}"
        if plan:
            return Said(analysis, plan)
        return Said(f"{analysis}assistantfinal{turn.answer()}")


def _qwen3_coder_call(name: str, args: Mapping[str, Any]) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for k, v in args.items()
    )
    return f"<function={name}>\n{params}</function>\n</tool_call>"


class Qwen3CoderTextCalls(Persona):
    """Qwen3-Coder on Ollama: `<function=NAME><parameter=K>V</parameter></function>` as text.

    About one turn in five, Ollama's qwen3-coder left the XML call in content,
    its opening `<tool_call>` consumed: `<function=exec_command>\\n<parameter=cmd>
    \\necho LEAK_TEST\\n</parameter>\\n</function>\\n</tool_call>` (ollama/ollama
    PR#17742; the same XML in content with vLLM's qwen3 parsers,
    vllm-project/vllm#42021). Here every tool turn does it; finish_reason "stop",
    no `tool_calls`.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "qwen3-coder-text-calls"
    owned_by = "library"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        if not plan:
            return Said(turn.answer())
        return Said("\n".join(_qwen3_coder_call(n, a) for n, a in plan))


def _mistral_id(turn: Heard, index: int) -> str:
    """Nine alphanumeric characters, as Mistral's tokenizer requires of a call id."""
    digest = hashlib.sha256(f"{turn.digest}:{index}".encode()).hexdigest()
    return "".join(c for c in digest if c.isalpha())[:4] + digest[:5]


class MistralTextCalls(Persona):
    """Mistral Small 3.2 on LM Studio: `[TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}]`.

    The tool-call token and a JSON list of calls in content instead of
    `tool_calls` (lmstudio-ai/lmstudio-bug-tracker#797: `[TOOL_CALLS][{"name":
    "read_file", "arguments": {...}, "id": "abcdefghi"}]`), finish_reason "stop".
    The other Mistral shape is `mistral-mlx-text-calls`.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "mistral-text-calls"
    owned_by = "organization_owner"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        if not plan:
            return Said(turn.answer())
        calls = [
            {"name": n, "arguments": a, "id": _mistral_id(turn, i)} for i, (n, a) in enumerate(plan)
        ]
        return Said("[TOOL_CALLS]" + json.dumps(calls))


class MistralMlxTextCalls(Persona):
    """Mistral on mlx-lm: `[TOOL_CALLS]NAME[ARGS]{...}` per call, as text.

    Mistral's tokenizers from v11 on write one `[TOOL_CALLS]` per call with the
    name before `[ARGS]`; mlx-lm's server left them in content
    (ml-explore/mlx-lm PR#1643: `[TOOL_CALLS]get_weather[ARGS]{"city":
    "Paris"}`), finish_reason "stop". The list shape is `mistral-text-calls`.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "mistral-mlx-text-calls"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        if not plan:
            return Said(turn.answer())
        return Said("".join(f"[TOOL_CALLS]{n}[ARGS]{json.dumps(a)}" for n, a in plan))


def _draft(calls: Plan) -> str:
    return " ".join(
        f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls
    )


class DraftThenCall(Persona):
    """A model that drafts its tool call inside `<think>`, then makes it for real in `tool_calls`.

    Qwen3-Coder under vLLM's qwen3_coder parser (and in verl rollouts) writes
    the call inside its reasoning first, `<think>...<tool_call>{"name": "A",
    "arguments": {}}</tool_call>...</think>`, then makes it (vllm-project/vllm
    PR#55759, volcengine/verl#4757): a client that runs calls found in the
    reasoning as well as the real ones runs each twice, a double side effect.
    Here the real calls arrive in `tool_calls`; on the last round the reasoning
    drafts one more call it decides not to make.

    Demo run: ends `answer`, outcome ok, each tool run once (also with
    `recover_text_tool_calls=True`).
    """

    name = "draft-then-call"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        think = turn.thinking(plan)
        if plan:
            draft = f"Drafting the call first: {_draft(plan)} That looks right, so I make it."
            return Said(f"<think>\n{think} {draft}\n</think>\n\n", plan)
        if not turn.calls:
            return Said(f"<think>\n{think}\n</think>\n\n{turn.answer()}")
        last = turn.calls[-1]
        again = _draft([(last.name, dict(last.arguments))])
        doubt = f"Should I call it again? {again} No: I already have that result."
        return Said(f"<think>\n{think} {doubt}\n</think>\n\n{turn.answer()}")


class AnswerInReasoning(Persona):
    """LM Studio with Qwen3.5: after the tools ran, the whole answer in `reasoning_content`.

    The final reply has `content: ""`, a long `reasoning_content` that holds the
    answer, finish_reason "stop" and usage all zeros
    (lmstudio-ai/lmstudio-bug-tracker#1602); vLLM's deepseek_r1 parser did the
    same with thinking off (QwenLM/Qwen3#1297). Tool rounds are well formed:
    reasoning in the field, calls in `tool_calls`.

    Demo run: ends `reasoning_only`, outcome reasoning_only (no answer).
    """

    name = "answer-in-reasoning"
    owned_by = "organization_owner"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        think = turn.thinking(plan)
        if plan:
            return Said("", plan, reasoning_content=think)
        return Said("", reasoning_content=f"{think}\n\n{turn.answer()}")

    def finish(self, turn: Heard, said: Said) -> dict[str, Any]:
        body = super().finish(turn, said)
        if not said.tool_calls and body["choices"][0]["finish_reason"] == "stop":
            body["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return body


class GatewayReasoningDetails(Persona):
    """A gateway that passes reasoning as a `reasoning_details` list of parts, no string field.

    OpenRouter sends the reasoning as `reasoning_details: [{"type":
    "reasoning.text", "text": ..., "format": ..., "index": 0}, ...]`, in
    deltas too; clients had to learn to read and keep the list
    (UKGovernmentBEIS/inspect_ai PR#2954 and PR#2996; earendil-works/pi PR#8246:
    `reasoning.text` entries of `delta.reasoning_details` were dropped). The
    field notes list it among the reasoning field names ("some gateways a
    `reasoning_details` list"). Here the parts split the reasoning in two and
    must be joined in order; content is clean and calls arrive in `tool_calls`.

    Demo run: ends `answer`, outcome ok, reasoning_field `reasoning_details`.
    """

    name = "gateway-reasoning-details"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        think = turn.thinking(plan)
        return Said(None if plan else turn.answer(), plan, reasoning_content=think)

    def finish(self, turn: Heard, said: Said) -> dict[str, Any]:
        body = super().finish(turn, said)
        message = body["choices"][0]["message"]
        text = message.pop("reasoning_content", None)
        if text:
            cut = text.find(" ", len(text) // 2) + 1  # two parts, split between words
            parts = [text[:cut], text[cut:]] if cut > 0 else [text]
            message["reasoning_details"] = [
                {"type": "reasoning.text", "text": part, "format": "unknown", "index": i}
                for i, part in enumerate(parts)
            ]
        return body


def dialect_personas() -> list[Persona]:
    """The dialect personas, in the order the demo shows them."""
    return [
        GptOssRawHarmony(),
        GptOssStrippedTokens(),
        Qwen3CoderTextCalls(),
        MistralTextCalls(),
        MistralMlxTextCalls(),
        DraftThenCall(),
        AnswerInReasoning(),
        GatewayReasoningDetails(),
    ]
