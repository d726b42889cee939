"""A wire's bench: rig_nb against the wire's raw reference client, request by request.

Each pair sends one request two ways, by the raw client and by rig_nb, in batches timed
interleaved with every other contender's (common.sample_wall_cpu), each reply checked.
The table gives each contender's median per run and its ratios to its pair's raw side,
medians of within-sample ratios. `sdk_wire` is the experiment the Messages and Responses
scripts share; a script keeps its contenders, labels, headings and goals.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from common import API_KEY, MODEL, Figure, bench_servers, ms, sample_wall_cpu, within_sample_ratio
from server import reply_text, stream_prompt

if TYPE_CHECKING:
    from rig_nb import Client

DELTAS = 1000
MAX_TOKENS = 4096
ROUND_PROMPT = "What is two plus two? Answer with the number alone."


class Side(Protocol):
    """One side of a pair: a prompt sent streamed or not, the reply's text returned."""

    def stream(self, prompt: str) -> str: ...

    def round(self, prompt: str) -> str: ...

    def close(self) -> None: ...


class Rig:
    """rig_nb's side: one RunRequest of the prompt on the given Client."""

    def __init__(self, client: Client, model: str, max_tokens: int) -> None:
        from rig_nb import RunRequest

        self.client = client
        self.request = RunRequest
        self.model, self.max_tokens = model, max_tokens

    def stream(self, prompt: str) -> str:
        request = self.request(self.model, self.max_tokens, prompt=prompt, stream=True)
        return self.client.run(request).text

    def round(self, prompt: str) -> str:
        request = self.request(self.model, self.max_tokens, prompt=prompt)
        return self.client.run(request).text

    def close(self) -> None:
        self.client.close()


@dataclass
class Pair:
    """One request, sent `batch` times a sample by the raw client and by rig_nb."""

    name: str  # the contenders are f"raw {name}" and f"rig {name}"
    raw: Callable[[], str]
    rig: Callable[[], str]
    want: str
    batch: int


@dataclass
class PairTimes:
    """Wall and client CPU seconds of each contender's batch in each sample."""

    batches: dict[str, int]
    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]

    @property
    def samples(self) -> int:
        return len(next(iter(self.wall.values())))

    def table(self, heading: str, labels: dict[str, str]) -> str:
        """`heading`, then a row a contender (`labels` by key): per run and ratios to raw."""
        lines = [
            heading,
            "| contender | wall per run | client CPU per run | wall ratio | CPU ratio |",
            "|---|---|---|---|---|",
        ]
        for key, batch in self.batches.items():
            base = key.replace("rig", "raw")
            w = sorted(self.wall[key])[len(self.wall[key]) // 2] / batch
            c = sorted(self.cpu[key])[len(self.cpu[key]) // 2] / batch
            lines.append(
                f"| {labels[key]} | {ms(w)} | {ms(c)} "
                f"| {within_sample_ratio(self.wall, key, base):.3f}x "
                f"| {within_sample_ratio(self.cpu, key, base):.3f}x |"
            )
        return "\n".join(lines)

    def figures(self, titles: dict[str, str], goals: dict[str, float | None]) -> list[Figure]:
        """A figure a pair (`titles` by pair name, in order): rig_nb / raw wall.

        Met at or under the pair's goal; a goal of None makes the figure informative.
        """
        figures = []
        for name, title in titles.items():
            wall = within_sample_ratio(self.wall, f"rig {name}", f"raw {name}")
            cpu = within_sample_ratio(self.cpu, f"rig {name}", f"raw {name}")
            value = f"{wall:.3f}x (client CPU {cpu:.2f}x)"
            goal = goals[name]
            if goal is None:
                figures.append(Figure(title, value, "informative", None))
            else:
                figures.append(Figure(title, value, f"<= {goal:.2f}x", wall <= goal))
        return figures


def _batch(fn: Callable[[], str], n: int, want: str, who: str) -> Callable[[], None]:
    def batch() -> None:
        for _ in range(n):
            got = fn()
            if got != want:
                raise AssertionError(
                    f"{who}: reply {got[:60]!r} of {len(got)} chars, "
                    f"expected {want[:60]!r} of {len(want)}"
                )

    return batch


def time_pairs(pairs: list[Pair], samples: int) -> PairTimes:
    """Every pair's raw and rig_nb batches over `samples`, interleaved, after one warmup."""
    runs: dict[str, Callable[[], object]] = {}
    batches: dict[str, int] = {}
    for p in pairs:
        for side, fn in (("raw", p.raw), ("rig", p.rig)):
            key = f"{side} {p.name}"
            runs[key] = _batch(fn, p.batch, p.want, key)
            batches[key] = p.batch
    wall, cpu = sample_wall_cpu(runs, samples, 1)
    return PairTimes(batches, wall, cpu)


def sdk_wire(raw: Callable[[str], Side], api: str, samples: int, quick: bool) -> PairTimes:
    """The raw SDK (built on a base URL) and rig_nb over `api` on one benchmarks/server.py.

    rig_nb's Client may read 4 MiB a response. Pair "stream": a streamed run whose reply
    is DELTAS one-character deltas, each event its own HTTP chunk, in batches of 5 (3
    quick). Pair "round": one round, not streamed, answered "4", in batches of 30 (10
    quick). At least 5 samples unless quick.
    """
    from rig_nb import Client

    n = 3 if quick else 5
    rounds = 10 if quick else 30
    prompt, want = stream_prompt(DELTAS, 1, "event"), reply_text(DELTAS)
    with bench_servers() as (url,), closing(raw(url)) as r:
        client = Client(url, API_KEY, api=api, max_response_bytes=4 << 20)
        with closing(Rig(client, MODEL, MAX_TOKENS)) as g:
            pairs = [
                Pair("stream", lambda: r.stream(prompt), lambda: g.stream(prompt), want, n),
                Pair(
                    "round",
                    lambda: r.round(ROUND_PROMPT),
                    lambda: g.round(ROUND_PROMPT),
                    "4",
                    rounds,
                ),
            ]
            return time_pairs(pairs, samples if quick else max(samples, 5))
