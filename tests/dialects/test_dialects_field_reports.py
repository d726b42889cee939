"""rig_nb.dialects on every reply string field-reports.md prints: the leaks and the calls."""

from __future__ import annotations

import json

import pytest
from dialect_text import want

from rig_nb.content import strip_reasoning
from rig_nb.dialects import (
    TextToolCall,
    find_text_tool_calls,
    leak_dialects,
)


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
            want(
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
        [want("function-tag", "exec_command", '{"cmd": "echo LEAK_TEST"}')],
        id="ollama-17742-qwen3-coder",
    ),
    pytest.param(
        '[TOOL_CALLS][{"name": "read_file", "arguments": {...}, "id": "abcdefghi"}]',
        [
            want(
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
        [want("mistral-tool-calls", "get_weather", '{"city": "Paris"}')],
        id="mlx-1643-v11",
    ),
    pytest.param(
        '<think>...<tool_call>{"name": "A", "arguments": {}}</tool_call>...</think><tool_call>...',
        [],
        id="vllm-55759-drafted-call-not-run",
    ),
    pytest.param(
        '"...</think><tool_call>list_mailboxes<arg_key>folder</arg_key>..."',
        [want("tool-call-tag", "list_mailboxes", "", "an <arg_key> has no closed <arg_value>")],
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
