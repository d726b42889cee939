"""prefix_break over a 1,000-iteration trace: under 50 ms (issue 42's goal, absolute).

A tool loop of 1,000 iterations (each adds an assistant turn and a tool result, so the last
request holds about 2,000 turns) is rendered as the chat wire sends it, beforehand; the
figure is the time to read every request as sent (`Sent.of`) and compare it with the one
before (`prefix_break`), as the recorder does once per iteration: with a steady system
prompt (no break), and with a fresh nonce in it every request (a break, with its redacted
snippets, every iteration). The least process CPU time of the samples of each. Run alone:

    .venv/bin/python benchmarks/prefix_break_bench.py [--samples N]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rig_nb.prefix import prefix_break  # noqa: E402
from rig_nb.redact import Redactor  # noqa: E402
from rig_nb.wire import WIRES, Call, Request, ToolSpec, Turn  # noqa: E402
from rig_nb.wire.sent import Sent  # noqa: E402

GOAL_S = 0.050
ITERATIONS = 1_000
SYSTEM = "You are a careful assistant. Use the tools. " * 20
ATTRIBUTION = "x-anthropic-billing-header: cc_version=2.1.154; cc_entrypoint=cli; cch="
TOOLS = tuple(
    ToolSpec(f"tool_{i}", f"tool number {i}", {"type": "object", "properties": {"q": {}}})
    for i in range(8)
)


def conversation(nonce: bool) -> list[tuple[dict[str, Any], Request]]:
    """Each request of a 1,000-iteration tool loop and its chat body, the loop's turns shared."""
    turns: list[Turn] = [Turn("user", "Look everything up, one tool at a time.")]
    sent: list[tuple[dict[str, Any], Request]] = []
    for i in range(ITERATIONS):
        system = f"{ATTRIBUTION}{i % 16:x}{i:07x};\n{SYSTEM}" if nonce else SYSTEM
        request = Request("m", (Turn("system", system), *turns), 64, tools=TOOLS)
        sent.append((WIRES["chat"].body(request), request))
        call = Call(f"call_{i}", f"tool_{i % 8}", f'{{"q": "item {i}"}}')
        turns.append(Turn("assistant", "", reasoning=f"step {i}", calls=(call,)))
        turns.append(Turn("tool", f"result {i}", call_id=call.id))
    return sent


def breaks_s(sent: list[tuple[dict[str, Any], Request]]) -> tuple[float, int]:
    """The CPU time to compute every iteration's break, and how many there were (CPU time:
    the figure is the work, whatever else the machine runs)."""
    redact = Redactor("sk-bench-key", ["http://127.0.0.1:8000/v1"])
    start = time.process_time()
    before = None
    found = 0
    for body, request in sent:
        now = Sent.of(body, request)
        found += prefix_break(before, now, redact) is not None
        before = now
    return time.process_time() - start, found


def measure(samples: int = 7, quick: bool = False) -> tuple[str, list[Any]]:
    """(markdown, figures) for benchmarks/run.py."""
    from common import Figure

    rows, figures = [], []
    for nonce in (False, True):
        sent = conversation(nonce)
        best, found = min(breaks_s(sent) for _ in range(3 if quick else samples))
        assert found == (ITERATIONS - 1 if nonce else 0)
        name = f"prefix_break, 1,000 iterations, {'a nonce each request' if nonce else 'steady'}"
        met = best < GOAL_S
        rows.append(f"| {name} | {best * 1000:.1f} ms | < {GOAL_S * 1000:.0f} ms |")
        figures.append(Figure(name, f"{best * 1000:.1f} ms", f"< {GOAL_S * 1000:.0f} ms", met))
    table = "| figure | value | goal |\n|---|---|---|\n" + "\n".join(rows)
    return table, figures


def main() -> int:
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 7
    ok = True
    for nonce in (False, True):
        sent = conversation(nonce)
        best, found = min(breaks_s(sent) for _ in range(samples))
        met = best < GOAL_S
        ok &= met
        kind = "a nonce each request" if nonce else "steady system prompt"
        print(
            f"prefix_break over {ITERATIONS} iterations ({kind}, {found} breaks): "
            f"{best * 1000:.1f} ms (goal < {GOAL_S * 1000:.0f} ms): {'ok' if met else 'MISSED'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
