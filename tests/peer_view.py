"""What rig_nb makes of a peer parser test's model output (shared/peer-cases/cases.json).

The corpus holds whole outputs from the parser tests of vLLM, llama.cpp and
SGLang, with what each peer parsed out of them. rig_nb's view of an output is
what the loop would act on: `split_reasoning` for the reasoning, the calls
`find_text_tool_calls` reads in `text_for_calls` (declared names only, calls
with unreadable arguments fed back as errors, so not among the calls run), and
the content beside them (`text_before_calls`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rig_nb import find_text_tool_calls, leak_dialects, split_reasoning
from rig_nb.content import text_for_calls
from rig_nb.dialects import has_text_tool_calls, text_before_calls

PEER_CASES = Path(__file__).resolve().parents[2] / "shared" / "peer-cases"

# Formats whose calls rig_nb reads (DESIGN "Loop" and "Dialects of every family"); the
# other families' markup is named by leak_dialects and detected as calls, not read.
READ = frozenset(
    (
        "hermes",
        "qwen3coder",
        "glm",
        "mistral",
        "kimi",
        "harmony",
        "gemma4",
        "deepseek",
        "dsml",
        "seed-oss",
        "other:MiniMax-M2",
        "other:MiniMax-M3",
    )
)
# Reasoning markup that split_reasoning reads (the seed's <think> rules); the other
# families' reasoning markup is leak_dialects' to name.
THINK = frozenset(("think", "none", "implicit"))
# Special tokens as families write them: any of these in an output must be named.
SPECIAL = re.compile(
    r"<\|[^<>\s]{1,40}\|>|<\|[a-z_]{2,30}>|<[a-z_]{2,30}\|>|</?\uff5c[^<>]{1,40}>"
    r"|</?[A-Z_]{4,}>|\[[A-Z_ ]{4,}\]|</?[a-z]+:[a-z_]+>|\u25c1/?think\u25b7|\]<\]"
    r"|</?tool_calls?>|<arg_key>|<function[= ]"
)
# The schemas the peers declared where a call's typing depends on them (the corpus
# keeps tool names only).
SCHEMAS = {
    "magic": {"properties": {"name": {"type": "string"}, "ref": {"type": "string"}}},
}


def load_cases() -> list[dict[str, Any]]:
    return json.loads((PEER_CASES / "cases.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def tools_of(case: dict[str, Any]) -> list[dict[str, Any]]:
    names = case["settings"].get("declared_tools") or []
    return [{"name": n, "parameters": SCHEMAS.get(n, {})} for n in names]


def rig_view(case: dict[str, Any]) -> dict[str, Any]:
    """reasoning, content and tool_calls as rig_nb's loop would take them."""
    text = case["input"]
    reasoning, answer = split_reasoning(text)
    tools = tools_of(case)
    declared = {t["name"] for t in tools}
    found = find_text_tool_calls(text_for_calls(text), tools or None)
    calls = [
        {"name": c.name, "arguments": json.loads(c.arguments)}
        for c in found
        if not c.error and (not declared or c.name in declared)
    ]
    content = text_before_calls(answer) if found else answer
    return {"reasoning": reasoning, "content": content, "tool_calls": calls}


def _same_calls(case: dict[str, Any], got: list[dict[str, Any]]) -> bool:
    want = case["expected_tool_calls"] or []
    mode = case.get("match", {}).get("tool_calls")
    if mode in ("names", "named"):
        return [c["name"] for c in got] == [c["name"] for c in want]
    return got == [{"name": c["name"], "arguments": c["arguments"]} for c in want]


def checked(case: dict[str, Any]) -> list[str]:
    """The fields of a case in rig_nb's scope: those asserted that rig_nb reads."""
    fields = []
    for field in case["asserts"]:
        if field == "tool_calls" and case["format"] in READ:
            fields.append(field)
        elif field in ("reasoning", "content") and case["reasoning_markup"] in THINK:
            if case["format"] in READ | {"think"} or not SPECIAL.search(case["input"]):
                fields.append(field)  # other families' markup is named, not parsed
    return fields


def agrees(case: dict[str, Any], field: str, view: dict[str, Any]) -> bool:
    got = view[field]
    if field == "tool_calls":
        return _same_calls(case, got)
    want = case[f"expected_{field}"] or ""
    if case.get("match", {}).get(field) == "contains":
        return want.strip() in got
    return bool(got.strip() == want.strip())


def unnamed(case: dict[str, Any]) -> list[str]:
    """Special tokens in the output when leak_dialects names nothing (a <think> tag aside)."""
    text = case["input"]
    tokens = [m for m in SPECIAL.findall(text) if m not in ("<think>", "</think>")]
    return tokens if tokens and not leak_dialects(text) else []


def undetected(case: dict[str, Any]) -> bool:
    """A peer found calls in an output where rig_nb sees no tool-call dialect at all."""
    return bool(case["expected_tool_calls"]) and not has_text_tool_calls(
        text_for_calls(case["input"])
    )
