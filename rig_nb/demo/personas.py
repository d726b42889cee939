"""The demo endpoint's models: each persona reproduces a reply shape reported from real servers.

The reports are summarised in the project's field notes; each docstring names
the public issues a persona follows and says how the demo run ends on it: the
`Iteration.ending` of the last round of `RunRequest(model, 512, system=DEMO_SYSTEM,
prompt=DEMO_PROMPT, tools=demo_tools())`, and the run's outcome. Behaviour common
to all of them (reading the request, planning calls, the token budget) lives in
`rig_nb.demo.kit`; the personas for leak dialects beyond `<think>` live in
`rig_nb.demo.dialect_personas`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from ..testing import Response
from .client_personas import client_personas
from .context_personas import context_personas
from .dialect_personas import dialect_personas
from .evaluation_personas import agent_step, evaluation_personas
from .family_personas import family_personas
from .kit import Heard, MarkupCalls, Persona, Said, Stream, count_words, short
from .load_personas import load_personas
from .param_personas import param_personas
from .reasoning_personas import reasoning_personas
from .schema_personas import held_call, schema_personas

__all__ = ["XSS_IMG", "XSS_SCRIPT", "default_personas"]

XSS_SCRIPT = "<script>window.__rig_xss=1</script>"
XSS_IMG = '<img src=x onerror="window.__rig_xss=1">'


class WellBehaved(Persona):
    """A model behind working reasoning and tool parsers: real `tool_calls`, clean content.

    The baseline: what vLLM started with `--reasoning-parser` and
    `--tool-call-parser`, or a hosted API, returns. No reasoning reaches the reply.
    Given the agentic scenario's task, it walks the chain one dependent step at a time.
    A call's arguments are ones the tool's schema admits, as a server whose grammar holds
    the model to the schema gives (`rig_nb.demo.schema_personas`).

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "well-behaved"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        step = agent_step(turn)  # the agentic scenario: one dependent step at a time
        if step is not None:
            return step
        return held_call(turn)  # arguments each tool's schema admits


class Qwen3NoParser(Persona):
    """Qwen3/QwQ on vLLM without a reasoning parser: no opening tag, a bare `</think>`, the answer.

    The chat template ends the prompt with `<think>`, so the reply starts
    mid-reasoning and only the closing tag reaches content (vllm-project/vllm#17144,
    #31045; "only one closing tag" in QwenLM/Qwen3-VL#1504 and
    open-webui/open-webui#11259). A tool parser is configured, so calls arrive
    in `tool_calls`, with the reasoning left in content beside them.

    Demo run: ends `answer` (what precedes the bare `</think>` is stripped), outcome ok.
    """

    name = "qwen3-no-parser"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        think = turn.thinking(plan) + "\n</think>\n\n"
        return Said(think, plan) if plan else Said(think + turn.answer())


class R1JsonSketch(Persona):
    """DeepSeek-R1 style: a closed `<think>` block sketching a small JSON object, then the real one.

    The reasoning drafts a short object with braces before the longer JSON
    answer, which follows a stray `json` word (deepseek-ai/DeepSeek-R1#381:
    `<think>xxxxx</think>json{....}`): the case kb's decoder keeps the longest
    object for. Tool rounds carry the think block in content beside real
    `tool_calls` (waybarrios/vllm-mlx#161).

    Demo run: ends `answer` (the JSON after the think block), outcome ok.
    """

    name = "r1-json-sketch"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        if plan:
            return Said(f"<think>\n{turn.thinking(plan)}\n</think>", plan)
        sketch = '{"answer": "...", "sources": []}'
        think = (
            f"{turn.thinking(plan)} The caller parses my reply, so I should answer with one "
            f"JSON object, something like {sketch}, with the real values filled in."
        )
        answer = {
            "answer": turn.answer(),
            "sources": [
                {"tool": c.name, "arguments": dict(c.arguments), "result": c.result}
                for c in turn.calls
            ],
        }
        return Said(f"<think>\n{think}\n</think>\n\njson\n{json.dumps(answer)}")


_DOUBTS = (
    "Wait, let me re-read the question to make sure I have not missed a constraint.",
    'Hmm, could "{ask}" mean something else? The plain reading is probably right, '
    "but let me weigh the alternatives once more.",
    "Actually, I should double-check that each part of the question has a tool or a fact "
    "behind it before I commit to anything.",
    "Let me also think about what the user will do with the answer; a short, direct reply "
    "is probably best, but what belongs in it?",
    "No, wait. Let me go back over the plan step by step and verify each step.",
    "Is there an edge case I am missing? An unknown name, an empty result, a value in the "
    "wrong unit?",
    "I keep going back and forth. Let me settle it, but first one more check.",
)


class BudgetThink(Persona):
    """A model that deliberates for about 600 tokens first: a small budget ends inside `<think>`.

    Under that budget the reply is an opening tag and reasoning, finish_reason
    "length", no answer and no tool call (tenstorrent/tt-inference-server#3683;
    antirez/ds4#1087; vllm-project/vllm#39697). With room to finish it closes
    the block and acts like a tidy R1.

    Demo run: ends `length_in_reasoning` in the first round, outcome OutputLimitError.
    """

    name = "budget-think"
    owned_by = "vllm"
    think_words = 600

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        parts = [turn.thinking(plan)]
        words = count_words(parts[0])
        while words < self.think_words:
            doubt = _DOUBTS[(len(parts) - 1) % len(_DOUBTS)].format(ask=short(turn.prompt, 60))
            parts.append(doubt)
            words += count_words(doubt)
        think = "<think>\n" + " ".join(parts) + "\n</think>"
        return Said(think, plan) if plan else Said(f"{think}\n\n{turn.answer()}")


class ReasoningField(Persona):
    """vLLM with a reasoning parser: reasoning in `reasoning_content`, clean content.

    With `chat_template_kwargs: {"enable_thinking": false}` it sends what the
    Qwen3 parser sent then: content null and the whole answer in
    `reasoning_content` (QwenLM/Qwen3#1297, vllm-project/vllm#19839).

    Demo run: ends `answer`, outcome ok.
    """

    name = "reasoning-field"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        options = turn.request.get("chat_template_kwargs")
        if not plan and isinstance(options, dict) and options.get("enable_thinking") is False:
            return Said(None, reasoning_content=turn.answer())
        content = None if plan else turn.answer()
        return Said(content, plan, reasoning_content=turn.thinking(plan))


class OllamaReasoning(Persona):
    """Ollama's /v1: reasoning in a field named `reasoning`; after tool results, the answer too.

    Ollama names the field `reasoning` (vLLM renamed `reasoning_content` the
    same way, RFC #27755) and sometimes sends the whole answer inside it with
    empty content (ollama/ollama#17911). Here that happens on the reply after
    tool results, so a loop ends "ok" with an empty answer.

    Demo run: ends `reasoning_only` (the answer is in the field), outcome reasoning_only.
    """

    name = "ollama-reasoning"
    owned_by = "library"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        think = turn.thinking(plan)
        if plan:
            return Said("", plan, reasoning=think)
        if turn.calls:
            return Said("", reasoning=f"{think}\n\n{turn.answer()}")
        return Said(turn.answer(), reasoning=think)


class HermesTextTools(MarkupCalls):
    """Tool calls written as text (`<tool_call>{...}</tool_call>`) in content, no `tool_calls`.

    NousResearch/hermes-agent#741 (and PR#742), Hermes-4 on an
    OpenAI-compatible server without a tool parser: finish_reason "stop", so a
    loop takes the markup for the final answer; only the probe shows that the
    endpoint cannot call tools.

    Demo run: ends `text_tool_calls` in the first round, outcome text_tool_calls; with
    `recover_text_tool_calls=True` the calls run and it ends `answer`.
    """

    name = "hermes-text-tools"
    owned_by = "vllm"

    def calls(self, plan: list[tuple[str, dict[str, Any]]]) -> str:
        return "\n".join(
            f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in plan
        )


class ToolSpinner(Persona):
    """llama.cpp's server with a tiny model: a tool call every round, never an answer.

    As seen on this project's machine from `python -m llama_cpp.server
    --chat_format chatml-function-calling` with SmolLM2-135M: one call per
    reply, content null, ids `call__0_<name>_cmpl-<uuid>`, a legacy
    `function_call` whose name ends in a colon; tools without `tool_choice` get
    a text answer and `tool_choice: "required"` an HTTP 500. From the fourth
    round on its arguments are no longer JSON.

    Demo run: ends `tool_calls` at the iteration cap, outcome IterationLimitError.
    """

    name = "tool-spinner"
    owned_by = "me"
    sane_rounds = 3

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        if turn.tools and turn.tool_choice == "required":
            return Response({"error": {"message": "Internal Server Error"}}, status=500)
        return self.finish(turn, self.respond(turn))

    def respond(self, turn: Heard) -> Said:
        if not turn.may_call or turn.tool_choice is None:
            if turn.tools:
                return Said(f"To answer this I would call {turn.tools[0].name}.")
            return Said(turn.answer())
        forced = turn.forced_tool
        tools = [t for t in turn.tools if t.name == forced] if forced else turn.tools
        spec = tools[turn.rounds % len(tools)]
        args = turn.fill(spec, invent=True)[0]
        if turn.rounds < self.sane_rounds:
            return Said(None, [(spec.name, args)])
        return Said(None, [(spec.name, json.dumps(args)[:-1] + ",")])

    def call_id(self, turn: Heard, index: int, name: str) -> str:
        return f"call__{index}_{name}_cmpl-{uuid.UUID(turn.digest[:32])}"

    def finish(self, turn: Heard, said: Said) -> dict[str, Any]:
        body = super().finish(turn, said)
        message = body["choices"][0]["message"]
        if message.get("tool_calls"):
            fn = message["tool_calls"][0]["function"]
            message["function_call"] = {"name": fn["name"] + ":", "arguments": fn["arguments"]}
        return body


class HtmlInjector(Persona):
    """Live HTML (`<script>`, `<img onerror>`) in content, reasoning and tool arguments.

    A reply is endpoint-controlled text: a hostile proxy, or a model quoting a
    web page, can put markup anywhere in it. Every renderer must show it as
    text; the payload sets `window.__rig_xss`, which the browser tests assert
    stays undefined.

    Demo run: ends `answer` (markup in it), outcome ok.
    """

    name = "html-injector"

    def respond(self, turn: Heard) -> Said:
        plan = [
            (n, {k: f"{v}{XSS_IMG}" if isinstance(v, str) else v for k, v in a.items()})
            for n, a in turn.plan()
        ]
        reasoning = f"{turn.thinking(plan)} {XSS_SCRIPT}"
        if plan:
            return Said(f"<think>{XSS_IMG}</think>", plan, reasoning_content=reasoning)
        content = f"<think>{XSS_SCRIPT}</think>\n{turn.answer()} {XSS_IMG} {XSS_SCRIPT}"
        return Said(content, reasoning_content=reasoning)


def default_personas() -> list[Persona]:
    """The demo endpoint's models, in the order the demo shows them."""
    return [
        WellBehaved(),
        Qwen3NoParser(),
        R1JsonSketch(),
        BudgetThink(),
        ReasoningField(),
        OllamaReasoning(),
        HermesTextTools(),
        ToolSpinner(),
        HtmlInjector(),
        *dialect_personas(),
        *family_personas(),
        *reasoning_personas(),
        *evaluation_personas(),
        *context_personas(),
        *load_personas(),
        *schema_personas(),
        *client_personas(),
        *param_personas(),
    ]
