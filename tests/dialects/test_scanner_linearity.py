"""Every scanner is linear up to the response cap: a 1 MiB reply of one family's unclosed call
markup decides its ending through the loop, its work bounded by counting (benchmarks/dialects.py
times it)."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator

import pytest
from dialect_text import GEMMA_STRING, OPENERS, TAILS, DecoderCount, decide_ending, opened

from rig_nb.dialects import families, find_text_tool_calls
from rig_nb.trace import ENDINGS

CAP = 1 << 20
FAMILIES = {**OPENERS, "gemma string": GEMMA_STRING, "unclosed think": "<think>"}
# Beside the benchmark's tails: Gemma's string, single braces, and the object's last brace.
SHAPES = {
    **TAILS,
    "gemma string": ('<|"|>', "a", ""),
    "single braces": ("", "{", ""),
    "letters, then a brace": ("", "a", "}"),
    "gemma string, then a brace": ('<|"|>', "a", "}"),
}


def replies(opener: str, size: int) -> Iterator[tuple[str, str]]:
    for name, (start, unit, end) in SHAPES.items():
        yield name, opened(opener + start, unit, end, size)
    yield "repeated", opened("", opener, "", size)


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


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_megabyte_of_unclosed_markup_decides_its_ending(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoder = DecoderCount(monkeypatch)
    # Up to the cap in steps: a quadratic scan fails its bound at a smaller size, not
    # after minutes at the cap.
    for size in (CAP // 16, CAP // 4, CAP):
        for shape, content in replies(FAMILIES[family], size):
            assert len(content) == size
            decoder.handed = 0
            start = time.process_time()
            trace = decide_ending(content)
            spent = time.process_time() - start
            assert trace.iterations[0].ending in ENDINGS and trace.outcome, shape
            # Each character reaches the JSON decoder at most twice (once more from a string).
            assert decoder.handed <= 2 * size, (shape, size, decoder.handed)
            # No quadratic scan meets this (16 KiB of the Gemma case took 1.2 s before); the
            # timing against a baseline is benchmarks/dialects.py's.
            assert spent < 5.0, (shape, size, spent)
