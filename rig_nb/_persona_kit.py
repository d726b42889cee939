"""What the demo personas share: reading a chat request, planning tool calls, wording replies.

A persona reads a request as a `Turn` (the last user message and the tool calls
and results since), decides what to say (`Said`), and `Persona.finish` turns
that into a chat.completion body. Everything is a function of the request, so
the same request always gets the same reply. Token counts are approximate: one
whitespace-separated word is one token, on both sides.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .testing import Reply, chat_reply

__all__ = ["PastCall", "Persona", "Said", "ToolSpec", "Turn", "count_words", "truncate_words"]

_WORD = re.compile(r"\S+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# A run of capitalised words ("Lisbon", "New York") and the character before it, which
# tells a sentence-initial word (skipped) from a name; one linear scan.
_NAME = re.compile(r"(\S?)\s*([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)")
_NOT_NAMES = {"Celsius", "Fahrenheit", "Then", "Also", "Please", "Thanks"}


def count_words(text: str | None) -> int:
    return len(_WORD.findall(text or ""))


def truncate_words(text: str, n: int) -> str:
    """The first `n` words of `text`, with the spacing between them kept."""
    if n <= 0:
        return ""
    for i, m in enumerate(_WORD.finditer(text)):
        if i == n - 1:
            return text[: m.end()]
    return text


def short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


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
class ToolSpec:
    """A function tool offered in the request."""

    name: str
    parameters: Mapping[str, Any]


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
class Turn:
    """What a persona reads from a request."""

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
    def parse(cls, request: Mapping[str, Any]) -> Turn:
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
        if request.get("stream"):
            raise ValueError("streaming is not supported by the demo endpoint")
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
        digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
        system = "\n".join(_text_of(m.get("content")) for m in messages if m["role"] == "system")
        return cls(
            model, system, prompt, tools, choice, budget, calls, rounds, words, digest, request
        )

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
            return _answer_without_tools(self.prompt, self.system)
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
        ask = short(self.prompt, 100)
        if plan:
            wants = ", ".join(f"{n}({_kwargs(a)})" for n, a in plan)
            if not self.calls:
                tools = ", ".join(t.name for t in self.tools)
                return (
                    f'Okay, the user asks "{ask}" and I have these tools: {tools}. '
                    f"I should not guess live values, so first I need {wants}. "
                    "Let me call the tool."
                )
            got = "; ".join(short(c.result, 40) for c in self.calls)
            return f"Okay, so far I have: {got}. Next I need {wants} before I can answer."
        if self.calls:
            got = "; ".join(short(c.result, 40) for c in self.calls)
            return (
                f"Okay, I have the results I need: {got}. Nothing else to look up, "
                "so I will summarise them for the user in a few sentences."
            )
        return (
            f'Okay, the user asks "{ask}" and I do not need a tool for this, '
            "so I will answer directly and keep it short."
        )


def _kwargs(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in args.items())


def _default_string(param: str) -> str:
    return "Lisbon" if any(k in param.lower() for k in ("city", "location", "place")) else "hello"


_ARITHMETIC = re.compile(r"(-?\d+)\s*([-+*x])\s*(-?\d+)")
_FACTS = {"country": "France", "capital": "Paris"}


def _answer_without_tools(prompt: str, system: str) -> str:
    low = prompt.lower()
    if "capital of france" in low:
        text = "The capital of France is Paris."
    elif m := _ARITHMETIC.search(prompt):
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        value = a + b if op == "+" else a - b if op == "-" else a * b
        text = f"{a} {op} {b} = {value}."
    elif re.search(r"\b(hello|hi|hey)\b", low):
        text = "Hello! How can I help you today?"
    elif "weather" in low:
        text = (
            "I cannot check live weather without a tool, so I would only be guessing. "
            "Offer me a weather tool and I will look it up."
        )
    else:
        text = (
            f'About "{short(prompt, 80)}": I have no tools in this conversation, so this is '
            "from memory and may be out of date. Give me a tool and I can check."
        )
    if "json" not in (prompt + system).lower():
        return text
    # Asked for JSON: fill the keys the prompt sketches, where a fact is known.
    keys = re.findall(r'"(\w+)"\s*:', prompt)
    if keys and all(k in _FACTS for k in keys):
        return json.dumps({k: _FACTS[k] for k in keys})
    return json.dumps({"answer": text})


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
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError("each tool must be {'type': 'function', 'function': {'name': ...}}")
        params = fn.get("parameters")
        specs.append(ToolSpec(fn["name"], params if isinstance(params, dict) else {}))
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


class Persona:
    """A model name on the demo endpoint and the way it answers.

    Subclasses implement `respond(turn) -> Said`; `reply` applies the request's
    token budget (over it: the reply is cut there, calls dropped, finish_reason
    "length") and builds the body. A persona that needs the raw request, such
    as a replay of a recorded session, overrides `reply` itself and returns a
    chat.completion body or a `rig_nb.testing.Reply`.
    """

    name: str = ""

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Reply:
        turn = Turn.parse(request)
        return self.finish(turn, self.respond(turn))

    def respond(self, turn: Turn) -> Said:
        raise NotImplementedError

    def call_id(self, turn: Turn, index: int, name: str) -> str:
        return f"call_{turn.digest[:12]}_{index}"

    def finish(self, turn: Turn, said: Said) -> dict[str, Any]:
        calls = [(n, a if isinstance(a, str) else json.dumps(a)) for n, a in said.tool_calls]
        used = sum(count_words(s) for s in (said.reasoning_content, said.reasoning, said.content))
        used += sum(count_words(a) for _, a in calls)
        finish = "tool_calls" if calls else "stop"
        budget = turn.max_tokens
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
