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
from typing import Any

from common import API_KEY, MODEL, Figure, run_alone
from contenders import TIMEOUT
from wire_bench import DELTAS, MAX_TOKENS, sdk_wire

GOALS: dict[str, float | None] = {"stream": 1.15, "round": 1.10}
TITLES = {
    "stream": f"Messages, streamed {DELTAS:,}-delta run: rig_nb / raw anthropic SDK, wall",
    "round": "Messages, one round: rig_nb / raw anthropic SDK messages.create, wall",
}
LABELS = {
    "raw stream": "raw anthropic SDK messages.stream, every event, get_final_message()",
    "rig stream": 'rig_nb Client(api="messages").run(RunRequest(stream=True))',
    "raw round": "raw anthropic SDK messages.create, text read",
    "rig round": 'rig_nb Client(api="messages").run(RunRequest(...)), one round',
}


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

    def stream(self, prompt: str) -> str:
        with self.client.messages.stream(
            model=MODEL, max_tokens=MAX_TOKENS, messages=self._messages(prompt)
        ) as events:
            for _ in events:
                pass
            message = events.get_final_message()
        return _text(message)

    def round(self, prompt: str) -> str:
        message = self.client.messages.create(
            model=MODEL, max_tokens=MAX_TOKENS, messages=self._messages(prompt)
        )
        return _text(message)

    def close(self) -> None:
        self.client.close()


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    times = sdk_wire(Raw, "messages", samples, quick)
    heading = (
        f"\nMessages wire, same server, interleaved; streamed: {DELTAS:,} one-character "
        f"text deltas, each event its own HTTP chunk, batches of {times.batches['raw stream']}; "
        f"one round: batches of {times.batches['raw round']}; {times.samples} samples; "
        "ratios are medians of within-sample ratios\n"
    )
    return times.table(heading, LABELS), times.figures(TITLES, GOALS)


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
