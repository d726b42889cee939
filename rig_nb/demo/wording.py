"""How the demo personas word things: token counts, truncation, and answers without tools.

Token counts are approximate: one whitespace-separated word is one token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["answer_without_tools", "count_words", "deliberation", "short", "truncate_words"]

_WORD = re.compile(r"\S+")
_ARITHMETIC = re.compile(r"(-?\d+)\s*([-+*x])\s*(-?\d+)")
_FACTS = {"country": "France", "capital": "Paris"}


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


def answer_without_tools(prompt: str, system: str) -> str:
    """A plain answer from what a small model knows, or JSON when the prompt asks for it."""
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


def _kwargs(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in args.items())


def deliberation(
    prompt: str,
    tools: Sequence[str],
    results: Sequence[str],
    plan: Sequence[tuple[str, Mapping[str, Any]]],
) -> str:
    """The first-person reasoning a model writes before acting: what it has, what it needs."""
    ask = short(prompt, 100)
    if plan:
        wants = ", ".join(f"{n}({_kwargs(a)})" for n, a in plan)
        if not results:
            return (
                f'Okay, the user asks "{ask}" and I have these tools: {", ".join(tools)}. '
                f"I should not guess live values, so first I need {wants}. "
                "Let me call the tool."
            )
        got = "; ".join(short(r, 40) for r in results)
        return f"Okay, so far I have: {got}. Next I need {wants} before I can answer."
    if results:
        got = "; ".join(short(r, 40) for r in results)
        return (
            f"Okay, I have the results I need: {got}. Nothing else to look up, "
            "so I will summarise them for the user in a few sentences."
        )
    return (
        f'Okay, the user asks "{ask}" and I do not need a tool for this, '
        "so I will answer directly and keep it short."
    )
