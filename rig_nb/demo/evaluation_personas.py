"""Demo personas for evaluations: where a structured-output answer lands, and agent-shaped requests.

Each reproduces a reply shape reported from a real server and names its public
source. Each docstring also says how the demo run ends on it: the
`Iteration.ending` of the last round of `RunRequest(model, 512,
system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools())`, and the run's
outcome. The structured-output shapes show when a request carries
`response_format` (the doctor's `structured_output` check, the compare
scenario "structured output"); the agent shape when a request looks like an
agent client's (`Scenario.agentic()`: a long system prompt, a dozen tools).
`FlakyAnswers` is not served by default (`DemoServer(extra_personas=[FlakyAnswers()])`):
its replies depend on how often a request was seen.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..agentic import AGENTIC_STEPS
from ..testing import Response
from .kit import Heard, Persona, Said, Stream

__all__ = [
    "AgentShapeTextCalls",
    "FlakyAnswers",
    "JsonInReasoningContent",
    "JsonInReasoningField",
    "JsonThinkingOff",
    "SchemaIgnored",
    "agent_step",
    "evaluation_personas",
]

# Agent clients send long system prompts and many tools; one-tool probes send neither.
_AGENT_TOOLS = 8
_AGENT_SYSTEM_CHARS = 2000
_STRINGS = {"country": "France", "capital": "Paris", "city": "Paris", "name": "Paris"}


# What each step's argument looks like where the model reads it: the task, then each result.
_STEP_ARGUMENTS = (r"[\w.+-]+@[\w-]+\.[\w.]+", r"CUS-\d+", r"ORD-\d+")
_SHIPMENT = re.compile(r"carrier: (?P<carrier>[^;]+); tracking: (?P<tracking>[^;]+)")


def agent_step(turn: Heard) -> Said | None:
    """The next move of a model that walks the agentic task's chain (`rig_nb.agentic`):
    each step's argument read from the result before it, then the answer; None when the
    request is not that task."""
    offered = {t.name for t in turn.tools}
    if not turn.may_call or not {name for name, _, _ in AGENTIC_STEPS} <= offered:
        return None
    results = {c.name: c.result for c in turn.calls if not c.failed}
    source = turn.prompt
    for (name, arg, _), pattern in zip(AGENTIC_STEPS, _STEP_ARGUMENTS, strict=True):
        if name not in results:
            found = re.search(pattern, source)
            return Said(None, [(name, {arg: found.group() if found else ""})])
        source = results[name]
    shipment = _SHIPMENT.search(source)
    if shipment is None:
        return Said("I could not find the shipment.")
    return Said(
        f"The order ships with {shipment['carrier']}, tracking number {shipment['tracking']}."
    )


def _schema_format(turn: Heard) -> Mapping[str, Any] | None:
    """The request's response_format when it asks for json_schema or json_object."""
    fmt = turn.request.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return fmt
    return None


def _object_for(turn: Heard, fmt: Mapping[str, Any]) -> str:
    """The JSON object a model writes for the request's schema (compact, deterministic)."""
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    props = schema.get("properties") if isinstance(schema, dict) else None
    numbers = [int(n) for n in re.findall(r"\d+", turn.prompt)]
    product = numbers[0] * numbers[1] if len(numbers) >= 2 else (numbers[0] if numbers else 0)
    if not isinstance(props, dict) or not props:
        return json.dumps({"answer": product or "Paris"})
    value: dict[str, Any] = {}
    for name, sub in props.items():
        kind = sub.get("type") if isinstance(sub, dict) else None
        if kind in ("integer", "number"):
            value[name] = product
        elif kind == "boolean":
            value[name] = True
        else:
            value[name] = _STRINGS.get(str(name), "Paris")
    return json.dumps(value)


def _thinking(turn: Heard) -> str:
    return (
        f'Okay, the user asks: "{turn.prompt[:80]}". I will write the object the schema asks for.'
    )


class JsonInReasoningField(Persona):
    """vLLM with a reasoning parser: a response_format answer lands in `reasoning`, content null.

    With `include_reasoning` off or a model that skips its think block, the
    grammar makes the model write the JSON object at once, and the reasoning
    parser, finding no end tag, classifies the whole output as reasoning:
    `content: null`, the object in the `reasoning` field (vllm-project/vllm#48863).
    Without response_format it behaves: reasoning in `reasoning`, real tool calls.

    Demo run: ends `answer` after two tool rounds, outcome ok. With
    response_format: ending `json_in_reasoning`; the doctor says `reasoning`.
    """

    name = "vllm-json-in-reasoning"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        fmt = _schema_format(turn)
        if fmt is not None:
            return Said(None, reasoning=_object_for(turn, fmt))
        step = agent_step(turn)
        if step is not None:
            return step
        plan = turn.plan()
        return Said(None if plan else turn.answer(), plan, reasoning=turn.thinking(plan))


class JsonInReasoningContent(Persona):
    """LM Studio with a Qwen3.5 reasoning model: the schema constrains the thinking, content empty.

    `response_format: {"type": "json_schema"}` is matched against the reasoning
    stream: the model writes the object inside `reasoning_content`, generation
    stops, and `content` is empty; `json_object` is answered 400 ("'response_format.type'
    must be 'json_schema' or 'text'") (lmstudio-ai/lmstudio-bug-tracker#1773).
    Without response_format, reasoning in `reasoning_content` and real tool calls.

    Demo run: ends `answer` after two tool rounds, outcome ok. With
    response_format json_schema: ending `json_in_reasoning`; the doctor says `reasoning`.
    """

    name = "lmstudio-json-in-reasoning"
    owned_by = "organization_owner"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        fmt = request.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_object":
            message = "'response_format.type' must be 'json_schema' or 'text'"
            return Response({"error": message}, status=400)
        return super().reply(request)

    def respond(self, turn: Heard) -> Said:
        fmt = _schema_format(turn)
        if fmt is not None:
            return Said("", reasoning_content=f"{_thinking(turn)}\n{_object_for(turn, fmt)}")
        step = agent_step(turn)
        if step is not None:
            return step
        plan = turn.plan()
        content = None if plan else turn.answer()
        return Said(content, plan, reasoning_content=turn.thinking(plan))


class JsonThinkingOff(Persona):
    """vLLM serving Qwen3.6 without a reasoning parser: JSON output switches thinking off.

    Asked for `response_format` json_schema with thinking on, the model answers
    the bare object in `content` and no reasoning at all: structured output
    silently disables thinking (vllm-project/vllm#47027). Without
    response_format the template's thinking shows: a closed think block in
    content before each reply.

    Demo run: ends `answer` after two tool rounds, outcome ok. With
    response_format: the object in content; the doctor says `content`.
    """

    name = "vllm-json-thinking-off"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        fmt = _schema_format(turn)
        if fmt is not None:
            return Said(_object_for(turn, fmt))
        step = agent_step(turn)
        if step is not None:
            return step
        plan = turn.plan()
        think = f"<think>\n{turn.thinking(plan)}\n</think>\n\n"
        return Said(think + ("" if plan else turn.answer()), plan)


class SchemaIgnored(Persona):
    """LM Studio's /v1/responses with a json_schema format: markdown back, not the JSON object.

    The schema is not applied: the answer is a fenced markdown block,
    "```json {...}```", where a client expects the bare object
    (lmstudio-ai/lmstudio-bug-tracker#2403). Tool calls work.

    Demo run: ends `answer` after two tool rounds, outcome ok. With
    response_format: a fenced block in content; the doctor says `ignored`.
    """

    name = "schema-ignored"
    owned_by = "organization_owner"

    def respond(self, turn: Heard) -> Said:
        fmt = _schema_format(turn)
        if fmt is not None:
            return Said(f"Here is the JSON:\n\n```json\n{_object_for(turn, fmt)}\n```")
        step = agent_step(turn)
        if step is not None:
            return step
        plan = turn.plan()
        return Said(None, plan) if plan else Said(turn.answer())


class AgentShapeTextCalls(Persona):
    """A parser that passes the one-tool probe and fails under an agent's request shape.

    Under an agent client's request (a system prompt of kilobytes, a dozen
    tools, dependent steps) the call comes back as stringified JSON in
    `content`, `{"name": ..., "arguments": {...}}`, with no `tool_calls`, while
    a one-tool probe gets a native call (NVIDIA/NemoClaw#7967; the same shape
    with Ollama in NVIDIA/NemoClaw#2733).

    Demo run: ends `answer` after two tool rounds, outcome ok. The agentic
    scenario: no tool runs, outcome NoToolCallingError.
    """

    name = "agent-shape-text-calls"
    owned_by = "ollama"

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        agent_shaped = len(turn.tools) >= _AGENT_TOOLS or len(turn.system) >= _AGENT_SYSTEM_CHARS
        if agent_shaped and turn.may_call and not turn.calls:
            first = next((t for t in turn.tools if t.name.startswith("find")), turn.tools[0])
            email = re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", turn.prompt)
            args = {"email": email.group()} if email else turn.fill(first, invent=True)[0]
            return Said(json.dumps({"name": first.name, "arguments": args}))
        return Said(None, plan) if plan else Said(turn.answer())


class FlakyAnswers(Persona):
    """A model that answers the same request well twice, then with an empty reply.

    What a repeat count is for: a sampling server at temperature > 0, or a
    backend under load, fails some repeats of a request that others pass; eval
    tools mark such cells with pass^k (microsoft/waza#84). Here the third of
    every three identical requests gets an empty reply, so `repeats=3` gives
    "2/3 ok, flaky". Not served by default.

    Demo run: ends `answer` after two tool rounds, outcome ok.
    """

    name = "flaky-answers"
    owned_by = "vllm"

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def respond(self, turn: Heard) -> Said:
        with self._lock:
            self._seen[turn.digest] += 1
            count = self._seen[turn.digest]
        if count % 3 == 0:
            return Said("")
        plan = turn.plan()
        return Said(None, plan) if plan else Said(turn.answer())


def evaluation_personas() -> list[Persona]:
    """The evaluation personas the demo serves by default, in the order it shows them."""
    return [
        JsonInReasoningField(),
        JsonInReasoningContent(),
        JsonThinkingOff(),
        SchemaIgnored(),
        AgentShapeTextCalls(),
    ]
