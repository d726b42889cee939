"""Shared plumbing for the benchmarks: the server process, timing, result rows."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
API_KEY = "sk-bench"
MODEL = "bench"
PROMPT = "What is 2+2?"
MAX_TOKENS = 64

# Nothing ambient may reach a client under test (keys, base URLs, proxies, custom headers).
for _name in list(os.environ):
    if _name.startswith("OPENAI_") or _name.lower().endswith("_proxy"):
        del os.environ[_name]


@dataclass
class Figure:
    """One line of the summary table."""

    name: str
    value: str
    goal: str
    met: bool | None  # None: not measurable here (says why in value)


@contextmanager
def bench_servers(count: int = 1, delay: float = 0.0) -> Iterator[list[str]]:
    """Base URLs of `count` benchmark servers running in a child process."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "server.py"), "--delay", str(delay), "--count", str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        urls = [proc.stdout.readline().strip() for _ in range(count)]
        if not all(u.startswith("http://127.0.0.1:") for u in urls):
            raise RuntimeError(f"benchmark server did not start: {urls!r}")
        yield urls
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def median_times(
    contenders: dict[str, Callable[[], object]], samples: int, warmup: int = 1
) -> dict[str, float]:
    """Median wall time of each callable over `samples`, interleaved so drift hits all alike."""
    return median_wall_cpu(contenders, samples, warmup)[0]


def median_wall_cpu(
    contenders: dict[str, Callable[[], object]], samples: int, warmup: int = 1
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and process CPU time of each callable over `samples`, interleaved."""
    wall, cpu = sample_wall_cpu(contenders, samples, warmup)
    return (
        {name: statistics.median(ts) for name, ts in wall.items()},
        {name: statistics.median(ts) for name, ts in cpu.items()},
    )


def sample_wall_cpu(
    contenders: dict[str, Callable[[], object]], samples: int, warmup: int = 1
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and process CPU time of each callable in each sample, interleaved.

    Every sample runs every contender once, in an order rotated per sample, so
    a ratio taken within one sample compares runs made under the same load.
    CPU time is this process only (the benchmark server runs in another): the
    client's own cost, which moves far less than wall time on a busy machine.
    """
    names = list(contenders)
    for _ in range(warmup):
        for name in names:
            contenders[name]()
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for i in range(samples):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            c0 = time.process_time()
            t0 = time.perf_counter()
            contenders[name]()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    return wall, cpu


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 10 else f"{seconds:.3g} s"
