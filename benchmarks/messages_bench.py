"""The Messages wire: rig_nb over /messages vs the raw anthropic SDK on the same server.

    .venv/bin/python benchmarks/messages_bench.py [--samples N] [--quick]

Against benchmarks/server.py in a child process, zero delay, both on the same
server in the same run, interleaved:

- One streamed one-round run whose reply is 1,000 text deltas of one character
  (plus message_start, the block's start and stop, message_delta and
  message_stop), each event its own HTTP chunk. rig_nb:
  `Client(api="messages").run(RunRequest(..., stream=True))`; the raw SDK: iterating
  `messages.stream(...)` (its accumulator builds the message from every event) and
  `get_final_message()`. Goal <= 1.15x wall.
- One round, not streamed: rig_nb's run of a one-word answer vs the raw SDK's
  `messages.create` of the same request (its text block read). Goal <= 1.10x.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from common import API_KEY, MODEL, Figure, bench_servers, ms, run_alone, sample_wall_cpu
from common import within_sample_ratio as ratio_of
from contenders import TIMEOUT
from server import reply_text, stream_prompt

DELTAS = 1000
MAX_TOKENS = 4096
GOALS = {"stream": 1.15, "round": 1.10}
ROUND_PROMPT = "What is two plus two? Answer with the number alone."


def _check(text: str, want: str, who: str) -> None:
    if text != want:
        raise AssertionError(f"{who}: reply of {len(text)} chars, expected {len(want)}")


def _text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


class Raw:
    """The raw anthropic SDK's Messages resource, on the same server."""

    def __init__(self, url: str) -> None:
        import anthropic

        # This SDK brings its own HTTP stack (it refuses an httpx.Client): its default
        # client, with the timeout every contender gets.
        self.client = anthropic.Anthropic(
            api_key=API_KEY, base_url=url.removesuffix("/v1"), timeout=TIMEOUT, max_retries=0
        )

    def _messages(self, prompt: str) -> list[Any]:
        return [{"role": "user", "content": prompt}]

    def stream(self, prompt: str, want: str) -> None:
        with self.client.messages.stream(
            model=MODEL, max_tokens=MAX_TOKENS, messages=self._messages(prompt)
        ) as events:
            for _ in events:
                pass
            message = events.get_final_message()
        _check(_text(message), want, "raw SDK stream")

    def round(self) -> None:
        message = self.client.messages.create(
            model=MODEL, max_tokens=MAX_TOKENS, messages=self._messages(ROUND_PROMPT)
        )
        _check(_text(message), "4", "raw SDK round")

    def close(self) -> None:
        self.client.close()


class Rig:
    """rig_nb's loop over the Messages wire."""

    def __init__(self, url: str, *, cap: int = 1 << 20) -> None:
        from rig_nb import Client

        self.client = Client(url, API_KEY, api="messages", max_response_bytes=cap)

    def run(self, prompt: str, want: str, stream: bool) -> None:
        from rig_nb import RunRequest

        request = RunRequest(model=MODEL, max_tokens=MAX_TOKENS, prompt=prompt, stream=stream)
        result = self.client.run(request)
        _check(result.text, want, "rig_nb")

    def close(self) -> None:
        self.client.close()


def _batch(fn: Callable[[], Any], n: int) -> Callable[[], list[Any]]:
    return lambda: [fn() for _ in range(n)]


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    n = 3 if quick else 5
    rounds = 10 if quick else 30
    prompt, want = stream_prompt(DELTAS, 1, "event"), reply_text(DELTAS)
    with bench_servers() as (url,):
        raw, rig = Raw(url), Rig(url, cap=4 << 20)
        runs = {
            "raw stream": _batch(lambda: raw.stream(prompt, want), n),
            "rig stream": _batch(lambda: rig.run(prompt, want, True), n),
            "raw round": _batch(raw.round, rounds),
            "rig round": _batch(lambda: rig.run(ROUND_PROMPT, "4", False), rounds),
        }
        wall, cpu = sample_wall_cpu(runs, max(samples, 5) if not quick else samples, 1)
        raw.close()
        rig.close()
    per = {"raw stream": n, "rig stream": n, "raw round": rounds, "rig round": rounds}
    lines = [
        f"\nMessages wire, same server, interleaved; streamed: {DELTAS:,} one-character "
        f"text deltas, each event its own HTTP chunk, batches of {n}; one round: "
        f"batches of {rounds}; {len(wall['raw stream'])} samples; ratios are medians of "
        "within-sample ratios\n",
        "| contender | wall per run | client CPU per run | wall ratio | CPU ratio |",
        "|---|---|---|---|---|",
    ]
    labels = {
        "raw stream": "raw anthropic SDK messages.stream, every event, get_final_message()",
        "rig stream": 'rig_nb Client(api="messages").run(RunRequest(stream=True))',
        "raw round": "raw anthropic SDK messages.create, text read",
        "rig round": 'rig_nb Client(api="messages").run(RunRequest(...)), one round',
    }
    base = {k: k.replace("rig", "raw") for k in runs}
    for key in runs:
        w = sorted(wall[key])[len(wall[key]) // 2] / per[key]
        c = sorted(cpu[key])[len(cpu[key]) // 2] / per[key]
        lines.append(
            f"| {labels[key]} | {ms(w)} | {ms(c)} | {ratio_of(wall, key, base[key]):.3f}x "
            f"| {ratio_of(cpu, key, base[key]):.3f}x |"
        )
    stream_ratio = ratio_of(wall, "rig stream", "raw stream")
    round_ratio = ratio_of(wall, "rig round", "raw round")
    figures = [
        Figure(
            f"Messages, streamed {DELTAS:,}-delta run: rig_nb / raw anthropic SDK, wall",
            f"{stream_ratio:.3f}x (client CPU {ratio_of(cpu, 'rig stream', 'raw stream'):.2f}x)",
            f"<= {GOALS['stream']:.2f}x",
            stream_ratio <= GOALS["stream"],
        ),
        Figure(
            "Messages, one round: rig_nb / raw anthropic SDK messages.create, wall",
            f"{round_ratio:.3f}x (client CPU {ratio_of(cpu, 'rig round', 'raw round'):.2f}x)",
            f"<= {GOALS['round']:.2f}x",
            round_ratio <= GOALS["round"],
        ),
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
