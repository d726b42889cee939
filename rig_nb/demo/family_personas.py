"""Demo personas for every family's own call markup (DESIGN, "Dialects of every family").

Each writes the calls the way its family's chat template renders them (the
llama.cpp tree's models/templates/, and the parser tests of vLLM, llama.cpp and
SGLang that shared/peer-cases collects), and names its public source. Each
docstring also says how the demo run ends on it, as in `dialect_personas`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .kit import Heard, MarkupCalls, Persona, Said

__all__ = [
    "DeepSeekV31Tokens",
    "Gemma4TextCalls",
    "GlmMarkupInToolName",
    "GptOssAnalysisRecipient",
    "KimiCallsInReasoning",
    "MiniMaxXmlCalls",
    "family_personas",
]

BAR, SEP = "\uff5c", "\u2581"


def _ds(word: str) -> str:
    return f"<{BAR}{word.replace('_', SEP)}{BAR}>"


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


class MiniMaxXmlCalls(MarkupCalls):
    """MiniMax-M2 without its tool parser: `<minimax:tool_call>` XML calls left in content.

    MiniMax-M2 writes `<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter
    name="K">V</parameter>\\n</invoke>\\n</minimax:tool_call>` after its inline
    `<think>` block (reported as text in MiniMax-AI/MiniMax-M2.5#10; llama.cpp's
    models/templates/MiniMax-M2.jinja renders it). A server without the family's
    tool parser passes it through as text, finish_reason "stop".

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "minimax-xml-calls"
    owned_by = "vllm"

    def calls(self, plan: list[tuple[str, dict[str, Any]]]) -> str:
        invokes = "".join(
            f'<invoke name="{name}">\n'
            + "".join(f'<parameter name="{k}">{_value(v)}</parameter>\n' for k, v in args.items())
            + "</invoke>\n"
            for name, args in plan
        )
        return f"<minimax:tool_call>\n{invokes}</minimax:tool_call>"


def _gemma_value(v: Any) -> str:
    if isinstance(v, str):
        return f'<|"|>{v}<|"|>'
    return json.dumps(v)


class Gemma4TextCalls(MarkupCalls):
    """Gemma 4 without its tool parser: `<|tool_call>call:NAME{...}<tool_call|>` in content.

    Gemma 4 writes its thought channel and then `<|tool_call>call:get_weather{city:
    <|"|>Lisbon<|"|>}<tool_call|>`: bare keys, strings between `<|"|>` tokens
    (ggml-org/llama.cpp#22371; llama.cpp's models/templates/google-gemma-4-31B-it.jinja
    renders it). Without the family's parser the calls stay in content.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`, outcome `leaked`
    (the thought channel stays in the answer).
    """

    name = "gemma4-text-calls"
    owned_by = "vllm"

    def reasoning(self, turn: Heard, plan: list[tuple[str, dict[str, Any]]]) -> str:
        return f"<|channel>thought\n{turn.thinking(plan)}<channel|>"

    def calls(self, plan: list[tuple[str, dict[str, Any]]]) -> str:
        return "".join(
            f"<|tool_call>call:{name}{{"
            + ",".join(f"{k}:{_gemma_value(v)}" for k, v in args.items())
            + "}<tool_call|>"
            for name, args in plan
        )


class DeepSeekV31Tokens(MarkupCalls):
    """DeepSeek V3.1 without its tool parser: the tool-call tokens in content after `</think>`.

    DeepSeek V3.1 ends its reasoning with a bare `</think>` (the template opened
    it) and writes `<|tool calls begin|><|tool call begin|>NAME<|tool sep|>{...}
    <|tool call end|><|tool calls end|>` with fullwidth bars and U+2581 for the
    spaces. DeepSeek's tool tokens were seen in content through LiteLLM
    (google/adk-python PR#5654); this spelling is the one llama.cpp's
    models/templates/deepseek-ai-DeepSeek-V3.1.jinja renders (its
    tests/test-chat.cpp, DeepSeek-V3.1 cases).

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "deepseek-v31-tokens"
    owned_by = "vllm"

    def reasoning(self, turn: Heard, plan: list[tuple[str, dict[str, Any]]]) -> str:
        return f"{turn.thinking(plan)}</think>"

    def calls(self, plan: list[tuple[str, dict[str, Any]]]) -> str:
        calls = "".join(
            _ds("tool_call_begin") + name + _ds("tool_sep") + json.dumps(args)
            + _ds("tool_call_end")
            for name, args in plan
        )  # fmt: skip
        return _ds("tool_calls_begin") + calls + _ds("tool_calls_end")


def _kimi_calls(plan: list[tuple[str, dict[str, Any]]]) -> str:
    calls = "".join(
        f"<|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>"
        f"{json.dumps(args)}<|tool_call_end|>"
        for i, (name, args) in enumerate(plan)
    )
    return f"<|tool_calls_section_begin|>{calls}<|tool_calls_section_end|>"


class KimiCallsInReasoning(Persona):
    """Kimi-K2-Thinking whose calls land in `reasoning_content`: reported, never run.

    Kimi-K2-Thinking opens a call section before it closes its reasoning; a
    server whose reasoning parser ends the block only at `</think>` puts the
    whole call section into the reasoning field and sends empty content (tool
    calls inside the reasoning field, Kimi among others: vllm-project/vllm#46040,
    vllm PR#32216). rig_nb never runs what is in reasoning: it reports it
    (`Iteration.reasoning_leaks`).

    Demo run: ends `tool_calls_in_reasoning` in the first round, outcome
    tool_calls_in_reasoning (the calls are reported, not run).
    """

    name = "kimi-calls-in-reasoning"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        think = turn.thinking(plan)
        if not plan:
            return Said(turn.answer(), reasoning_content=think)
        return Said("", reasoning_content=f"{think} {_kimi_calls(plan)}")


class GptOssAnalysisRecipient(Persona):
    """gpt-oss writing its calls on the analysis channel, with a `to=functions.NAME` recipient.

    gpt-oss sometimes addresses a call from the analysis channel: `<|channel|>
    analysis to=functions.get_weather <|constrain|>json<|message|>{...}<|call|>`
    (ai-dynamo/dynamo PR#10366: about half of gpt-oss-120B's real calls; llama.cpp's
    tests/test-chat.cpp reads a recipient on either channel as a call). Without a
    harmony tool parser the messages stay in content; the recipient makes them
    calls on any channel.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "gpt-oss-analysis-recipient"
    owned_by = "llamacpp"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        analysis = f"<|channel|>analysis<|message|>{turn.thinking(plan)}<|end|>"
        if not plan:
            return Said(f"{analysis}<|start|>assistant<|channel|>final<|message|>{turn.answer()}")
        calls = "".join(
            f"<|start|>assistant<|channel|>analysis to=functions.{name} <|constrain|>json"
            f"<|message|>{json.dumps(args)}<|call|>"
            for name, args in plan
        )
        return Said(analysis + calls)


class GlmMarkupInToolName(Persona):
    """GLM behind a parser that misreads its markup: `<arg_key>` inside native tool names.

    A server that half-parses GLM's call hands on `read<arg_key>filePath</arg_key>
    <arg_value>/home/...</arg_value>` as the tool name (zai-org/GLM-5#84). rig_nb
    feeds such a call back as a tool error instead of running it (native call
    hygiene); this persona then answers from what it has.

    Demo run: ends `answer` after the calls were refused, outcome ok.
    """

    name = "glm-markup-in-tool-name"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        if turn.calls:
            return Said("I could not use the tools here; please check the server's tool parser.")
        plan = turn.plan()
        if not plan:
            return Said(turn.answer())
        calls: list[tuple[str, Mapping[str, Any] | str]] = [
            (
                name
                + "".join(
                    f"<arg_key>{k}</arg_key><arg_value>{_value(v)}</arg_value>"
                    for k, v in args.items()
                ),
                "",
            )
            for name, args in plan
        ]
        return Said(None, calls)


def family_personas() -> list[Persona]:
    """The family personas, in the order the demo shows them."""
    return [
        MiniMaxXmlCalls(),
        Gemma4TextCalls(),
        DeepSeekV31Tokens(),
        KimiCallsInReasoning(),
        GptOssAnalysisRecipient(),
        GlmMarkupInToolName(),
    ]
