"""rig_nb.dialects on hostile text: budgets, one decode per character, random fragments."""

from __future__ import annotations

import json
import random

import pytest
from dialect_text import BAR, DecoderCount, tagged

from rig_nb.dialects import (
    DIALECTS,
    TOOL_CALL_DIALECTS,
    TextToolCall,
    find_text_tool_calls,
    has_text_tool_calls,
    leak_dialects,
)
from rig_nb.dialects.code import MASK_BUDGET, mask_code

KIB = 1 << 10


def test_code_masking_has_a_budget() -> None:
    quoted = "Use this:\n```xml\n<tool_call>{}</tool_call>\n```\n"
    within = quoted + "`x` " * ((MASK_BUDGET - quoted.count("`")) // 2)
    assert within.count("`") == MASK_BUDGET
    assert leak_dialects(within) == ()
    assert find_text_tool_calls(within) == []
    # Past the budget nothing is masked: the quoted marker counts, and a reply made of
    # fence lines costs a scan instead of a walk over each of them.
    past = within + "`"
    assert leak_dialects(past) == ("tool-call-tag",)
    assert mask_code(past) == past
    fences = "```\n" * 100_000 + "<tool_call>"
    assert mask_code(fences) == fences
    assert leak_dialects(fences) == ("tool-call-tag",)


HOSTILE = {
    "tool-call-opener": "<tool_call>",
    "unclosed-json-call": '<tool_call>{"name": "a", "arguments": {',
    "half-markers": "<tool_[TOOL_<|chan<functio<|tool_call_beg[THI<seed:",
    "backticks": "`a",
    "backtick-runs": "``` `` `",
    "nested-fences": "````\n```\n",
    "harmony-headers": "<|channel|>analysis<|message|>",
    "recipients": "to=functions.f ",
    "bare-closers": "[/THINK]",
    "glued-functions": "<function=f>x",
    "mistral-arrays": "[TOOL_CALLS][{",
    "kimi-calls": "<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{",
    "full-calls": tagged("f", '{"a": "b"}'),
}


@pytest.mark.parametrize("unit", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_input_decoded_once(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """256 KiB of one hostile unit: no error, and each character reaches the decoder at most twice.

    Twice: arguments written as a JSON string are decoded again from the string's value.
    """
    text = unit * (256 * KIB // len(unit))
    decoder = DecoderCount(monkeypatch)
    leak_dialects(text)
    has_text_tool_calls(text)
    calls = find_text_tool_calls(text, limit=10**9)
    assert decoder.handed <= 2 * len(text)
    assert all(isinstance(c, TextToolCall) for c in calls)
    if any(c.arguments not in ("", "{}") for c in calls):
        assert decoder.handed > 0  # the count saw the decoding


FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<tool_",
    "call>",
    "<function=f>",
    "<function=",
    "</function>",
    "<parameter=p>",
    "</parameter>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "functions.f:0",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|start|>",
    "assistant",
    "<|channel|>",
    "analysis",
    "commentary",
    "final",
    " to=functions.f",
    "<|constrain|>",
    "json",
    "<|message|>",
    "<|call|>",
    "<|end|>",
    "<|return|>",
    "[THINK]",
    "[/THINK]",
    "<seed:think>",
    "</seed:think>",
    "<thought>",
    "</thought>",
    "<|channel>thought",
    "<channel|>",
    "<think>",
    "</think>",
    f"<{BAR}DSML{BAR}invoke>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    '{"name": "f", "arguments": {"a": 1}}',
    '{"name": "f"',
    '"arguments":',
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    "NaN",
    "1e999",
    "`",
    "```",
    "~~~",
    "\n",
    "\n\n",
    " ",
    "x",
    "\ud800",
    "\x00",
]


@pytest.mark.parametrize("seed", range(20))
def test_random_fragments(seed: int) -> None:
    """Random replies built from marker fragments: nothing raises, and the three agree."""
    rng = random.Random(seed)
    for _ in range(50):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 60)))
        leaks = leak_dialects(text)
        calls = find_text_tool_calls(text, limit=10**9)
        limit = rng.choice([1, 3, 33])
        assert find_text_tool_calls(text, limit=limit) == calls[:limit]
        has = has_text_tool_calls(text)
        assert leaks == tuple(d for d in DIALECTS if d in leaks)
        assert isinstance(has, bool)
        if calls:
            assert has
        if has:
            assert set(leaks) & (TOOL_CALL_DIALECTS | {"harmony"})
        for call in calls:
            assert call.dialect in leaks
            assert call.name
            if call.error:
                assert call.arguments == ""
            else:
                assert isinstance(json.loads(call.arguments), dict)
        assert find_text_tool_calls(text) == find_text_tool_calls(text)  # pure
