"""What the demo personas share: reading a chat request, planning tool calls, building replies.

A persona reads a request as a `Heard` (the last user message and the tool calls
and results since), decides what to say (`Said`), and `Persona.finish` turns
that into a chat.completion body. Everything is a function of the request, so
the same request always gets the same reply, streamed or not: the demo server
streams a reply built from the same body when the request asks for `stream`.
Token counts are approximate: one whitespace-separated word is one token, on
both sides (`rig_nb.demo.wording`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..testing import Response, chat_reply
from ..wire import REASONING_FIELDS, ToolSpec
from .wording import answer_without_tools, count_words, deliberation, short, truncate_words

__all__ = [
    "MarkupCalls",
    "PastCall",
    "Persona",
    "Said",
    "Stream",
    "Heard",
    "count_words",
    "short",
    "truncate_words",
]

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# A run of capitalised words ("Lisbon", "New York") and the character before it, which
# tells a sentence-initial word (skipped) from a name; one linear scan.
_NAME = re.compile(r"(\S?)\s*([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)")
_NOT_NAMES = {"Celsius", "Fahrenheit", "Then", "Also", "Please", "Thanks"}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() else value


@dataclass(frozen=True)
class PastCall:
    """A tool call made since the last user message, with the result sent back for it."""

    name: str
    arguments: Mapping[str, Any]
    result: str

    @property
    def failed(self) -> bool:
        return self.result.lstrip().lower().startswith("error")


@dataclass
class Heard:
    """What a persona heard: a request as it reads it (the last user message, the tool calls
    made since, the tools offered)."""

    model: str
    system: str
    prompt: str
    tools: list[ToolSpec]
    tool_choice: Any
    max_tokens: int | None
    calls: list[PastCall]
    rounds: int
    prompt_tokens: int
    digest: str
    request: Mapping[str, Any] = field(repr=False)

    @classmethod
    def parse(cls, request: Mapping[str, Any]) -> Heard:
        """Read a chat completions request; `ValueError` says what is wrong with a bad one."""
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise ValueError("'model' must be a non-empty string")
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list")
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise ValueError("each message must be an object with a 'role'")
        if request.get("stream") is not None and not isinstance(request["stream"], bool):
            raise ValueError("'stream' must be a boolean")
        options = request.get("stream_options")
        if options is not None and not isinstance(options, dict):
            raise ValueError("'stream_options' must be an object")
        tools = _parse_tools(request.get("tools"))
        choice = request.get("tool_choice")
        forced = _forced_name(choice)
        if forced is not None and forced not in {t.name for t in tools}:
            raise ValueError(f"tool_choice names {forced!r}, which is not in 'tools'")
        budget = request.get("max_completion_tokens", request.get("max_tokens"))
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0
        ):
            raise ValueError("'max_tokens' must be a positive integer")

        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if not users:
            raise ValueError("'messages' must include a user message")
        last_user = users[-1]
        prompt = _text_of(messages[last_user].get("content"))
        sent: dict[str, tuple[str, Mapping[str, Any]]] = {}
        order: list[str] = []
        results: dict[str, str] = {}
        rounds = 0
        for m in messages[last_user + 1 :]:
            if m["role"] == "assistant" and m.get("tool_calls"):
                rounds += 1
                for c in m["tool_calls"]:
                    fn = c.get("function") or {}
                    sent[str(c.get("id"))] = (str(fn.get("name", "")), _args(fn.get("arguments")))
                    order.append(str(c.get("id")))
            elif m["role"] == "tool":
                results[str(m.get("tool_call_id"))] = _text_of(m.get("content"))
        calls = [PastCall(*sent[i], results.get(i, "")) for i in order]
        words = sum(count_words(_text_of(m.get("content"))) for m in messages)
        words += count_words(json.dumps(request.get("tools") or []))
        # Streamed or not, a request gets the same reply (ids included): the digest leaves
        # out how the reply is delivered.
        asked = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
        # Nor which field reasoning came back in (over /responses it is a reasoning item).
        asked["messages"] = [
            {("reasoning" if k in REASONING_FIELDS else k): v for k, v in m.items()}
            for m in messages
        ]
        digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()
        system = "\n".join(_text_of(m.get("content")) for m in messages if m["role"] == "system")
        return cls(
            model, system, prompt, tools, choice, budget, calls, rounds, words, digest, request
        )

    @property
    def streaming(self) -> bool:
        """The request asks for the reply as server-sent events."""
        return self.request.get("stream") is True

    @property
    def include_usage(self) -> bool:
        """A streamed request asks for the usage chunk (`stream_options.include_usage`)."""
        options = self.request.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True

    @property
    def forced_tool(self) -> str | None:
        return _forced_name(self.tool_choice)

    @property
    def may_call(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"

    @property
    def names(self) -> list[str]:
        """Names in the prompt ("Lisbon", "New York"), in order, without repeats."""
        found: list[str] = []
        for before, name in _NAME.findall(self.prompt):
            if before in ("", ".", "?", "!", ":", ";", '"', "'", "(") or name in _NOT_NAMES:
                continue
            if name not in found:
                found.append(name)
        return found

    def numbers(self) -> list[int | float]:
        """Numbers from this turn's successful tool results, then from the prompt."""
        texts = [c.result for c in self.calls if not c.failed] + [self.prompt]
        return [_number(n) for t in texts for n in _NUMBER.findall(t)]

    def plan(self) -> list[tuple[str, dict[str, Any]]]:
        """The calls a diligent model makes next: each offered tool once, in the order offered.

        One tool per round (every name in the prompt gets its own call of a
        one-string-argument tool); an empty plan means it is time to answer.
        `tool_choice` "none" never calls; "required" or a named tool always does.
        """
        if not self.may_call:
            return []
        forced = self.forced_tool
        candidates = [t for t in self.tools if forced is None or t.name == forced]
        done = {c.name for c in self.calls}
        for t in candidates:
            calls = [] if t.name in done else self.fill(t)
            if calls:
                return [(t.name, args) for args in calls]
        if forced is not None or self.tool_choice == "required":
            return [(candidates[0].name, self.fill(candidates[0], invent=True)[0])]
        return []

    def fill(self, spec: ToolSpec, *, invent: bool = False) -> list[dict[str, Any]]:
        """Arguments for `spec` from the prompt and results: one dict per call to make.

        No call (`[]`) when the numbers it needs are nowhere to be found, unless
        `invent`, as a model made to call something does.
        """
        props = spec.parameters.get("properties")
        props = props if isinstance(props, dict) else {}
        required = spec.parameters.get("required")
        wanted = [str(n) for n in (required if isinstance(required, list) else list(props))]
        known = self.numbers()
        numbers = iter([*known, 1, 2, 3, 4] if invent else known)
        base: dict[str, Any] = {}
        strings: list[str] = []
        for name in wanted:
            given = props.get(name)
            schema: Mapping[str, Any] = given if isinstance(given, dict) else {}
            kind = schema.get("type")
            if isinstance(schema.get("enum"), list) and schema["enum"]:
                base[name] = schema["enum"][0]
            elif kind in ("number", "integer"):
                value = next(numbers, None)
                if value is None:
                    return []
                base[name] = int(value) if kind == "integer" else value
            elif kind == "boolean":
                base[name] = True
            elif kind == "array":
                base[name] = []
            elif kind == "object":
                base[name] = {}
            else:
                strings.append(name)
        names = self.names
        if len(strings) == 1:
            return [{**base, strings[0]: n} for n in names or [_default_string(strings[0])]]
        for i, s in enumerate(strings):
            base[s] = names[i] if i < len(names) else _default_string(s)
        return [base]

    def answer(self) -> str:
        """A short, plain answer built from the tool results of this turn (or the prompt)."""
        if not self.calls:
            return answer_without_tools(self.prompt, self.system)
        parts = []
        for c in self.calls:
            result = short(c.result, 160)
            if c.failed:
                parts.append(f"{c.name} failed ({result.partition(':')[2].strip() or result}).")
            elif _NUMBER.fullmatch(result):
                args = ", ".join(str(v) for v in c.arguments.values())
                parts.append(f"{c.name}({args}) gives {result}.")
            else:
                parts.append(result if result.endswith(".") else result + ".")
        return "Here is what I found. " + " ".join(parts)

    def thinking(self, plan: list[tuple[str, dict[str, Any]]]) -> str:
        """The first-person deliberation a reasoning model writes before acting."""
        tools = [t.name for t in self.tools]
        return deliberation(self.prompt, tools, [c.result for c in self.calls], plan)


def _stops(raw: Any) -> list[str]:
    """A chat request's `stop`: one string or a list of them."""
    if isinstance(raw, str):
        return [raw] if raw else []
    return [s for s in raw if isinstance(s, str) and s] if isinstance(raw, list) else []


def _cut_at(text: str, stops: list[str]) -> str:
    """`text` up to the first of `stops` in it (the stop string left out, as servers do)."""
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    return text[: min(found)] if found else text


def _default_string(param: str) -> str:
    return "Lisbon" if any(k in param.lower() for k in ("city", "location", "place")) else "hello"


def _args(raw: Any) -> Mapping[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _forced_name(choice: Any) -> str | None:
    if isinstance(choice, dict):
        fn = choice.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            return str(fn["name"])
    return None


def _parse_tools(raw: Any) -> list[ToolSpec]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError("'tools' must be a list")
    specs = []
    for t in raw:
        kind = t.get("type") if isinstance(t, dict) else None
        if isinstance(kind, str) and kind != "function":
            # A tool of another type (Codex's `custom` apply_patch) is skipped, as
            # llama-server skips it since ggml-org/llama.cpp#23041.
            continue
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError("each tool must be {'type': 'function', 'function': {'name': ...}}")
        params = fn.get("parameters")
        description = fn.get("description")
        specs.append(
            ToolSpec(
                fn["name"],
                description if isinstance(description, str) else "",
                params if isinstance(params, dict) else {},
            )
        )
    return specs


@dataclass
class Said:
    """What a persona puts in its reply, before the token budget is applied.

    A tool call's arguments are a dict (sent as JSON) or a string sent as is
    (how a persona sends malformed arguments).
    """

    content: str | None = None
    tool_calls: Sequence[tuple[str, Mapping[str, Any] | str]] = ()
    reasoning_content: str | None = None
    reasoning: str | None = None


@dataclass(frozen=True)
class Stream:
    """A reply already in stream form: the `data:` payloads of a recorded event stream.

    A mapping is sent as JSON, a string as is (`[DONE]` is one when the recorded
    stream had it). The demo server paces them like any streamed reply.
    """

    events: Sequence[Mapping[str, Any] | str]


class Persona:
    """A model name on the demo endpoint and the way it answers.

    Subclasses implement `respond(turn) -> Said`; `reply` applies the request's
    token budget (over it: the reply is cut there, calls dropped, finish_reason
    "length") and builds the body. A persona that needs the raw request, such
    as a replay of a recorded session, overrides `reply` itself and returns a
    chat.completion body, a `rig_nb.testing.Response`, or a `Stream`. A persona
    never streams by itself: the demo server sends a chat.completion body (with
    status 200) as server-sent events when the request asks for `stream`.

    `owned_by` is what the model list says owns the model: the server the
    persona plays, as that server names itself there (`vllm`, `llamacpp`,
    `library` for Ollama, ...), so the endpoint doctor can tell which server
    flag to name.
    """

    name: str = ""
    owned_by: str = "rig-nb-demo"
    # Request parameters this persona's server accepts and does not apply (`stop`,
    # `parallel_tool_calls`, `max_tokens`); every other persona applies them as sent.
    ignores: frozenset[str] = frozenset()

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        return self.finish(turn, self.respond(turn))

    def respond(self, turn: Heard) -> Said:
        raise NotImplementedError

    def call_id(self, turn: Heard, index: int, name: str) -> str:
        return f"call_{turn.digest[:12]}_{index}"

    def finish(self, turn: Heard, said: Said) -> dict[str, Any]:
        calls = [(n, a if isinstance(a, str) else json.dumps(a)) for n, a in said.tool_calls]
        if turn.request.get("parallel_tool_calls") is False and (
            "parallel_tool_calls" not in self.ignores
        ):
            calls = calls[:1]
        stops = _stops(turn.request.get("stop"))
        if stops and said.content and "stop" not in self.ignores:
            said = replace(said, content=_cut_at(said.content, stops))
        used = sum(count_words(s) for s in (said.reasoning_content, said.reasoning, said.content))
        used += sum(count_words(a) for _, a in calls)
        finish = "tool_calls" if calls else "stop"
        budget = None if "max_tokens" in self.ignores else turn.max_tokens
        if budget is not None and used > budget:
            # Cut where the budget ran out: fields first, as a model emits them.
            left = budget
            cut: list[str | None] = []
            for text in (said.reasoning_content, said.reasoning, said.content):
                kept = None if text is None else truncate_words(text, left)
                left -= count_words(kept)
                cut.append(kept)
            said = Said(cut[2], [], cut[0], cut[1])
            calls, used, finish = [], budget, "length"
        body = chat_reply(
            said.content,
            tool_calls=[
                {
                    "id": self.call_id(turn, i, n),
                    "type": "function",
                    "function": {"name": n, "arguments": a},
                }
                for i, (n, a) in enumerate(calls)
            ],
            finish_reason=finish,
            reasoning_content=said.reasoning_content,
            reasoning=said.reasoning,
            usage={
                "prompt_tokens": turn.prompt_tokens,
                "completion_tokens": used,
                "total_tokens": turn.prompt_tokens + used,
            },
            model=turn.model,
        )
        body["id"] = f"chatcmpl-{turn.digest[:24]}"
        return body


class MarkupCalls(Persona):
    """A model whose server has no parser for its family: its reasoning, then its tool
    calls written in the family's markup, all in content (finish_reason "stop").

    Subclasses give `calls(plan)`, the markup of the planned calls, and may change
    `reasoning(turn, plan)` (a `<think>` block by default).
    """

    def reasoning(self, turn: Heard, plan: list[tuple[str, dict[str, Any]]]) -> str:
        return f"<think>\n{turn.thinking(plan)}\n</think>\n\n"

    def calls(self, plan: list[tuple[str, dict[str, Any]]]) -> str:
        raise NotImplementedError

    def respond(self, turn: Heard) -> Said:
        plan = turn.plan()
        head = self.reasoning(turn, plan)
        return Said(head + (self.calls(plan) if plan else turn.answer()))
