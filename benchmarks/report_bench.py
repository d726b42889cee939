"""HTML report size and write time for 8 endpoints x 5 scenarios x 3 repeats, vs save_traces.

    .venv/bin/python benchmarks/report_bench.py [--samples 7]

Two sets of 120 traces, each written as a compare DataFrame report (`save_html`) and as
JSON Lines (`save_traces`) in the same run, so the ratios compare like with like:
- demo: a real `compare()` against the embedded demo endpoint (8 personas, the default
  5 scenarios, 3 repeats); its replies are short.
- realistic: synthetic traces of the size reasoning models produce (about 8 KB of
  reasoning per reply, in the reasoning field or a think block, 1 to 4 rounds with tool
  calls, messages recorded as the loop records them), so the budget is met with margin.
Goal (issue 16): the report under 5 MB and written in under 1 s.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from common import Figure, median_times, ms  # noqa: E402

SIZE_GOAL = 5_000_000
TIME_GOAL = 1.0
ENDPOINTS, SCENARIOS, REPEATS = 8, 5, 3
WORDS = (
    "the user wants the weather so I should call the tool first then add the two "
    "temperatures wait let me check the units again Lisbon is warmer than Oslo today "
    "maybe I need both values before answering and the sum must be exact"
).split()


def demo_frame() -> Any:
    from rig_nb.compare import Endpoint, compare
    from rig_nb.demo import DemoServer

    with DemoServer() as server:
        models = server.models[:ENDPOINTS]
        endpoints = [Endpoint(m, server.base_url, m) for m in models]
        return compare(endpoints, repeats=REPEATS, progress=False)


def _prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def realistic_trace(rng: random.Random, endpoint: str, model: str) -> Any:
    from rig_nb import Iteration, ToolCallRecord, Trace

    trace = Trace(model=model, endpoint=endpoint, settings={"max_tokens": 4096, "tools": ["add"]})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a concise assistant. Use the tools."},
        {"role": "user", "content": "What's the weather in Lisbon and Oslo? Add them."},
    ]
    rounds = rng.randint(1, 4)
    for i in range(rounds):
        reasoning = _prose(rng, rng.randint(4000, 12000))
        last = i == rounds - 1
        answer = _prose(rng, rng.randint(300, 1500)) if last else ""
        in_field = rng.random() < 0.5
        raw = answer if in_field else f"<think>{reasoning}</think>\n\n{answer}"
        calls = []
        if not last:
            for k in range(rng.randint(1, 2)):
                cid = f"call_{i}_{k}_{rng.getrandbits(64):016x}"
                calls.append(
                    ToolCallRecord(
                        id=cid,
                        received_id=cid,
                        name="get_weather",
                        arguments='{"city": "Lisbon"}',
                        result=_prose(rng, 300),
                        duration_s=0.002,
                    )
                )
        trace.iterations.append(
            Iteration(
                index=i,
                messages=list(messages),
                raw_content=raw,
                reasoning_content=reasoning if in_field else "",
                reasoning_field="reasoning_content" if in_field else "",
                reasoning_shape="none" if in_field else "closed",
                text=answer,
                finish_reason="tool_calls" if calls else "stop",
                tool_calls=calls,
                usage={"prompt_tokens": 200 + 900 * i, "completion_tokens": len(raw) // 4},
                latency_s=rng.uniform(0.5, 8.0),
                ending="tool_calls" if calls else "answer",
            )
        )
        wire = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
        messages.append({"role": "assistant", "content": answer, "tool_calls": wire})
        messages += [{"role": "tool", "tool_call_id": c.id, "content": c.result} for c in calls]
    trace.outcome = "ok"
    trace.elapsed_s = sum(it.latency_s for it in trace.iterations)
    return trace


def realistic_frame() -> Any:
    import pandas as pd

    from rig_nb.compare import COLUMNS

    rng = random.Random(16)
    rows, traces = [], {}
    for e in range(ENDPOINTS):
        for s in range(SCENARIOS):
            for r in range(REPEATS):
                trace = realistic_trace(rng, f"gpu{e}.lan:8000", f"model-{e}")
                usage = trace.usage()
                traces[len(rows)] = trace
                rows.append(
                    {
                        "endpoint": f"endpoint-{e}",
                        "model": trace.model,
                        "scenario": f"scenario-{s}",
                        "repeat": r,
                        # drawn at random, so the matrix shows partial pass rates too
                        "outcome": "ok" if rng.random() < 0.8 else "reasoning_only",
                        "ending": trace.ending,
                        "error": "",
                        "reasoning_shapes": ",".join(trace.reasoning_shapes()),
                        "leaks": "",
                        "iterations": len(trace.iterations),
                        "tool_calls": len(trace.tool_calls),
                        "prompt_tokens": usage.prompt_tokens,
                        "completion_tokens": usage.completion_tokens,
                        "reasoning_tokens": None,
                        "latency_s": trace.elapsed_s,
                        "ttft_s": None,
                    }
                )
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["traces"] = traces
    return df


def _measure_one(label: str, df: Any, samples: int, out: Path) -> tuple[list[str], list[Figure]]:
    from rig_nb.report import save_html, save_traces

    traces = list(df.attrs["traces"].values())
    html, jsonl = out / f"{label}.html", out / f"{label}.jsonl"
    times = median_times(
        {
            "save_html": lambda: save_html(df, html),
            "save_traces": lambda: save_traces(traces, jsonl),
        },
        samples,
    )
    size, lines = html.stat().st_size, jsonl.stat().st_size
    t_html, t_lines = times["save_html"], times["save_traces"]
    row = (
        f"| {label} | {len(df)} | {size / 1e6:.2f} MB | {ms(t_html)} | {lines / 1e6:.2f} MB "
        f"| {ms(t_lines)} | {size / lines:.2f}x | {t_html / t_lines:.1f}x |"
    )
    figures = [
        Figure(f"report size, {label} traces", f"{size / 1e6:.2f} MB", "< 5 MB", size < SIZE_GOAL),
        Figure(f"report write, {label} traces", ms(t_html), "< 1 s", t_html < TIME_GOAL),
    ]
    return [row], figures


def measure(samples: int) -> tuple[str, list[Figure]]:
    t0 = time.perf_counter()
    demo = demo_frame()
    demo_s = time.perf_counter() - t0
    realistic = realistic_frame()
    lines = [
        f"\nHTML report of {ENDPOINTS} endpoints x {SCENARIOS} scenarios x {REPEATS} repeats, "
        f"median of {samples} (demo compare run itself: {ms(demo_s)})\n",
        "| traces | rows | save_html size | save_html time | save_traces size "
        "| save_traces time | size ratio | time ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, df in (("demo", demo), ("realistic", realistic)):
            rows, figs = _measure_one(label, df, samples, Path(tmp))
            lines += rows
            figures += figs
    return "\n".join(lines), figures


def main() -> int:
    samples = int(sys.argv[sys.argv.index("--samples") + 1]) if "--samples" in sys.argv else 7
    text, figures = measure(samples)
    print(text)
    print()
    for f in figures:
        print(f"{f.name}: {f.value} (goal {f.goal}: {'met' if f.met else 'MISSED'})")
    return 0 if all(f.met for f in figures) else 1


if __name__ == "__main__":
    raise SystemExit(main())
