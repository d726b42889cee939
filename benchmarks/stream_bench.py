"""Streaming: rig_nb vs the raw openai SDK on one stream, a live TraceView, parsing linearity.

    .venv/bin/python benchmarks/stream_bench.py [--samples N] [--quick]

Against benchmarks/server.py in a child process, zero delay:

- One streamed one-round run whose reply is 1,000 content deltas of one
  character (plus the role, finish and usage events), each event flushed as
  its own HTTP chunk, as a server streaming token by token does. rig_nb:
  `Client.run(RunRequest(..., stream=True))`; the raw SDK:
  `chat.completions.create(..., stream=True, stream_options=...)` on the same
  request, every chunk consumed and the content joined. Goal <= 1.15x wall;
  client CPU per delta is reported for both.
- The same rig_nb run with a live `TraceView` on its trace (ipywidgets, no
  kernel: every widget update is still serialized and handed to a dummy comm).
  The view is built inside the timed run, closed outside it. Goal <= 1.5x the
  run without it. Beside it, a paced 10,000-delta reply (about 1 s): how
  often the trace's listeners ran and how many widget messages the view sent.
- Parsing linearity: a reply of N KiB sent as 1-byte deltas and as one delta,
  N = 256, 512, 1024 (64, 128, 256 with --quick), the server sending the
  prebuilt event stream in 64 KiB chunks, `max_response_bytes` raised to fit
  (about 180 bytes of SSE per 1-byte delta). Cost: client process CPU per
  byte of reply; goal: it grows by at most 1.5x per doubling of N.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from common import (
    API_KEY,
    MODEL,
    Figure,
    bench_servers,
    growth,
    ms,
    run_alone,
    sample_wall_cpu,
    widget_cleanup,
    within_sample_ratio,
)
from contenders import BEFORE_SERVERS, before_package, http_client
from server import reply_text, stream_prompt

DELTAS = 1000
PACED_DELTAS = 10_000
PACED_INTERVAL_US = 100
MAX_TOKENS = 4096
KIB = 1 << 10
SIZES = (256 * KIB, 512 * KIB, 1024 * KIB)
QUICK_SIZES = (64 * KIB, 128 * KIB, 256 * KIB)
SSE_BYTES_PER_DELTA = 256  # the cap for 1-byte deltas: generous, never the limit here
GOALS = {"raw": 1.15, "view": 1.5, "growth": 1.5, "before": 1.02}


def _check(text: str, want: str, who: str) -> None:
    if text != want:
        raise AssertionError(f"{who}: reply of {len(text)} chars, expected {len(want)}")


class RawStream:
    """The raw SDK iterating the stream: every chunk parsed into its pydantic model."""

    label = "raw openai SDK, stream=True, every chunk consumed"

    def __init__(self, url: str, prompt: str, want: str) -> None:
        import openai

        self.client = openai.OpenAI(api_key=API_KEY, base_url=url, http_client=http_client())
        self.prompt, self.want = prompt, want

    def run(self) -> None:
        parts: list[str] = []
        stream = self.client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": self.prompt}],
            max_tokens=MAX_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
        )
        with stream:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    parts.append(chunk.choices[0].delta.content)
        _check("".join(parts), self.want, self.label)

    def close(self) -> None:
        self.client.close()


class RigStream:
    """rig_nb's loop, streamed; optionally with a live TraceView on the trace."""

    def __init__(
        self, url: str, prompt: str, want: str, *, cap: int = 1 << 20, package: str = "rig_nb"
    ) -> None:
        rig = importlib.import_module(package)
        self.client = rig.Client(url, API_KEY, max_response_bytes=cap)
        self.request = rig.RunRequest(
            model=MODEL, max_tokens=MAX_TOKENS, prompt=prompt, stream=True
        )
        self.want = want

    def run(self) -> Any:
        result = self.client.run(self.request)
        _check(result.text, self.want, "rig_nb")
        return result.trace

    def run_viewed(self) -> Any:
        from rig_nb import Trace
        from rig_nb.widgets import TraceView

        trace = Trace()
        view = TraceView(trace)
        result = self.client.run(self.request, trace=trace)
        _check(result.text, self.want, "rig_nb + TraceView")
        return view

    def close(self) -> None:
        self.client.close()


def _batch(fn: Callable[[], Any], n: int) -> Callable[[], list[Any]]:
    return lambda: [fn() for _ in range(n)]


@contextmanager
def counted_widget_messages() -> Iterator[dict[str, int]]:
    """Counts the update messages widgets hand to their comm, and their JSON size."""
    import json

    from ipywidgets import Widget
    from ipywidgets.widgets import widget as widget_module

    counts = {"messages": 0, "bytes": 0, "widgets": 0}
    original = Widget._send
    before = len(widget_module._instances)

    def send(self: Any, msg: Any, buffers: Any = None) -> None:
        counts["messages"] += 1
        counts["bytes"] += len(json.dumps(msg, default=str))
        original(self, msg, buffers)

    Widget._send = send
    try:
        yield counts
    finally:
        Widget._send = original
        counts["widgets"] = len(widget_module._instances) - before  # built and not yet closed


def _paced(url: str) -> tuple[str, Figure]:
    """A 10,000-delta reply paced over about a second, watched by a TraceView."""
    from rig_nb import Trace
    from rig_nb.widgets import TraceView

    prompt = stream_prompt(PACED_DELTAS, 1, "event", PACED_INTERVAL_US)
    # About 170 bytes of SSE per delta: 10,000 deltas pass the default 1 MiB cap.
    rig = RigStream(url, prompt, reply_text(PACED_DELTAS), cap=SSE_BYTES_PER_DELTA * PACED_DELTAS)
    trace = Trace()
    calls = [0]
    trace.add_listener(lambda _t: calls.__setitem__(0, calls[0] + 1))
    cleanup = widget_cleanup()
    with counted_widget_messages() as sent:
        TraceView(trace)
        t0 = time.perf_counter()
        rig.client.run(rig.request, trace=trace)
        wall = time.perf_counter() - t0
    cleanup(None)
    it = trace.iterations[0]
    rig.close()
    streaming = max(wall - it.ttft_s, 0.0)
    # One notice as the iteration starts, at most 10 a second while deltas arrive, one at the end.
    allowed = 2 + int(streaming * 10) + 1
    text = (
        f"\nlive TraceView during a paced {PACED_DELTAS:,}-delta reply "
        f"({PACED_INTERVAL_US} us between events): {wall:.2f} s, {it.chunks:,} chunks; "
        f"the trace's listeners ran {calls[0]} times; the view created {sent['widgets']} "
        f"widgets and sent {sent['messages']} update messages ({sent['bytes'] / 1024:.1f} KiB)"
    )
    figure = Figure(
        f"listener calls during a paced {PACED_DELTAS:,}-delta streamed reply",
        f"{calls[0]} in {wall:.2f} s; TraceView sent {sent['messages']} widget messages "
        f"({sent['bytes'] / 1024:.0f} KiB)",
        "<= 10/s while streaming + start and end",
        calls[0] <= allowed,
    )
    return text, figure


def _vs_raw(url: str, samples: int, quick: bool) -> tuple[str, list[Figure]]:
    prompt, want = stream_prompt(DELTAS, 1, "event"), reply_text(DELTAS)
    raw, rig = RawStream(url, prompt, want), RigStream(url, prompt, want)
    before = RigStream(url, prompt, want, package=before_package(BEFORE_SERVERS))
    n = 3 if quick else 5
    runs = {
        "raw": _batch(raw.run, n),
        "rig": _batch(rig.run, n),
        "rig + TraceView": _batch(rig.run_viewed, n),
        "rig before": _batch(before.run, n),
    }
    cleanup = widget_cleanup()
    with counted_widget_messages() as sent:
        rig.run_viewed()
    cleanup(None)
    wall, cpu = sample_wall_cpu(runs, max(samples, 5) if not quick else samples, 1, cleanup)
    raw.close()
    rig.close()
    before.close()
    ratio = within_sample_ratio(wall, "rig", "raw")
    since = within_sample_ratio(cpu, "rig", "rig before")
    cpu_ratio = within_sample_ratio(cpu, "rig", "raw")
    view_ratio = within_sample_ratio(wall, "rig + TraceView", "rig")
    view_cpu = within_sample_ratio(cpu, "rig + TraceView", "rig")
    events = DELTAS + 3
    lines = [
        f"\nstreamed one-round run, {DELTAS:,} one-character content deltas ({events:,} events), "
        f"each event its own HTTP chunk; batches of {n} runs, {len(wall['raw'])} samples; ratios "
        "are medians of within-sample ratios\n",
        "| contender | wall per run | client CPU per run | client CPU per delta | wall ratio "
        "| CPU ratio |",
        "|---|---|---|---|---|---|",
    ]
    base = {"raw": "raw", "rig": "raw", "rig + TraceView": "rig", "rig before": "raw"}
    labels = {
        "raw": RawStream.label,
        "rig": "rig_nb Client.run(RunRequest(stream=True))",
        "rig + TraceView": "rig_nb, live TraceView on the trace (ratio to rig_nb alone)",
        "rig before": f"rig_nb at {BEFORE_SERVERS} (round 4, before the server profiles)",
    }
    for key in runs:
        w = sorted(wall[key])[len(wall[key]) // 2] / n
        c = sorted(cpu[key])[len(cpu[key]) // 2] / n
        lines.append(
            f"| {labels[key]} | {ms(w)} | {ms(c)} | {c / DELTAS * 1e6:.1f} us "
            f"| {within_sample_ratio(wall, key, base[key]):.3f}x "
            f"| {within_sample_ratio(cpu, key, base[key]):.3f}x |"
        )
    lines.append(
        f"\none viewed run: the view created {sent['widgets']} widgets and sent "
        f"{sent['messages']} update messages ({sent['bytes'] / 1024:.1f} KiB)"
    )
    cpu_raw = sorted(cpu["raw"])[len(cpu["raw"]) // 2] / n / DELTAS
    cpu_rig = sorted(cpu["rig"])[len(cpu["rig"]) // 2] / n / DELTAS
    figures = [
        Figure(
            f"streamed {DELTAS:,}-delta run: rig_nb / raw SDK, wall",
            f"{ratio:.3f}x (client CPU {cpu_ratio:.2f}x; per delta {cpu_rig * 1e6:.1f} us "
            f"vs {cpu_raw * 1e6:.1f} us)",
            f"<= {GOALS['raw']:.2f}x",
            ratio <= GOALS["raw"],
        ),
        Figure(
            f"streamed {DELTAS:,}-delta run: with live TraceView / without, wall",
            f"{view_ratio:.3f}x (client CPU {view_cpu:.2f}x)",
            f"<= {GOALS['view']:.1f}x",
            view_ratio <= GOALS["view"],
        ),
        Figure(
            f"streamed {DELTAS:,}-delta run: rig_nb today / at {BEFORE_SERVERS}, client CPU",
            f"{since:.3f}x",
            f"<= {GOALS['before']:.2f}x (server kinds as plug-ins cost nothing measurable)",
            since <= GOALS["before"],
        ),
    ]
    return "\n".join(lines), figures


def _linearity(url: str, samples: int, quick: bool) -> tuple[str, list[Figure]]:
    sizes = QUICK_SIZES if quick else SIZES
    cap = SSE_BYTES_PER_DELTA * sizes[-1] + (1 << 20)
    ways = {"1-byte deltas": 1, "one delta": 0}
    clients: dict[tuple[str, int], RigStream] = {}
    for way, piece in ways.items():
        for size in sizes:
            prompt = stream_prompt(size, piece or size, "block")
            clients[(way, size)] = RigStream(url, prompt, reply_text(size), cap=cap)
    runs = {f"{way} {size // KIB} KiB": c.run for (way, size), c in clients.items()}
    wall, cpu = sample_wall_cpu(runs, samples)
    for c in clients.values():
        c.close()
    med = {k: sorted(v)[len(v) // 2] for k, v in cpu.items()}
    medw = {k: sorted(v)[len(v) // 2] for k, v in wall.items()}
    lines = [
        f"\nstreamed reply of N KiB of prose, as 1-byte deltas vs as one delta; the stream sent "
        f"in 64 KiB chunks; `max_response_bytes` {cap / (1 << 20):.0f} MiB; client process CPU, "
        f"median of {samples}\n",
        "| N | 1-byte deltas: wall | CPU | CPU per byte | one delta: wall | CPU | CPU per byte "
        "| 1-byte / one delta (CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        a, b = f"1-byte deltas {size // KIB} KiB", f"one delta {size // KIB} KiB"
        lines.append(
            f"| {size // KIB} KiB | {ms(medw[a])} | {ms(med[a])} | {med[a] / size * 1e6:.2f} us "
            f"| {ms(medw[b])} | {ms(med[b])} | {med[b] / size * 1e9:.1f} ns "
            f"| {med[a] / med[b]:.0f}x |"
        )
    figures: list[Figure] = []
    for way in ways:
        per_size = [(size, med[f"{way} {size // KIB} KiB"]) for size in sizes]
        g = growth(per_size)
        steps = " -> ".join(f"{t / s * 1e9:.0f}" for s, t in per_size)
        figures.append(
            Figure(
                f"streamed parsing, {way}, {sizes[0] // KIB} KiB -> {sizes[-1] // KIB} KiB: "
                "growth of CPU per byte per doubling",
                f"{g:.2f}x (ns per byte: {steps})",
                f"<= {GOALS['growth']}x",
                g <= GOALS["growth"],
            )
        )
    return "\n".join(lines), figures


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    texts: list[str] = []
    figures: list[Figure] = []
    with bench_servers() as (url,):
        text, figs = _vs_raw(url, samples, quick)
        texts.append(text)
        figures += figs
        paced_text, paced = _paced(url)
        texts.append(paced_text)
        figures.append(paced)
        text, figs = _linearity(url, min(samples, 2 if quick else 3), quick)
        texts.append(text)
        figures += figs
    return "\n".join(texts), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
