"""The Responses wire: rig_nb over /responses vs the raw openai SDK's `responses.create`.

    .venv/bin/python benchmarks/responses_bench.py [--samples N] [--quick]

Against benchmarks/server.py in a child process, zero delay, both on the same
server in the same run, interleaved:

- One streamed one-round run whose reply is 1,000 output_text deltas of one
  character (plus created, item added and done, text done and completed), each
  event its own HTTP chunk. rig_nb: `Client(api="responses").run(RunRequest(...,
  stream=True))`; the raw SDK: `responses.create(..., stream=True)`, every event
  parsed into its pydantic model and the deltas joined. Goal <= 1.15x wall.
- One round, not streamed: rig_nb's run of a one-word answer vs the raw SDK's
  `responses.create` of the same request (its `output_text` read). Goal <= 1.10x.
"""

from __future__ import annotations

import sys

from common import API_KEY, MODEL, Figure, run_alone
from contenders import http_client
from wire_bench import DELTAS, MAX_TOKENS, sdk_wire

GOALS: dict[str, float | None] = {"stream": 1.15, "round": 1.10}
TITLES = {
    "stream": f"Responses, streamed {DELTAS:,}-delta run: rig_nb / raw SDK, wall",
    "round": "Responses, one round: rig_nb / raw SDK responses.create, wall",
}
LABELS = {
    "raw stream": "raw SDK responses.create(stream=True), every event consumed",
    "rig stream": 'rig_nb Client(api="responses").run(RunRequest(stream=True))',
    "raw round": "raw SDK responses.create, output_text read",
    "rig round": 'rig_nb Client(api="responses").run(RunRequest(...)), one round',
}


class Raw:
    """The raw SDK's Responses resource, on the same server."""

    def __init__(self, url: str) -> None:
        import openai

        self.client = openai.OpenAI(api_key=API_KEY, base_url=url, http_client=http_client())

    def stream(self, prompt: str) -> str:
        parts: list[str] = []
        events = self.client.responses.create(
            model=MODEL, input=prompt, max_output_tokens=MAX_TOKENS, stream=True
        )
        with events:
            for event in events:
                if event.type == "response.output_text.delta":
                    parts.append(event.delta)
        return "".join(parts)

    def round(self, prompt: str) -> str:
        response = self.client.responses.create(
            model=MODEL, input=prompt, max_output_tokens=MAX_TOKENS
        )
        return response.output_text

    def close(self) -> None:
        self.client.close()


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    times = sdk_wire(Raw, "responses", samples, quick)
    heading = (
        f"\nResponses wire, same server, interleaved; streamed: {DELTAS:,} one-character "
        f"output_text deltas, each event its own HTTP chunk, batches of "
        f"{times.batches['raw stream']}; one round: batches of {times.batches['raw round']}; "
        f"{times.samples} samples; ratios are medians of within-sample ratios\n"
    )
    return times.table(heading, LABELS), times.figures(TITLES, GOALS)


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=7))
