"""leak_dialects and find_text_tool_calls on 1 MiB of each dialect vs json.loads of clean JSON.

    .venv/bin/python benchmarks/dialects.py              # the table; exit 1 if a goal is missed
    .venv/bin/python benchmarks/dialects.py --samples 3

For each dialect: its markers repeated, and for the dialects a call can be read
from, a whole call repeated (the field reports' examples, with their `{...}`
filled in). Beside them, shapes that are hostile to a scanner: backticks,
nested fences, half-markers. Each input is timed at 256 KiB, 512 KiB and 1 MiB
(sizes in characters), interleaved with json.loads of 1 MiB of clean JSON so
that load on the machine hits every figure alike.

- ratio: median over samples of (time on 1 MiB) / (json.loads time in the same
  sample); goal <= 5x for the dialect inputs (markers repeated, a call repeated
  10,000 times in 1 MiB after a line of prose each, unclosed openers, nested
  look-alikes), shown for the other hostile ones and for calls written back to
  back with nothing between them (up to 23,000 calls in 1 MiB).
- growth: time per character from one size to the next, the larger of the two
  doublings; 1.0x is linear, 2.0x quadratic; goal <= 1.5x for every input.

Round 4 (every scanner linear up to the response cap): each family's call opener
once, then bare letters, an unclosed string, nested braces or the opener repeated
to the size (and Gemma's unclosed arguments closed by a brace), timed at 128 KiB
to 1 MiB through find_text_tool_calls and through the loop deciding the turn's
ending (`run_trace` on an in-process backend: strip, leaks, ending, recovery).
Goal: growth <= 1.5x, and the ending at 1 MiB within 40x json.loads of 1 MiB
(well under a second). `--part opened` runs these alone, `--part units` the rest.

Times are process CPU time (time.process_time), which moves far less than wall
time on a shared machine, with the garbage collector on for every contender as
in use (timeit turns it off). find_text_tool_calls runs with limit=10**9, so
every call in the input is read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import Figure, ms, sample_wall_cpu  # noqa: E402
from decode import clean_json  # noqa: E402

from rig_nb.dialects import find_text_tool_calls, leak_dialects  # noqa: E402
from tests.dialect_text import (  # noqa: E402
    BAR,
    GEMMA_STRING,
    OPENERS,
    TAILS,
    decide_ending,
    opened,
)

KIB = 1 << 10
SIZES = (256 * KIB, 512 * KIB, 1024 * KIB)
RATIO_GOAL = 5.0
GROWTH_GOAL = 1.5

# name -> (unit repeated to the size, held to the ratio goal)
INPUTS: dict[str, tuple[str, bool]] = {
    "harmony markers": (
        "<|start|>assistant<|channel|><|message|><|end|><|call|><|return|><|constrain|>"
        "assistantfinal",
        True,
    ),
    "harmony call": (
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>',
        True,
    ),
    "harmony analysis message": ("<|channel|>analysis<|message|>Need the weather.<|end|>", True),
    "tool-call-tag markers": ("<tool_call></tool_call><arg_key>", True),
    "tool-call-tag call": (
        '<tool_call>\n{"name": "search_products", "arguments": {"query": "laptop"}}\n'
        "</tool_call>\n",
        True,
    ),
    "tool-call-tag GLM call": (
        "<tool_call>list_mailboxes\n<arg_key>folder</arg_key>\n<arg_value>INBOX</arg_value>\n"
        "</tool_call>\n",
        True,
    ),
    "function-tag markers": ("<function=exec_command>", True),
    "function-tag call": (
        "<function=exec_command>\n<parameter=cmd>\necho LEAK_TEST\n</parameter>\n</function>\n"
        "</tool_call>\n",
        True,
    ),
    "mistral-tool-calls markers": ("[TOOL_CALLS]", True),
    "mistral-tool-calls call (v11)": ('[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}', True),
    "mistral-tool-calls call (array)": (
        '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "notes.txt"}, '
        '"id": "abcdefghi"}]',
        True,
    ),
    "kimi-tool-calls markers": (
        "<|tool_calls_section_begin|><|tool_call_begin|><|tool_call_argument_begin|>"
        "<|tool_calls_section_end|>",
        True,
    ),
    "kimi-tool-calls call": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "NYC"}<|tool_call_end|><|tool_calls_section_end|>',
        True,
    ),
    "think-brackets markers": ("[THINK][/THINK]", True),
    "seed-think markers": ("<seed:think></seed:think>", True),
    "thought-tag markers": ("<thought></thought>", True),
    "gemma-channel markers": ("<|channel>thought\n<channel|>", True),
    "dsml markers": (f"<{BAR}DSML{BAR}function_calls></{BAR}DSML{BAR}function_calls>", True),
    # Round 3: every family's markup (DESIGN "Dialects of every family").
    "minimax-tool-calls markers": ("<minimax:tool_call></minimax:tool_call>]<]minimax[>[", True),
    "minimax-tool-calls call (M2)": (
        '<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="city">Paris</parameter>\n'
        "</invoke>\n</minimax:tool_call>\n",
        True,
    ),
    "minimax-tool-calls call (M3)": (
        ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_time">]<]minimax[>[<city>Paris'
        "]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>\n",
        True,
    ),
    "gemma-tool-call markers": ('<|tool_call><tool_call|><|"|>', True),
    "gemma-tool-call call": ('<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>', True),
    "deepseek-tool-calls call (V3.1)": (
        f"<{BAR}tool\u2581calls\u2581begin{BAR}><{BAR}tool\u2581call\u2581begin{BAR}>get_time"
        f'<{BAR}tool\u2581sep{BAR}>{{"city": "Paris"}}<{BAR}tool\u2581call\u2581end{BAR}>'
        f"<{BAR}tool\u2581calls\u2581end{BAR}>",
        True,
    ),
    "deepseek-tool-calls call (R1)": (
        f"<{BAR}tool\u2581call\u2581begin{BAR}>function<{BAR}tool\u2581sep{BAR}>get_time\n"
        f'```json\n{{"city": "Paris"}}\n```<{BAR}tool\u2581call\u2581end{BAR}>',
        True,
    ),
    "dsml call": (
        f'<{BAR}DSML{BAR}function_calls>\n<{BAR}DSML{BAR}invoke name="get_time">\n'
        f'<{BAR}DSML{BAR}parameter name="city" string="true">Paris</{BAR}DSML{BAR}parameter>\n'
        f"</{BAR}DSML{BAR}invoke>\n</{BAR}DSML{BAR}function_calls>\n",
        True,
    ),
    "cohere and other family markers": (
        "<|START_ACTION|><|END_ACTION|><|tool_call_start|><mm:think></mm:think><|open|><|sep|>"
        "<TOOLCALL><|tools_prefix|><|function_call|>\u25c1think\u25b7",
        True,
    ),
    "hostile: unclosed family openers": (
        '<|tool_call>call:f{a:<minimax:tool_call><invoke name="f"><parameter name="a">',
        True,
    ),
    "hostile: nested look-alikes": ("]<]minimax[>[<tool_call>]<]minimax[>[<a><b><c>", True),
    "hostile: unclosed block then openers": ("[THINK]" + "<|tool_call>" * 4, True),
    "hostile: indented code": ("\n\n    <tool_call>{}</tool_call>\n", True),
    "hostile: backticks": ("`a", False),
    "hostile: nested fences": ("````\n```\n", False),
    "hostile: half-markers": ("<tool_[TOOL_<|chan<functio", False),
    "hostile: unclosed calls": ('<tool_call>{"name": "a", "arguments": {', False),
}
# DESIGN's hostile input for readers: 10,000 calls in 1 MiB, each after a line of prose.
CALLS_PER_MIB = 10_000
_PROSE = "Checking the next item before the call; the result comes back below. " * 2


def _spaced(unit: str) -> str:
    """`unit` after prose, the whole 1 MiB / CALLS_PER_MIB characters long."""
    return _PROSE[: (1 << 20) // CALLS_PER_MIB - len(unit) - 1] + "\n" + unit


# A call unit short enough to be written back to back more than 10,000 times in 1 MiB is
# held to the ratio goal at 10,000 calls; back to back (up to 23,000 calls) it is shown,
# held to linear growth.
for _name, (_unit, _held) in list(INPUTS.items()):
    if " call" in _name and _held and len(_unit) < (1 << 20) // CALLS_PER_MIB - 1:
        INPUTS[_name] = (_unit, False)
        INPUTS[f"{_name}, 10,000 in 1 MiB"] = (_spaced(_unit), True)


OPENED_SIZES = (128 * KIB, 256 * KIB, 512 * KIB, 1024 * KIB)
ENDING_RATIO_GOAL = 40.0
# name -> (text before the repeated unit, the unit, the text after it)
OPENED: dict[str, tuple[str, str, str]] = {
    f"{family} opener, {tail}": (opener + start, unit, end)
    for family, opener in OPENERS.items()
    for tail, (start, unit, end) in TAILS.items()
}
OPENED |= {f"{family} opener repeated": ("", opener, "") for family, opener in OPENERS.items()}
# The issue 35 case: Gemma's arguments unclosed for the rest of the reply, then a brace.
OPENED["gemma unclosed string, then a brace"] = (GEMMA_STRING, "a", "}")
OPENED["gemma bare letters, then a brace"] = (OPENERS["gemma"], "a", "}")


def _ending(s: str) -> Callable[[], object]:
    def decide() -> object:
        return decide_ending(s).iterations[0].ending

    return decide


def _fill(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def _find(s: str) -> Callable[[], object]:
    return lambda: find_text_tool_calls(s, limit=10**9)


def _leak(s: str) -> Callable[[], object]:
    return lambda: leak_dialects(s)


FUNCTIONS: dict[str, Callable[[str], Callable[[], object]]] = {
    "leak_dialects": _leak,
    "find_text_tool_calls": _find,
}


OPENED_FUNCTIONS: dict[str, Callable[[str], Callable[[], object]]] = {
    "find_text_tool_calls": _find,
    "ending": _ending,
}


def measure(samples: int, part: str = "all") -> tuple[str, list[Figure]]:
    clean = clean_json()
    contenders: dict[str, Callable[[], object]] = {"json.loads": lambda: json.loads(clean)}
    units = INPUTS if part != "opened" else {}
    openers = OPENED if part != "units" else {}
    for name, (unit, _) in units.items():
        for size in SIZES:
            text = _fill(unit, size)
            for fn, make in FUNCTIONS.items():
                contenders[f"{fn}|{name}|{size}"] = make(text)
    for name, parts in openers.items():
        for size in OPENED_SIZES:
            text = opened(*parts, size)
            for fn, make in OPENED_FUNCTIONS.items():
                contenders[f"{fn}|{name}|{size}"] = make(text)
    _, cpu = sample_wall_cpu(contenders, samples)
    base = cpu["json.loads"]
    lines = [
        f"\nleak_dialects / find_text_tool_calls, process CPU time, median of {samples} samples",
        f"json.loads of {len(clean) / (1 << 20):.2f} MiB of clean JSON: "
        f"{ms(statistics.median(base))}\n",
        "| input | function | 1 MiB | ratio to json.loads | growth per doubling |",
        "|---|---|---|---|---|",
    ]
    figures: list[Figure] = []
    rows = [
        (name, fn, SIZES, RATIO_GOAL if held else None)
        for name, (_, held) in units.items()
        for fn in FUNCTIONS
    ]
    rows += [
        (name, fn, OPENED_SIZES, ENDING_RATIO_GOAL if fn == "ending" else None)
        for name in openers
        for fn in OPENED_FUNCTIONS
    ]
    for name, fn, sizes, goal in rows:
        times = [cpu[f"{fn}|{name}|{size}"] for size in sizes]
        ratio = statistics.median(t / b for t, b in zip(times[-1], base, strict=True) if b > 0)
        med = [statistics.median(t) for t in times]
        growth = max(med[i + 1] / (2 * med[i]) if med[i] > 0 else 1.0 for i in range(len(med) - 1))
        met = growth <= GROWTH_GOAL and (goal is None or ratio <= goal)
        flag = "" if met else " (missed)"
        lines.append(f"| {name} | {fn} | {ms(med[-1])} | {ratio:.2f}x | {growth:.2f}x{flag} |")
        figures.append(
            Figure(
                f"{fn} 1 MiB {name}",
                f"{ratio:.2f}x json.loads, growth {growth:.2f}x per doubling",
                ("" if goal is None else f"<= {goal:.0f}x, ") + f"growth <= {GROWTH_GOAL}x",
                met,
            )
        )
    return "\n".join(lines), figures


def main() -> int:
    parser = argparse.ArgumentParser(description="leak_dialects / find_text_tool_calls benchmark")
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--part", choices=("all", "units", "opened"), default="all")
    args = parser.parse_args()
    text, figures = measure(args.samples, args.part)
    print(text)
    missed = [f for f in figures if f.met is False]
    print(f"\n{len(figures) - len(missed)}/{len(figures)} goals met")
    for f in missed:
        print(f"missed: {f.name}: {f.value} (goal {f.goal})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
