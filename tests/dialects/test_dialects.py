"""Tests for rig_nb.dialects: leak detection and tool calls written as text, case by case."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dialect_text import BAR, tagged, want

from rig_nb.dialects import (
    DIALECTS,
    TOOL_CALL_DIALECTS,
    TextToolCall,
    find_text_tool_calls,
    has_text_tool_calls,
    leak_dialects,
)


def _json_error(text: str) -> str:
    """What this Python's json says of `text` (the wording changed in 3.13)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg
    raise AssertionError("valid JSON")


TRAILING_COMMA = _json_error('{"a": 1,}')


LEAKS = [
    pytest.param(
        'Use this:\n```xml\n<tool_call>{"name": "a"}</tool_call>\n```\nThen wait.',
        (),
        id="fenced-example",
    ),
    pytest.param("Wrap it in `<tool_call>` and `[TOOL_CALLS]` tags.", (), id="inline-code"),
    pytest.param("~~~\n<|channel|>analysis<|message|>\n~~~\n", (), id="tilde-fence"),
    pytest.param("````\n```\n<tool_call>\n```\n````\nok", (), id="nested-fences"),
    pytest.param("``a `<tool_call>` b``", (), id="double-backtick-span"),
    pytest.param("```\n<tool_call>", ("tool-call-tag",), id="unclosed-fence-hides-nothing"),
    pytest.param("```x```\n<tool_call>\n```", ("tool-call-tag",), id="inline-run-is-no-fence"),
    pytest.param("a `b\n\n<tool_call>\n\nc` d", ("tool-call-tag",), id="span-stops-at-blank-line"),
    pytest.param(
        "<tool_ call> [TOOL_ CALLS] <| channel|> <function= x> [THINK ] <seed: think>",
        (),
        id="split-markers",
    ),
    pytest.param(
        '{"text": "<tool_call>", "note": "[THINK]"}',
        ("tool-call-tag", "think-brackets"),
        id="markers-in-json-strings",
    ),
    pytest.param(
        "[THINK]plan[/THINK]" + tagged("a", "{}"),
        ("tool-call-tag", "think-brackets"),
        id="two-dialects",
    ),
    pytest.param(
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>"
        "{}<|call|><tool_call><function=f>[TOOL_CALLS]<|tool_call_begin|>[THINK]"
        f"<seed:think><thought><|channel>thought<{BAR}DSML{BAR}function_calls>",
        DIALECTS[:10],  # the first ten; every family's (tests/test_family_dialects.py)
        id="every-dialect",
    ),
    pytest.param("The final analysis: results are final.", (), id="english-analysis-final"),
    pytest.param("analysis\nFinal answer: 4", (), id="english-heading"),
    pytest.param("Analysis of the assistant's final answer.", (), id="english-assistant-final"),
    pytest.param("analysisWe need to answer 4.", ("harmony",), id="stripped-analysis-start"),
    pytest.param(" \n analysisThe user asks.", ("harmony",), id="stripped-after-space"),
    pytest.param("Sure.assistantfinal4", ("harmony",), id="stripped-final-only"),
    pytest.param(
        "assistantcommentary to=functions.get_weather json{}", ("harmony",), id="stripped-call"
    ),
    pytest.param("<|channel>thought\nhm<channel|>4", ("gemma-channel",), id="gemma"),
    pytest.param("<seed:think>hm</seed:think>4", ("seed-think",), id="seed"),
    pytest.param("hm[/THINK]4", ("think-brackets",), id="unopened-think-brackets"),
    pytest.param(
        f'<{BAR}DSML{BAR}invoke name="f">x</{BAR}DSML{BAR}invoke>', ("dsml",), id="dsml-invoke"
    ),
    pytest.param("<|DSML|function_calls>", (), id="dsml-needs-fullwidth-bars"),
    pytest.param("<|tool_calls_section_begin|>", ("kimi-tool-calls",), id="kimi-section"),
    pytest.param("<function=f>", ("function-tag",), id="function-tag-alone"),
    pytest.param("<function=>", (), id="function-tag-without-name"),
]


@pytest.mark.parametrize(("text", "expected"), LEAKS)
def test_leak_dialects(text: str, expected: tuple[str, ...]) -> None:
    assert leak_dialects(text) == expected


HARMONY_CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris"}<|call|>'
)
CALLS = [
    pytest.param(HARMONY_CALL, [want("harmony", "get_weather", '{"city": "Paris"}')], id="harmony"),
    pytest.param(
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"a":1}'
        "<|call|>",
        [want("harmony", "get_weather", '{"a": 1}')],
        id="harmony-recipient-in-role",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>Call it: <|start|>assistant<|channel|>commentary "
        'to=functions.delete_all<|message|>{"all": true}<|call|> maybe.<|end|>' + HARMONY_CALL,
        [want("harmony", "get_weather", '{"city": "Paris"}')],
        id="harmony-call-inside-analysis-not-run",
    ),
    pytest.param(
        "<|channel|>analysis to=functions.delete_all<|message|>{}<|call|>",
        [want("harmony", "delete_all", "{}")],  # a recipient is a call on any channel
        id="harmony-analysis-channel-call",
    ),
    pytest.param(
        "<|start|>assistant to=functions.delete_all<|channel|>analysis<|message|>{}<|call|>",
        [want("harmony", "delete_all", "{}")],  # a recipient is a call on any channel
        id="harmony-analysis-channel-call-in-role",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>draft " + tagged("a", "{}"),
        [],
        id="harmony-unclosed-analysis",
    ),
    pytest.param(
        'analysisNeed weather.assistantcommentary to=functions.get_weather json{"city":"Paris"}',
        [],
        id="harmony-stripped-call-unreadable",
    ),
    pytest.param(
        "[THINK]Draft: " + tagged("a", "{}") + "[/THINK]" + tagged("b", '{"x": 1}'),
        [want("tool-call-tag", "b", '{"x": 1}')],
        id="call-drafted-in-think-brackets",
    ),
    pytest.param(
        "Sure.[THINK]" + tagged("a", "{}"),
        [want("tool-call-tag", "a", "{}")],  # a call opener ends an unclosed reasoning block
        id="unclosed-think-brackets",
    ),
    pytest.param(
        '<tool_call>{"name": "draft", "arguments": {[/THINK]' + tagged("b", "{}"),
        [want("tool-call-tag", "b")],
        id="unclosed-call-ends-at-reasoning-closer",
    ),
    pytest.param(
        tagged("w", '{"text": "see [/THINK]"}'),
        [],
        id="reasoning-closer-in-arguments-makes-call-reasoning",
    ),
    pytest.param(
        tagged("a", "{}") + "[/THINK]" + tagged("b", "{}"),
        [want("tool-call-tag", "b")],
        id="unopened-think-brackets",
    ),
    pytest.param(
        "<seed:think>" + tagged("a", "{}") + "</seed:think>[TOOL_CALLS]b[ARGS]{}",
        [want("mistral-tool-calls", "b")],
        id="seed-think",
    ),
    pytest.param("<thought>[TOOL_CALLS]a[ARGS]{}</thought>\\boxed{4}", [], id="thought-tag"),
    pytest.param(
        "<|channel>thought\n<function=a>\n</function><channel|>"
        "<function=b>\n<parameter=n>\n2\n</parameter>\n</function>",
        [want("function-tag", "b", '{"n": 2}')],
        id="gemma-channel",
    ),
    pytest.param("analysisWe could call " + tagged("a", "{}"), [], id="stripped-analysis-unclosed"),
    pytest.param(
        "analysisDraft " + tagged("a", "{}") + "assistantfinal" + tagged("b", "{}"),
        [want("tool-call-tag", "b")],
        id="stripped-analysis-closed",
    ),
    pytest.param(
        "Use:\n```json\n" + tagged("a", "{}") + "\n```\nand `[TOOL_CALLS]a[ARGS]{}`.",
        [],
        id="fenced-and-inline-examples",
    ),
    pytest.param(
        "```\n" + tagged("a", "{}"), [want("tool-call-tag", "a")], id="unclosed-fence-hides-nothing"
    ),
    pytest.param(
        'Calling it.\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>',
        [want("tool-call-tag", "search", '{"q": "x"}')],
        id="hermes-bare-close",
    ),
    pytest.param(
        tagged("a", "{}") + "\n[TOOL_CALLS]b[ARGS]{" + '"y": 2}',
        [want("tool-call-tag", "a"), want("mistral-tool-calls", "b", '{"y": 2}')],
        id="two-dialects",
    ),
    pytest.param(
        tagged("write", '{"text": "use <tool_call> tags"}'),
        [want("tool-call-tag", "write", '{"text": "use <tool_call> tags"}')],
        id="opener-in-json-string",
    ),
    pytest.param(
        tagged("write", '{"text": "a </tool_call> b"}'),
        [
            want(
                "tool-call-tag",
                "write",
                "",
                "arguments are not valid JSON (Unterminated string starting at)",
            )
        ],
        id="closer-in-json-string-ends-the-call",
    ),
    pytest.param(
        tagged("a", "{}") + "\n" + tagged("b", '{"x": 1}').replace("</tool_call>", ""),
        [want("tool-call-tag", "a"), want("tool-call-tag", "b", '{"x": 1}')],
        id="unclosed-then-next-line",
    ),
    pytest.param(
        tagged("x", '{"a": NaN}'),
        [want("tool-call-tag", "x", "", "arguments are not valid JSON (NaN is not JSON)")],
        id="nan",
    ),
    pytest.param(
        '[TOOL_CALLS]x[ARGS]{"a": -Infinity}',
        [
            want(
                "mistral-tool-calls",
                "x",
                "",
                "arguments are not valid JSON (-Infinity is not JSON)",
            )
        ],
        id="infinity",
    ),
    pytest.param(
        tagged("x", '{"a": 1e999}'),
        [want("tool-call-tag", "x", "", "arguments are not valid JSON (1e999 is out of range)")],
        id="float-out-of-range",
    ),
    pytest.param(
        tagged("x", '{"a": 1,}'),
        [
            want(
                "tool-call-tag",
                "x",
                "",
                f"arguments are not valid JSON ({TRAILING_COMMA})",
            )
        ],
        id="malformed-json",
    ),
    pytest.param(
        tagged("x", "[1, 2]"),
        [want("tool-call-tag", "x", "", "arguments are not a JSON object")],
        id="arguments-not-object",
    ),
    pytest.param(
        tagged("x", '"{\\"a\\": 1}"'),
        [want("tool-call-tag", "x", '{"a": 1}')],
        id="arguments-as-text",
    ),
    pytest.param(
        tagged("x", '"a=1"'),
        [want("tool-call-tag", "x", "", "arguments are not valid JSON (Expecting value)")],
        id="arguments-text-not-json",
    ),
    pytest.param(
        '<tool_call>{"name": "x"}</tool_call>', [want("tool-call-tag", "x")], id="no-arguments"
    ),
    pytest.param('<tool_call>{"arguments": {}}</tool_call>', [], id="no-name-skipped"),
    pytest.param(
        '<tool_call>{"type": "function", "function": {"name": "x", "arguments": "{}"}}</tool_call>',
        [want("tool-call-tag", "x")],
        id="openai-shape",
    ),
    pytest.param(
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
        [want("tool-call-tag", "get_weather", '{"city": "Beijing", "days": 3}')],
        id="glm",
    ),
    pytest.param(
        "<tool_call>get_time\n</tool_call>",
        [want("tool-call-tag", "get_time")],
        id="glm-no-arguments",
    ),
    pytest.param("<tool_call>I will look it up</tool_call>", [], id="prose-in-tag-skipped"),
    pytest.param(
        "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.txt\n</parameter>\n"
        '<parameter=lines>\n[1, 2]\n</parameter>\n<parameter=text>\n"quoted"\n</parameter>\n'
        "</function>\n</tool_call>",
        [
            want(
                "function-tag",
                "write_file",
                '{"path": "/tmp/a.txt", "lines": [1, 2], "text": "\\"quoted\\""}',
            )
        ],
        id="qwen3-coder-in-tag-value-types",
    ),
    pytest.param(
        "<function=f>\n<parameter=n>\n-1.5\n</parameter>\n<parameter=ok>\ntrue\n</parameter>\n"
        '<parameter=none>\nnull\n</parameter>\n<parameter=obj>\n{"k": [1]}\n</parameter>\n'
        "<parameter=word>\ntrue story\n</parameter>\n</function>",
        [
            want(
                "function-tag",
                "f",
                '{"n": -1.5, "ok": true, "none": null, "obj": {"k": [1]}, "word": "true story"}',
            )
        ],
        id="qwen3-coder-literals",
    ),
    pytest.param("<function={{ tc.name }}>\n</function>", [], id="qwen3-coder-template-name"),
    pytest.param(
        '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}, "id": "abcdefghi"}, '
        '{"name": "b", "arguments": {}}]',
        [want("mistral-tool-calls", "a", '{"x": 1}'), want("mistral-tool-calls", "b")],
        id="mistral-array-two-calls",
    ),
    pytest.param(
        '[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}',
        [want("mistral-tool-calls", "a", '{"x": 1}'), want("mistral-tool-calls", "b")],
        id="mistral-v11-two-calls",
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}</s> done',
        [want("mistral-tool-calls", "get_weather", '{"city": "Paris"}')],
        id="mistral-call-id-and-trailing-text",
    ),
    pytest.param(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>"
        '{"x": 1}<|tool_call_end|><|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        [want("kimi-tool-calls", "a", '{"x": 1}'), want("kimi-tool-calls", "b")],
        id="kimi-two-calls",
    ),
    pytest.param(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_end|>",
        [want("kimi-tool-calls", "a", "", "no arguments marker")],
        id="kimi-no-arguments-marker",
    ),
    pytest.param(
        f'<{BAR}DSML{BAR}function_calls>\n<{BAR}DSML{BAR}invoke name="f">\n'
        f"</{BAR}DSML{BAR}invoke>\n</{BAR}DSML{BAR}function_calls>",
        [want("dsml", "f", "{}")],  # read since round 3 (DeepSeek V3.2's template)
        id="dsml-read",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CALLS)
def test_find_text_tool_calls(text: str, expected: list[TextToolCall]) -> None:
    assert find_text_tool_calls(text) == expected
    # Every call read is a dialect that detection names, and is seen by has_.
    assert {c.dialect for c in expected} <= set(leak_dialects(text))
    if expected:
        assert has_text_tool_calls(text)


HAS = [
    pytest.param(HARMONY_CALL, True, id="harmony-call"),
    pytest.param(
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>4",
        False,
        id="harmony-without-call",
    ),
    pytest.param("assistantcommentary to=functions.f json{}", True, id="harmony-stripped-call"),
    pytest.param('<tool_call>{"name":...}</tool_call>', True, id="unreadable-call-counts"),
    pytest.param(f"<{BAR}DSML{BAR}function_calls>", True, id="dsml"),
    pytest.param("read<arg_key>filePath</arg_key>", True, id="glm-arguments"),
    pytest.param("[THINK]<tool_call>[/THINK]4", False, id="marker-in-reasoning"),
    pytest.param("<tool_call>x[/THINK]4", False, id="marker-before-unopened-closer"),
    pytest.param("Use `<tool_call>` tags.", False, id="marker-in-code"),
    pytest.param("<|channel>thought\nx<channel|>4", False, id="reasoning-only"),
]


@pytest.mark.parametrize(("text", "expected"), HAS)
def test_has_text_tool_calls(text: str, expected: bool) -> None:
    assert has_text_tool_calls(text) is expected


def test_constants() -> None:
    assert DIALECTS[:10] == (
        "harmony",
        "tool-call-tag",
        "function-tag",
        "mistral-tool-calls",
        "kimi-tool-calls",
        "think-brackets",
        "seed-think",
        "thought-tag",
        "gemma-channel",
        "dsml",
    )
    assert TOOL_CALL_DIALECTS >= {
        "tool-call-tag",
        "function-tag",
        "mistral-tool-calls",
        "kimi-tool-calls",
        "dsml",
    }


@pytest.mark.parametrize("value", [None, b"<tool_call>", 42, ["<tool_call>"], object()])
def test_not_a_string(value: Any) -> None:
    assert leak_dialects(value) == ()
    assert find_text_tool_calls(value) == []
    assert has_text_tool_calls(value) is False


def test_limit() -> None:
    text = "\n".join(tagged(f"f{i}", f'{{"i": {i}}}') for i in range(40))
    calls = find_text_tool_calls(text)
    assert len(calls) == 33
    assert calls[0] == want("tool-call-tag", "f0", '{"i": 0}')
    assert calls[32] == want("tool-call-tag", "f32", '{"i": 32}')
    assert [c.name for c in find_text_tool_calls(text, limit=2)] == ["f0", "f1"]
    assert find_text_tool_calls(text, limit=0) == []
    assert len(find_text_tool_calls(text, limit=10**9)) == 40
    # Past the limit the scan still looks for a closer that makes all of them reasoning.
    after = find_text_tool_calls(text + "[/THINK]" + tagged("real", "{}"), limit=5)
    assert after == [want("tool-call-tag", "real")]
