"""Every scanner is linear up to the response cap: a 1 MiB reply of one family's unclosed call
markup decides its ending through the loop, its work bounded by counting (benchmarks/dialects.py
times it)."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator

import pytest
from dialect_text import BAR, DecoderCount

from rig_nb import RunRequest
from rig_nb.demo import demo_tools
from rig_nb.dialects import families, find_text_tool_calls
from rig_nb.loop import run_trace
from rig_nb.testing import ScriptedBackend, chat_reply
from rig_nb.trace import ENDINGS

CAP = 1 << 20
OPENERS = {
    "gemma": "<|tool_call>call:get_time{",
    "gemma-string": '<|tool_call>call:get_time{city:<|"|>',
    "hermes": '<tool_call>{"name": "f", "arguments": {',
    "glm": "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>",
    "qwen3-coder": "<function=f>\n<parameter=a>\n",
    "mistral": "[TOOL_CALLS]f[ARGS]{",
    "mistral-array": '[TOOL_CALLS][{"name": "f", "arguments": {',
    "kimi": "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
    "<|tool_call_argument_begin|>{",
    "harmony": "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
    "<|message|>{",
    "minimax": '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">',
    "minimax-m3": ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="f">]<]minimax[>[<a>',
    "deepseek": f"<{BAR}tool\u2581calls\u2581begin{BAR}><{BAR}tool\u2581call\u2581begin{BAR}>f"
    f"<{BAR}tool\u2581sep{BAR}>{{",
    "deepseek-r1": f"<{BAR}tool\u2581call\u2581begin{BAR}>function<{BAR}tool\u2581sep{BAR}>f\n"
    "```json\n{",
    "dsml": f'<{BAR}DSML{BAR}function_calls>\n<{BAR}DSML{BAR}invoke name="f">\n'
    f'<{BAR}DSML{BAR}parameter name="a" string="true">',
    "unclosed-think": "<think>",
}
# What follows the opener, to the cap: bare letters, an unclosed string, nested braces,
# the same with the object's last brace, and the opener repeated.
TAILS = {
    "letters": lambda n: "a" * n,
    "string": lambda n: '"' + "a" * (n - 1),
    "gemma-string": lambda n: '<|"|>' + "a" * (n - 5),
    "braces": lambda n: "{" * n,
    "letters-closed": lambda n: "a" * (n - 1) + "}",
    "string-closed": lambda n: '<|"|>' + "a" * (n - 6) + "}",
}


def replies(opener: str, size: int) -> Iterator[tuple[str, str]]:
    for name, tail in TAILS.items():
        yield name, opener + tail(size - len(opener))
    yield "repeated", (opener * (size // len(opener) + 1))[:size]


class Counted:
    """A compiled pattern whose `match` calls are recorded; any other method is refused."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.at: list[int] = []

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        self.at.append(pos)
        return self.pattern.match(text, pos, endpos)


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param('a:<|"|>' + "x" * CAP + "}", id="unclosed-string"),
        pytest.param("a" * CAP + "}", id="bare-letters"),
        pytest.param(",".join(f"k{i}:{i}" for i in range(50_000)) + ',z:<|"|>x}', id="many-pairs"),
    ],
)
def test_gemma_pairs_are_matched_where_the_last_ended(
    arguments: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search for the next pair would try every later position, each scanning to the end."""
    counted = Counted(families._GEMMA_PAIR)
    monkeypatch.setattr(families, "_GEMMA_PAIR", counted)
    text = "<|tool_call>call:get_time{" + arguments + "<tool_call|>"
    [call] = find_text_tool_calls(text)
    assert call.name == "get_time" and call.error
    assert counted.at == sorted(set(counted.at))  # each pair tried once, in order
    assert len(counted.at) <= arguments.count(",") + 1


def test_a_flat_gemma_object_reads_as_before() -> None:
    text = '<|tool_call>call:f{a:<|"|>x, y<|"|>,b:2,c:true}<tool_call|>'
    [call] = find_text_tool_calls(text)
    assert (call.name, call.arguments, call.error) == ("f", '{"a": "x, y", "b": 2, "c": true}', "")


@pytest.mark.parametrize("family", list(OPENERS))
def test_a_megabyte_of_unclosed_markup_decides_its_ending(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoder = DecoderCount(monkeypatch)
    # Up to the cap in steps: a quadratic scan fails its bound at a smaller size, not
    # after minutes at the cap.
    for size in (CAP // 16, CAP // 4, CAP):
        for shape, content in replies(OPENERS[family], size):
            assert len(content) == size
            decoder.handed = 0
            backend = ScriptedBackend([chat_reply(content), chat_reply("done")])
            start = time.process_time()
            trace = run_trace(backend, RunRequest("m", 64, prompt="go", tools=demo_tools()))
            spent = time.process_time() - start
            assert trace.iterations[0].ending in ENDINGS and trace.outcome, shape
            # Each character reaches the JSON decoder at most twice (once more from a string).
            assert decoder.handed <= 2 * size, (shape, size, decoder.handed)
            # No quadratic scan meets this (16 KiB of the Gemma case took 1.2 s before); the
            # timing against a baseline is benchmarks/dialects.py's.
            assert spent < 5.0, (shape, size, spent)
