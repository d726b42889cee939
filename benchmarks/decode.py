"""decode_json_object on 1 MiB of hostile input vs json.loads on 1 MiB of clean JSON.

Run alone:

    .venv/bin/python benchmarks/decode.py [--samples N]
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable

from common import Figure, median_times, ms, run_alone

MIB = 1 << 20
GOAL = 50.0


def _fill(unit: str, size: int) -> str:
    return unit * (size // len(unit))


def hostile_inputs(size: int = MIB) -> dict[str, str]:
    prose_unit = "The model kept reasoning about the question at length, step by step. "
    tail = '{"answer": 42, "why": "at the end"}'
    return {
        '`{"a":` repeated': _fill('{"a":', size),
        '`{"a":1} ` repeated': _fill('{"a":1} ', size),
        "prose, one object at the end": _fill(prose_unit, size - len(tail)) + tail,
        "`<think>` repeated (strip first)": _fill("<think>", size),
    }


def clean_json(size: int = MIB) -> str:
    item = {"id": 0, "name": "widget", "tags": ["a", "b"], "price": 1.25, "ok": True}
    n = size // len(json.dumps(item))
    text = json.dumps({"items": [dict(item, id=i) for i in range(n)]})
    return text


def _decode(s: str) -> Callable[[], None]:
    from rig_nb import decode_json_object
    from rig_nb.errors import RigError

    def run() -> None:
        try:
            decode_json_object(s)
        except RigError:
            pass  # NotJSONError/InvalidJSONError are the documented outcomes

    return run


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    clean = clean_json()
    contenders: dict[str, Callable[[], None]] = {
        "json.loads, 1 MiB clean": lambda: json.loads(clean)
    }
    inputs = hostile_inputs()
    quarter = hostile_inputs(MIB // 4)
    for name, s in inputs.items():
        contenders[name] = _decode(s)
        contenders[name + " (256 KiB)"] = _decode(quarter[name])
    times = median_times(contenders, samples)
    base = times["json.loads, 1 MiB clean"]
    lines = [
        f"\ndecode_json_object, 1 MiB inputs, median of {samples}\n",
        "| input | median | ratio to json.loads clean | growth 256 KiB -> 1 MiB |",
        "|---|---|---|---|",
        f"| json.loads, 1 MiB clean | {ms(base)} | 1.00x | - |",
    ]
    figures: list[Figure] = []
    for name in inputs:
        small = times[name + " (256 KiB)"]
        growth = times[name] / small if small else math.inf
        ratio = times[name] / base
        lines.append(f"| {name} | {ms(times[name])} | {ratio:.1f}x | {growth:.1f}x (4x = linear) |")
        figures.append(
            Figure(
                f"decode_json_object 1 MiB {name} / json.loads 1 MiB clean",
                f"{ratio:.1f}x (growth x4 size: {growth:.1f}x)",
                f"<= {GOAL:.0f}x, linear",
                ratio <= GOAL and growth < 8,
            )
        )
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
