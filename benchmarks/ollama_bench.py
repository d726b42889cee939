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

import sys
from contextlib import closing
from typing import Any

from common import Figure, bench_servers, run_alone
from wire_bench import Pair, Rig, time_pairs

MODEL = "well-behaved"
PROMPT = "What is two plus two?"
MAX_TOKENS = 64
GOALS: dict[str, float | None] = {"round": 1.10, "stream": None}
TITLES = {
    "round": "Ollama, one round: rig_nb / raw ollama.Client.chat, wall",
    "stream": "Ollama, one streamed round: rig_nb / raw chat(stream=True), wall",
}
LABELS = {
    "raw round": "raw ollama.Client.chat, message.content read",
    "rig round": 'rig_nb Client(api="ollama").run(RunRequest(...)), one round',
    "raw stream": "raw ollama.Client.chat(stream=True), every line consumed",
    "rig stream": 'rig_nb Client(api="ollama").run(RunRequest(stream=True))',
}


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


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    from rig_nb import Client

    rounds = 10 if quick else 30
    with bench_servers(kind="demo") as (url,), closing(Raw(url.removesuffix("/v1"))) as raw:
        with closing(Rig(Client(url, api="ollama"), MODEL, MAX_TOKENS)) as rig:
            want = raw.round()
            if not want or rig.round(PROMPT) != want:
                raise AssertionError("rig_nb and the ollama client read different answers")
            pairs = [
                Pair("round", raw.round, lambda: rig.round(PROMPT), want, rounds),
                Pair("stream", raw.stream, lambda: rig.stream(PROMPT), want, rounds),
            ]
            times = time_pairs(pairs, samples)
    heading = (
        f"\nOllama's native wire, the demo endpoint in a child process, interleaved; batches "
        f"of {rounds} one-round runs; {times.samples} samples; ratios are medians of "
        "within-sample ratios\n"
    )
    return times.table(heading, LABELS), times.figures(TITLES, GOALS)


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
