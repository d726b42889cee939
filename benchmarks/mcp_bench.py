"""MCP tools and tool schemas: a call through McpTools against the raw SDK, and sanitize's size.

    .venv/bin/python benchmarks/mcp_bench.py [--samples N] [--quick]

- A tools/call of the toy server's `echo` (tests/mcp/toy_server.py, the SDK's
  MCPServer over stdio): through `McpTools` (a sync call from this thread, handed to
  McpTools' loop thread and back) and through the raw `mcp` SDK (`stdio_client` and
  `ClientSession.call_tool`, awaited in a loop of their own), each on its own server
  process of the same program, interleaved in the same run, in batches; goal: McpTools
  within 1.2x of the raw call's wall time.
- `sanitize` of a tool schema of many string properties (type lists, patterns,
  lengths) at 0.25, 0.5 and 1 MB of JSON for llama.cpp's dialect; goal: 1 MB under 1 s
  and linear (cost per byte growing at most 1.5x from one size to the next). And a
  schema over 1 MB deep (nested `items`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, Figure, growth, ms, run_alone, sample_wall_cpu, within_sample_ratio

TOY = ROOT / "tests" / "mcp" / "toy_server.py"
GOAL_CALL = 1.2
GOAL_MB_S = 1.0
GOAL_GROWTH = 1.5


def _wide(properties: int) -> dict[str, Any]:
    props = {
        f"field_{i}": {"type": ["string", "null"], "pattern": "[a-z]+", "maxLength": 64}
        for i in range(properties)
    }
    return {"type": "object", "properties": props, "required": list(props)}


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def _calls(samples: int, batch: int) -> tuple[str, list[Figure]]:
    import anyio
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from rig_nb.mcp import McpTools

    argv = [sys.executable, str(TOY)]

    async def raw_session(ready: Any, stop: Any) -> None:
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ready.append(session)
            await stop.wait()

    with start_blocking_portal() as portal, McpTools(argv, include=["echo"]) as mcp:
        stop = portal.call(anyio.Event)
        holder: list[Any] = []
        task = portal.start_task_soon(raw_session, holder, stop)
        deadline = time.monotonic() + 60
        while not holder and time.monotonic() < deadline and not task.done():
            time.sleep(0.05)
        session = holder[0]

        async def raw_batch() -> None:
            for _ in range(batch):
                result = await session.call_tool("echo", {"text": "hi"})
                assert result.content[0].text == "echo hi"

        (echo,) = mcp.tools

        def rig_batch() -> None:
            for _ in range(batch):
                assert echo({"text": "hi"}) == "echo hi"

        contenders = {
            "raw ClientSession.call_tool (awaited in its loop)": lambda: portal.call(raw_batch),
            "McpTools tool.run (sync, from this thread)": rig_batch,
        }
        wall, cpu = sample_wall_cpu(contenders, samples, warmup=1)
        portal.call(stop.set)
        task.result(timeout=30)
    raw, rig = list(contenders)
    ratio = within_sample_ratio(wall, rig, raw)
    lines = [
        f"\nA tools/call of `echo` on the toy MCP server over stdio, batches of {batch}, "
        f"{samples} samples, interleaved; the ratio is the median of within-sample ratios\n",
        "| contender | wall per call | client CPU per call |",
        "|---|---|---|",
    ]
    for name in contenders:
        per = sorted(wall[name])[len(wall[name]) // 2] / batch
        per_cpu = sorted(cpu[name])[len(cpu[name]) // 2] / batch
        lines.append(f"| {name} | {ms(per)} | {ms(per_cpu)} |")
    figure = Figure(
        "MCP tools/call: McpTools / raw ClientSession, wall",
        f"{ratio:.3f}x",
        f"<= {GOAL_CALL}x",
        ratio <= GOAL_CALL,
    )
    return "\n".join(lines), [figure]


def _sanitize(samples: int) -> tuple[str, list[Figure]]:
    from rig_nb.schemas import sanitize

    base = len(json.dumps(_wide(1000)))
    sizes = [(250_000 * n * 1000) // base for n in (1, 2, 4)]
    rows, per_size = [], []
    for properties in sizes:
        schema = _wide(properties)
        size = len(json.dumps(schema))
        best = float("inf")
        for _ in range(samples):
            started = time.perf_counter()
            sanitize(schema, server="llama.cpp")
            best = min(best, time.perf_counter() - started)
        rows.append(f"| {properties} properties | {size / 1e6:.2f} MB | {ms(best)} |")
        per_size.append((size, best))
    deep = _deep(40_000)
    started = time.perf_counter()
    sanitize(deep, server="llama.cpp")
    deep_s = time.perf_counter() - started
    rows.append(f"| 40,000 nested items | {40_000 * 27 / 1e6:.2f} MB deep | {ms(deep_s)} |")
    big_s = per_size[-1][1]
    grown = growth(per_size)
    text = "\n".join(
        [
            f"\nsanitize(schema, server='llama.cpp'), best of {samples}\n",
            "| schema | JSON size | time |",
            "|---|---|---|",
            *rows,
        ]
    )
    return text, [
        Figure(
            "sanitize, 1 MB schema (llama.cpp)", ms(big_s), f"< {GOAL_MB_S:g} s", big_s < GOAL_MB_S
        ),
        Figure(
            "sanitize, growth of cost per byte to 1 MB",
            f"{grown:.2f}x",
            f"<= {GOAL_GROWTH}x (linear)",
            grown <= GOAL_GROWTH,
        ),
        Figure(
            "sanitize, a schema 1 MB deep", ms(deep_s), f"< {GOAL_MB_S:g} s", deep_s < GOAL_MB_S
        ),
    ]


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    samples = 3 if quick else samples
    calls_text, calls = _calls(samples, 10 if quick else 50)
    schema_text, schemas = _sanitize(samples)
    return calls_text + "\n" + schema_text, calls + schemas


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(run_alone(measure, __doc__ or "", samples=9))
