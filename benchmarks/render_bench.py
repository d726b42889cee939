"""Rendering a hostile reply vs a harmless one of the same size: LeakLab, an opened TraceView row.

    .venv/bin/python benchmarks/render_bench.py [--samples N] [--quick]

Inputs of 1.5 MiB (characters), and of 384 and 768 KiB for the growth:
- harmless: plain prose, no tags;
- hostile: `<think>a</think>b` repeated; `</think>` repeated; `x</think>` then
  closed blocks `<think>a</think>b` repeated; `x</think><think>a</think>b`
  repeated; `<think>` repeated; and markup that is not a think tag, which
  the dialect scanners must still look at: `<b>x</b> ` (a reply in HTML),
  `<|` (half a harmony token) and `<` repeated; markdown fence lines (the
  dialect scanners mask code), alone and after a tool-call marker.
Renderers:
- `LeakLab(text)`: the widget's construction (it strips, finds leaks and
  text tool calls, decodes JSON and renders the marked raw reply);
- an opened TraceView row: `iteration_detail_html(it)` for an Iteration with
  `raw_content=text`, `text=strip_reasoning(text)` and
  `reasoning_shape=reasoning_shape(text)` (computed beforehand, as the loop
  does when it records the reply).
Cost: process CPU time (the work is all in this process); a LeakLab is
closed after each timing, outside it, with every widget it made. Goals, from DESIGN.md: a hostile
1.5 MiB reply renders within 2x the time of a harmless one of the same size
(median over samples of the within-sample ratio), and the cost per character
grows by at most 1.5x per doubling of the size. When a renderer misses, its
worst hostile input and the harmless one are profiled (pyinstrument, shares
of the total time of PROFILE_CALLS calls) below its table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from common import (
    Figure,
    growth,
    ms,
    profile,
    run_alone,
    sample_wall_cpu,
    widget_cleanup,
    within_sample_ratio,
)

KIB = 1 << 10
SIZES = (384 * KIB, 768 * KIB, 1536 * KIB)
PROFILE_CALLS = 20
RATIO_GOAL = 2.0
GROWTH_GOAL = 1.5
PROSE = "The model kept reasoning about the question at length, step by step. "
HARMLESS = "prose, no tags"
BLOCK = "<think>a</think>b"


def _fill(unit: str, size: int, head: str = "") -> str:
    return head + unit * ((size - len(head)) // len(unit))


def inputs(size: int) -> dict[str, str]:
    return {
        HARMLESS: _fill(PROSE, size),
        f"`{BLOCK}` repeated": _fill(BLOCK, size),
        "`</think>` repeated": _fill("</think>", size),
        f"`x</think>` + `{BLOCK}` repeated": _fill(BLOCK, size, "x</think>"),
        f"`x</think>{BLOCK}` repeated": _fill("x</think>" + BLOCK, size),
        "`<think>` repeated": _fill("<think>", size),
        "`<b>x</b> ` repeated": _fill("<b>x</b> ", size),
        "`<|` repeated": _fill("<|", size),
        "`<` repeated": _fill("<", size),
        "fence lines repeated": _fill("```\n", size),
        "fence lines + `<tool_call>`": _fill("```\n", size, "<tool_call>"),
    }


def renderers() -> dict[str, Callable[[str], Callable[[], Any]]]:
    from rig_nb import Iteration, reasoning_shape, strip_reasoning
    from rig_nb.widgets import LeakLab
    from rig_nb.widgets.trace_view import iteration_detail_html

    def leak_lab(text: str) -> Callable[[], Any]:
        return lambda: LeakLab(text)

    def detail(text: str) -> Callable[[], Any]:
        # As the loop records a reply: the stripped text and the shape, both known beforehand.
        it = Iteration(
            raw_content=text, text=strip_reasoning(text), reasoning_shape=reasoning_shape(text)
        )
        return lambda: iteration_detail_html(it)

    return {"LeakLab(text)": leak_lab, "opened TraceView row": detail}


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    texts = {size: inputs(size) for size in SIZES}
    names = list(texts[SIZES[0]])
    runs: dict[str, Callable[[], Any]] = {}
    for r, make in renderers().items():
        for size in SIZES:
            for name, text in texts[size].items():
                runs[f"{r}|{name}|{size}"] = make(text)
    cleanup = widget_cleanup()
    _, cpu = sample_wall_cpu(runs, samples, 1, cleanup)
    med = {k: sorted(v)[len(v) // 2] for k, v in cpu.items()}
    top = SIZES[-1]
    lines: list[str] = []
    figures: list[Figure] = []
    for r in renderers():
        worst: tuple[float, str] = (0.0, "")
        lines += [
            f"\n{r}, process CPU, median of {samples}; ratio: within-sample, to the harmless "
            f"input at {top // KIB} KiB\n",
            "| input | "
            + " | ".join(f"{s // KIB} KiB" for s in SIZES)
            + " | ratio to harmless | growth per doubling |",
            "|---|" + "---|" * len(SIZES) + "---|---|",
        ]
        for name in names:
            per_size = [(s, med[f"{r}|{name}|{s}"]) for s in SIZES]
            g = growth(per_size)
            ratio = within_sample_ratio(cpu, f"{r}|{name}|{top}", f"{r}|{HARMLESS}|{top}")
            cells = " | ".join(ms(t) for _, t in per_size)
            lines.append(f"| {name} | {cells} | {ratio:.2f}x | {g:.2f}x |")
            if name == HARMLESS:
                continue
            if (ratio > RATIO_GOAL or g > GROWTH_GOAL) and ratio > worst[0]:
                worst = (ratio, name)
            figures.append(
                Figure(
                    f"{r}, 1.5 MiB {name} / harmless",
                    f"{ratio:.2f}x ({ms(per_size[-1][1])} vs "
                    f"{ms(med[f'{r}|{HARMLESS}|{top}'])}; growth per doubling {g:.2f}x)",
                    f"<= {RATIO_GOAL:.0f}x, growth <= {GROWTH_GOAL}x",
                    ratio <= RATIO_GOAL and g <= GROWTH_GOAL,
                )
            )
        if worst[1]:
            for name in (worst[1], HARMLESS):
                tree = profile(runs[f"{r}|{name}|{top}"], PROFILE_CALLS, cleanup)
                lines += [
                    f"\nprofile: {r} on {name}, {top // KIB} KiB, {PROFILE_CALLS} calls "
                    "(pyinstrument; share of the total; library frames folded)\n",
                    "```",
                    tree,
                    "```",
                ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
