"""Ollama's native wire: rig_nb over /api/chat vs the raw `ollama` client's `chat`.

    .venv/bin/python benchmarks/ollama_bench.py [--samples N] [--quick]

Against the demo endpoint (`rig_nb.demo.DemoServer`, unpaced) in a child process, both
on the same server in the same run, interleaved:

- One round, not streamed: rig_nb's `Client(api="ollama").run` of a one-round answer
  (the `well-behaved` persona, no tools) vs `ollama.Client.chat` of the same request
  (its `message.content` read). Goal <= 1.10x wall.
- The same round streamed (informative): rig_nb's run with `stream=True` vs the raw
  client's `chat(stream=True)`, every line parsed into its pydantic model.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from common import Figure, ms, run_alone, sample_wall_cpu
from common import within_sample_ratio as ratio_of

MODEL = "well-behaved"
PROMPT = "What is two plus two?"
MAX_TOKENS = 64
GOAL = 1.10
# The demo endpoint in its own process: prints its base URL, serves until stdin closes.
_SERVE = (
    "import sys\n"
    "from rig_nb.demo import DemoServer\n"
    "with DemoServer(stream_first_delay=0, stream_interval=0) as s:\n"
    "    print(s.base_url, flush=True)\n"
    "    sys.stdin.read()\n"
)


@contextmanager
def demo_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"demo server did not start: {url!r}")
        yield url
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Raw:
    """The official `ollama` client on the same server."""

    def __init__(self, origin: str) -> None:
        import ollama

        self.client = ollama.Client(host=origin)
        self.args: dict[str, Any] = {
            "model": MODEL,
            "messages": [{"role": "user", "content": PROMPT}],
            "options": {"num_predict": MAX_TOKENS, "temperature": 0.0},
        }

    def round(self) -> str:
        return self.client.chat(**self.args, stream=False).message.content or ""

    def stream(self) -> str:
        parts = self.client.chat(**self.args, stream=True)
        return "".join(part.message.content or "" for part in parts)

    def close(self) -> None:
        self.client.close()


class Rig:
    """rig_nb's loop over Ollama's native wire."""

    def __init__(self, url: str) -> None:
        from rig_nb import Client

        self.client = Client(url, api="ollama")

    def run(self, stream: bool) -> str:
        from rig_nb import RunRequest

        request = RunRequest(MODEL, MAX_TOKENS, prompt=PROMPT, stream=stream)
        return self.client.run(request).text

    def close(self) -> None:
        self.client.close()


def _batch(fn: Callable[[], str], n: int, want: str) -> Callable[[], None]:
    def batch() -> None:
        for _ in range(n):
            got = fn()
            if got != want:
                raise AssertionError(f"reply {got[:60]!r}, expected {want[:60]!r}")

    return batch


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    rounds = 10 if quick else 30
    with demo_server() as url:
        raw, rig = Raw(url.removesuffix("/v1")), Rig(url)
        want = raw.round()
        if not want or rig.run(False) != want:
            raise AssertionError("rig_nb and the ollama client read different answers")
        runs = {
            "raw round": _batch(raw.round, rounds, want),
            "rig round": _batch(lambda: rig.run(False), rounds, want),
            "raw stream": _batch(raw.stream, rounds, want),
            "rig stream": _batch(lambda: rig.run(True), rounds, want),
        }
        wall, cpu = sample_wall_cpu(runs, samples, 1)
        raw.close()
        rig.close()
    lines = [
        f"\nOllama's native wire, the demo endpoint in a child process, interleaved; batches "
        f"of {rounds} one-round runs; {samples} samples; ratios are medians of within-sample "
        "ratios\n",
        "| contender | wall per run | client CPU per run | wall ratio | CPU ratio |",
        "|---|---|---|---|---|",
    ]
    labels = {
        "raw round": "raw ollama.Client.chat, message.content read",
        "rig round": 'rig_nb Client(api="ollama").run(RunRequest(...)), one round',
        "raw stream": "raw ollama.Client.chat(stream=True), every line consumed",
        "rig stream": 'rig_nb Client(api="ollama").run(RunRequest(stream=True))',
    }
    for key in runs:
        base = key.replace("rig", "raw")
        w = sorted(wall[key])[len(wall[key]) // 2] / rounds
        c = sorted(cpu[key])[len(cpu[key]) // 2] / rounds
        lines.append(
            f"| {labels[key]} | {ms(w)} | {ms(c)} | {ratio_of(wall, key, base):.3f}x "
            f"| {ratio_of(cpu, key, base):.3f}x |"
        )
    round_ratio = ratio_of(wall, "rig round", "raw round")
    stream_ratio = ratio_of(wall, "rig stream", "raw stream")
    figures = [
        Figure(
            "Ollama, one round: rig_nb / raw ollama.Client.chat, wall",
            f"{round_ratio:.3f}x (client CPU {ratio_of(cpu, 'rig round', 'raw round'):.2f}x)",
            f"<= {GOAL:.2f}x",
            round_ratio <= GOAL,
        ),
        Figure(
            "Ollama, one streamed round: rig_nb / raw chat(stream=True), wall",
            f"{stream_ratio:.3f}x (client CPU {ratio_of(cpu, 'rig stream', 'raw stream'):.2f}x)",
            "informative",
            None,
        ),
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
