"""Tests for rig_nb.dialects: leak detection and tool calls written as text."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import rig_nb.dialects._call_json as call_json
import rig_nb.dialects.scan as dialect_scan
from rig_nb.content import strip_reasoning
from rig_nb.dialects import (
    DIALECTS,
    TOOL_CALL_DIALECTS,
    TextToolCall,
    find_text_tool_calls,
    has_text_tool_calls,
    leak_dialects,
)
from rig_nb.dialects.code import MASK_BUDGET, mask_code


def _json_error(text: str) -> str:
    """What this Python's json says of `text` (the wording changed in 3.13)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg
    raise AssertionError("valid JSON")


TRAILING_COMMA = _json_error('{"a": 1,}')


BAR = "\uff5c"  # DeepSeek's fullwidth vertical bar
KIB = 1 << 10


def _content(printed: str) -> str:
    """A reply's content from its string as field-reports.md prints it.

    Quoted strings are JSON string literals; in backticks, `\\|` is the markdown
    table's escape for `|` and `\\n` a newline.
    """
    if printed.startswith('"') and printed.endswith('"'):
        decoded = json.loads(printed)
        assert isinstance(decoded, str)
        return decoded
    return printed.replace("\\|", "|").replace("\\n", "\n")


def _tag(name: str, arguments: str) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {arguments}}}</tool_call>'


def _call(dialect: str, name: str, arguments: str = "{}", error: str = "") -> TextToolCall:
    return TextToolCall(dialect, name, arguments, error)


OLLAMA_17742 = (
    r"<function=exec_command>\n<parameter=cmd>\necho LEAK_TEST\n</parameter>\n</function>"
    r"\n</tool_call>"
)

# Every string in field-reports.md that shows a dialect, exactly as printed,
# and the reply shapes beside them that show none.
FIELD_LEAKS = [
    pytest.param(
        r"<\|channel\|>analysis<\|message\|>...<\|end\|><\|start\|>assistant<\|channel\|>final<\|message\|>...",
        ("harmony",),
        id="sglang-10061-raw-harmony",
    ),
    pytest.param(
        'analysisUser says "Hello World!"...assistantfinalHello! How can I help you today?',
        ("harmony",),
        id="oobabooga-7374-harmony-tokens-stripped",
    ),
    pytest.param(
        r"manage_cart<\|channel\|>commentary", ("harmony",), id="vllm-32587-channel-in-name"
    ),
    pytest.param(
        '"<think>\\n\\n</think>\\n\\n<tool_call>\\n{\\"name\\": \\"search_products\\", '
        '\\"arguments\\": {...}}\\n</tool_call>"',
        ("tool-call-tag",),
        id="lmstudio-825-tool-call-after-empty-think",
    ),
    pytest.param(
        OLLAMA_17742,
        ("tool-call-tag", "function-tag"),
        id="ollama-17742-qwen3-coder",
    ),
    pytest.param(
        '[TOOL_CALLS][{"name": "read_file", "arguments": {...}, "id": "abcdefghi"}]',
        ("mistral-tool-calls",),
        id="lmstudio-797-mistral-array",
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', ("mistral-tool-calls",), id="mlx-1643-v11"
    ),
    pytest.param(
        '<think>...<tool_call>{"name": "A", "arguments": {}}</tool_call>...</think><tool_call>...',
        ("tool-call-tag",),
        id="vllm-55759-call-drafted-in-reasoning",
    ),
    pytest.param(
        '"...</think><tool_call>list_mailboxes<arg_key>folder</arg_key>..."',
        ("tool-call-tag",),
        id="vmlx-swift-228-glm",
    ),
    pytest.param(
        '"...</think>The capital of France is Paris."', (), id="vmlx-swift-228-plain-answer"
    ),
    pytest.param(
        "read<arg_key>filePath</arg_key><arg_value>/home/...</arg_value>",
        ("tool-call-tag",),
        id="glm5-84-glm-arguments-without-tags",
    ),
    pytest.param('<tool_call>{"name":...}</tool_call>', ("tool-call-tag",), id="hermes-741-tagged"),
    pytest.param(
        '</think>{"name":...}</tool_call>', ("tool-call-tag",), id="hermes-741-bare-close"
    ),
    pytest.param('{"name":"tool_name","arguments":{...}}', (), id="hermes-741-bare-json"),
    pytest.param("<thought>...</thought>", ("thought-tag",), id="openhuman-6184-thought"),
    pytest.param("Write.</think><tool_call>", ("tool-call-tag",), id="vllm-43220-streamed-delta"),
    pytest.param(
        '"<think>The user is asking for the current weather in Paris. I have access to the '
        'get_weather function...</think>"',
        (),
        id="vllm-mlx-161-think-only",
    ),
    pytest.param('"<think>xxxxx</think>json{....}"', (), id="deepseek-r1-381-json-prefix"),
    pytest.param('"json\\n{\\"location\\":\\"San Francisco\\"}"', (), id="tt-3683-arguments"),
    pytest.param(
        '"{\\"{\\"role\\": \\"assistant\\", \\"content\\": \\"Okay, the user just said ..."',
        (),
        id="ollama-10976-broken-json",
    ),
    pytest.param(
        '{"error":{"message":"think value \\"medium\\" is not supported for this model",'
        '"type":"api_error",...}}',
        (),
        id="ollama-12561-error-object",
    ),
    pytest.param(
        '"Thinking Process:\\n\\n1.  **Analyze the Request:** ..."', (), id="1cat-18-untagged"
    ),
    pytest.param(
        '"Hmm, the user just said \\"hi\\" which is a simple greeting. ..."',
        (),
        id="ik-llama-776-untagged",
    ),
    pytest.param('{"query":"how to...', (), id="vllm-25514-arguments-as-reasoning"),
    pytest.param('"\\n\\n"', (), id="llama-cpp-13224-blank-content"),
]


@pytest.mark.parametrize(("printed", "expected"), FIELD_LEAKS)
def test_leak_dialects_field_reports(printed: str, expected: tuple[str, ...]) -> None:
    assert leak_dialects(_content(printed)) == expected


def test_markdown_escaped_source_is_not_harmony() -> None:
    # The table's source text: `<\|channel\|>` is a split marker, not a token.
    printed = r"<\|channel\|>analysis<\|message\|>...<\|end\|><\|start\|>assistant<\|channel\|>"
    assert leak_dialects(printed) == ()


# The calls a loop could run from the same reports' content, after strip_reasoning.
FIELD_CALLS = [
    pytest.param(
        '"<think>\\n\\n</think>\\n\\n<tool_call>\\n{\\"name\\": \\"search_products\\", '
        '\\"arguments\\": {...}}\\n</tool_call>"',
        [
            _call(
                "tool-call-tag",
                "search_products",
                "",
                "arguments are not valid JSON (Expecting property name enclosed in double quotes)",
            )
        ],
        id="lmstudio-825-elided-arguments",
    ),
    pytest.param(
        OLLAMA_17742,
        [_call("function-tag", "exec_command", '{"cmd": "echo LEAK_TEST"}')],
        id="ollama-17742-qwen3-coder",
    ),
    pytest.param(
        '[TOOL_CALLS][{"name": "read_file", "arguments": {...}, "id": "abcdefghi"}]',
        [
            _call(
                "mistral-tool-calls",
                "read_file",
                "",
                "arguments are not valid JSON (Expecting property name enclosed in double quotes)",
            )
        ],
        id="lmstudio-797-elided-arguments",
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        [_call("mistral-tool-calls", "get_weather", '{"city": "Paris"}')],
        id="mlx-1643-v11",
    ),
    pytest.param(
        '<think>...<tool_call>{"name": "A", "arguments": {}}</tool_call>...</think><tool_call>...',
        [],
        id="vllm-55759-drafted-call-not-run",
    ),
    pytest.param(
        '"...</think><tool_call>list_mailboxes<arg_key>folder</arg_key>..."',
        [_call("tool-call-tag", "list_mailboxes", "", "an <arg_key> has no closed <arg_value>")],
        id="vmlx-swift-228-glm-cut",
    ),
    pytest.param('<tool_call>{"name":...}</tool_call>', [], id="hermes-741-no-name"),
    pytest.param('</think>{"name":...}</tool_call>', [], id="hermes-741-bare-close-no-name"),
    pytest.param(
        r"<\|channel\|>analysis<\|message\|>...<\|end\|><\|start\|>assistant<\|channel\|>final<\|message\|>...",
        [],
        id="sglang-10061-no-call",
    ),
    pytest.param(
        'analysisUser says "Hello World!"...assistantfinalHello! How can I help you today?',
        [],
        id="oobabooga-7374-no-call",
    ),
]


@pytest.mark.parametrize(("printed", "expected"), FIELD_CALLS)
def test_find_text_tool_calls_field_reports(printed: str, expected: list[TextToolCall]) -> None:
    assert find_text_tool_calls(strip_reasoning(_content(printed))) == expected


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
        "[THINK]plan[/THINK]" + _tag("a", "{}"),
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
    pytest.param(
        HARMONY_CALL, [_call("harmony", "get_weather", '{"city": "Paris"}')], id="harmony"
    ),
    pytest.param(
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"a":1}'
        "<|call|>",
        [_call("harmony", "get_weather", '{"a": 1}')],
        id="harmony-recipient-in-role",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>Call it: <|start|>assistant<|channel|>commentary "
        'to=functions.delete_all<|message|>{"all": true}<|call|> maybe.<|end|>' + HARMONY_CALL,
        [_call("harmony", "get_weather", '{"city": "Paris"}')],
        id="harmony-call-inside-analysis-not-run",
    ),
    pytest.param(
        "<|channel|>analysis to=functions.delete_all<|message|>{}<|call|>",
        [_call("harmony", "delete_all", "{}")],  # a recipient is a call on any channel
        id="harmony-analysis-channel-call",
    ),
    pytest.param(
        "<|start|>assistant to=functions.delete_all<|channel|>analysis<|message|>{}<|call|>",
        [_call("harmony", "delete_all", "{}")],  # a recipient is a call on any channel
        id="harmony-analysis-channel-call-in-role",
    ),
    pytest.param(
        "<|channel|>analysis<|message|>draft " + _tag("a", "{}"), [], id="harmony-unclosed-analysis"
    ),
    pytest.param(
        'analysisNeed weather.assistantcommentary to=functions.get_weather json{"city":"Paris"}',
        [],
        id="harmony-stripped-call-unreadable",
    ),
    pytest.param(
        "[THINK]Draft: " + _tag("a", "{}") + "[/THINK]" + _tag("b", '{"x": 1}'),
        [_call("tool-call-tag", "b", '{"x": 1}')],
        id="call-drafted-in-think-brackets",
    ),
    pytest.param(
        "Sure.[THINK]" + _tag("a", "{}"),
        [_call("tool-call-tag", "a", "{}")],  # a call opener ends an unclosed reasoning block
        id="unclosed-think-brackets",
    ),
    pytest.param(
        '<tool_call>{"name": "draft", "arguments": {[/THINK]' + _tag("b", "{}"),
        [_call("tool-call-tag", "b")],
        id="unclosed-call-ends-at-reasoning-closer",
    ),
    pytest.param(
        _tag("w", '{"text": "see [/THINK]"}'),
        [],
        id="reasoning-closer-in-arguments-makes-call-reasoning",
    ),
    pytest.param(
        _tag("a", "{}") + "[/THINK]" + _tag("b", "{}"),
        [_call("tool-call-tag", "b")],
        id="unopened-think-brackets",
    ),
    pytest.param(
        "<seed:think>" + _tag("a", "{}") + "</seed:think>[TOOL_CALLS]b[ARGS]{}",
        [_call("mistral-tool-calls", "b")],
        id="seed-think",
    ),
    pytest.param("<thought>[TOOL_CALLS]a[ARGS]{}</thought>\\boxed{4}", [], id="thought-tag"),
    pytest.param(
        "<|channel>thought\n<function=a>\n</function><channel|>"
        "<function=b>\n<parameter=n>\n2\n</parameter>\n</function>",
        [_call("function-tag", "b", '{"n": 2}')],
        id="gemma-channel",
    ),
    pytest.param("analysisWe could call " + _tag("a", "{}"), [], id="stripped-analysis-unclosed"),
    pytest.param(
        "analysisDraft " + _tag("a", "{}") + "assistantfinal" + _tag("b", "{}"),
        [_call("tool-call-tag", "b")],
        id="stripped-analysis-closed",
    ),
    pytest.param(
        "Use:\n```json\n" + _tag("a", "{}") + "\n```\nand `[TOOL_CALLS]a[ARGS]{}`.",
        [],
        id="fenced-and-inline-examples",
    ),
    pytest.param(
        "```\n" + _tag("a", "{}"), [_call("tool-call-tag", "a")], id="unclosed-fence-hides-nothing"
    ),
    pytest.param(
        'Calling it.\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>',
        [_call("tool-call-tag", "search", '{"q": "x"}')],
        id="hermes-bare-close",
    ),
    pytest.param(
        _tag("a", "{}") + "\n[TOOL_CALLS]b[ARGS]{" + '"y": 2}',
        [_call("tool-call-tag", "a"), _call("mistral-tool-calls", "b", '{"y": 2}')],
        id="two-dialects",
    ),
    pytest.param(
        _tag("write", '{"text": "use <tool_call> tags"}'),
        [_call("tool-call-tag", "write", '{"text": "use <tool_call> tags"}')],
        id="opener-in-json-string",
    ),
    pytest.param(
        _tag("write", '{"text": "a </tool_call> b"}'),
        [
            _call(
                "tool-call-tag",
                "write",
                "",
                "arguments are not valid JSON (Unterminated string starting at)",
            )
        ],
        id="closer-in-json-string-ends-the-call",
    ),
    pytest.param(
        _tag("a", "{}") + "\n" + _tag("b", '{"x": 1}').replace("</tool_call>", ""),
        [_call("tool-call-tag", "a"), _call("tool-call-tag", "b", '{"x": 1}')],
        id="unclosed-then-next-line",
    ),
    pytest.param(
        _tag("x", '{"a": NaN}'),
        [_call("tool-call-tag", "x", "", "arguments are not valid JSON (NaN is not JSON)")],
        id="nan",
    ),
    pytest.param(
        '[TOOL_CALLS]x[ARGS]{"a": -Infinity}',
        [
            _call(
                "mistral-tool-calls",
                "x",
                "",
                "arguments are not valid JSON (-Infinity is not JSON)",
            )
        ],
        id="infinity",
    ),
    pytest.param(
        _tag("x", '{"a": 1e999}'),
        [_call("tool-call-tag", "x", "", "arguments are not valid JSON (1e999 is out of range)")],
        id="float-out-of-range",
    ),
    pytest.param(
        _tag("x", '{"a": 1,}'),
        [
            _call(
                "tool-call-tag",
                "x",
                "",
                f"arguments are not valid JSON ({TRAILING_COMMA})",
            )
        ],
        id="malformed-json",
    ),
    pytest.param(
        _tag("x", "[1, 2]"),
        [_call("tool-call-tag", "x", "", "arguments are not a JSON object")],
        id="arguments-not-object",
    ),
    pytest.param(
        _tag("x", '"{\\"a\\": 1}"'),
        [_call("tool-call-tag", "x", '{"a": 1}')],
        id="arguments-as-text",
    ),
    pytest.param(
        _tag("x", '"a=1"'),
        [_call("tool-call-tag", "x", "", "arguments are not valid JSON (Expecting value)")],
        id="arguments-text-not-json",
    ),
    pytest.param(
        '<tool_call>{"name": "x"}</tool_call>', [_call("tool-call-tag", "x")], id="no-arguments"
    ),
    pytest.param('<tool_call>{"arguments": {}}</tool_call>', [], id="no-name-skipped"),
    pytest.param(
        '<tool_call>{"type": "function", "function": {"name": "x", "arguments": "{}"}}</tool_call>',
        [_call("tool-call-tag", "x")],
        id="openai-shape",
    ),
    pytest.param(
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
        [_call("tool-call-tag", "get_weather", '{"city": "Beijing", "days": 3}')],
        id="glm",
    ),
    pytest.param(
        "<tool_call>get_time\n</tool_call>",
        [_call("tool-call-tag", "get_time")],
        id="glm-no-arguments",
    ),
    pytest.param("<tool_call>I will look it up</tool_call>", [], id="prose-in-tag-skipped"),
    pytest.param(
        "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.txt\n</parameter>\n"
        '<parameter=lines>\n[1, 2]\n</parameter>\n<parameter=text>\n"quoted"\n</parameter>\n'
        "</function>\n</tool_call>",
        [
            _call(
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
            _call(
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
        [_call("mistral-tool-calls", "a", '{"x": 1}'), _call("mistral-tool-calls", "b")],
        id="mistral-array-two-calls",
    ),
    pytest.param(
        '[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}',
        [_call("mistral-tool-calls", "a", '{"x": 1}'), _call("mistral-tool-calls", "b")],
        id="mistral-v11-two-calls",
    ),
    pytest.param(
        '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}</s> done',
        [_call("mistral-tool-calls", "get_weather", '{"city": "Paris"}')],
        id="mistral-call-id-and-trailing-text",
    ),
    pytest.param(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>"
        '{"x": 1}<|tool_call_end|><|tool_call_begin|>functions.b:1<|tool_call_argument_begin|>{}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        [_call("kimi-tool-calls", "a", '{"x": 1}'), _call("kimi-tool-calls", "b")],
        id="kimi-two-calls",
    ),
    pytest.param(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_end|>",
        [_call("kimi-tool-calls", "a", "", "no arguments marker")],
        id="kimi-no-arguments-marker",
    ),
    pytest.param(
        f'<{BAR}DSML{BAR}function_calls>\n<{BAR}DSML{BAR}invoke name="f">\n'
        f"</{BAR}DSML{BAR}invoke>\n</{BAR}DSML{BAR}function_calls>",
        [_call("dsml", "f", "{}")],  # read since round 3 (DeepSeek V3.2's template)
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
    text = "\n".join(_tag(f"f{i}", f'{{"i": {i}}}') for i in range(40))
    calls = find_text_tool_calls(text)
    assert len(calls) == 33
    assert calls[0] == _call("tool-call-tag", "f0", '{"i": 0}')
    assert calls[32] == _call("tool-call-tag", "f32", '{"i": 32}')
    assert [c.name for c in find_text_tool_calls(text, limit=2)] == ["f0", "f1"]
    assert find_text_tool_calls(text, limit=0) == []
    assert len(find_text_tool_calls(text, limit=10**9)) == 40
    # Past the limit the scan still looks for a closer that makes all of them reasoning.
    after = find_text_tool_calls(text + "[/THINK]" + _tag("real", "{}"), limit=5)
    assert after == [_call("tool-call-tag", "real")]


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
    "full-calls": _tag("f", '{"a": "b"}'),
}


@pytest.mark.parametrize("unit", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_input_decoded_once(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """256 KiB of one hostile unit: no error, and each character reaches the decoder at most twice.

    Twice: arguments written as a JSON string are decoded again from the string's value.
    """
    text = unit * (256 * KIB // len(unit))
    handed = 0
    scan_once = call_json.scan_once

    def counting(s: str, start: int) -> tuple[Any, int]:
        nonlocal handed
        handed += len(s) - start
        return scan_once(s, start)

    for module in (call_json, dialect_scan):
        monkeypatch.setattr(module, "scan_once", counting)
    leak_dialects(text)
    has_text_tool_calls(text)
    calls = find_text_tool_calls(text, limit=10**9)
    assert handed <= 2 * len(text)
    assert all(isinstance(c, TextToolCall) for c in calls)
    if any(c.arguments not in ("", "{}") for c in calls):
        assert handed > 0  # the count saw the decoding


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
