"""Shared plumbing for the benchmarks: the server process, timing, result rows."""

from __future__ import annotations

import argparse
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
def bench_servers(count: int = 1, delay: float = 0.0, kind: str = "bench") -> Iterator[list[str]]:
    """Base URLs of `count` benchmark servers (see server.py for `kind`) in a child process.

    The child serves until its stdin closes; it is killed if it has not exited 10 s after.
    """
    args = ["--kind", kind, "--delay", str(delay), "--count", str(count)]
    argv = [sys.executable, str(HERE / "server.py"), *args]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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
    contenders: dict[str, Callable[[], object]],
    samples: int,
    warmup: int = 1,
    cleanup: Callable[[object], None] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and process CPU time of each callable in each sample, interleaved.

    Every sample runs every contender once, in an order rotated per sample, so
    a ratio taken within one sample compares runs made under the same load.
    CPU time is this process only (the benchmark server runs in another): the
    client's own cost, which moves far less than wall time on a busy machine.
    `cleanup`, when given, gets what each call returned, outside the timing
    (closing a widget, say).
    """
    names = list(contenders)
    for _ in range(warmup):
        for name in names:
            out = contenders[name]()
            if cleanup is not None:
                cleanup(out)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for i in range(samples):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            c0 = time.process_time()
            t0 = time.perf_counter()
            out = contenders[name]()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            if cleanup is not None:
                cleanup(out)
    return wall, cpu


def widget_cleanup() -> Callable[[object], None]:
    """A `cleanup` that closes every widget created since this call.

    Closing a box closes neither its children nor its layout and style (each a
    widget in ipywidgets' registry), so a closed LeakLab would otherwise leave
    a score of live widgets behind, and later sections would run amid them.
    """
    from ipywidgets.widgets import widget as widget_module

    registry = widget_module._instances
    baseline = set(registry)

    def cleanup(_out: object) -> None:
        for key in [k for k in registry if k not in baseline]:
            widget = registry.get(key)
            if widget is not None:
                widget.close()

    return cleanup


def within_sample_ratio(times: dict[str, list[float]], name: str, base: str) -> float:
    """Median over samples of times[name] / times[base] taken in the same sample."""
    return statistics.median(t / b for t, b in zip(times[name], times[base], strict=True))


def growth(per_size: list[tuple[int, float]]) -> float:
    """The largest growth of the cost per unit from one size to the next (1.0x: linear)."""
    steps = zip(per_size, per_size[1:], strict=False)
    return max((t2 / n2) / (t1 / n1) for (n1, t1), (n2, t2) in steps)


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} (1, 5, 15 min)"


def summary(figures: list[Figure]) -> str:
    """The markdown table of figures, each with its goal and whether it was met."""
    marks = {True: "met", False: "**missed**", None: "n/a"}
    lines = ["| figure | value | goal | |", "|---|---|---|---|"]
    lines += [f"| {f.name} | {f.value} | {f.goal} | {marks[f.met]} |" for f in figures]
    return "\n".join(lines)


def run_alone(
    measure: Callable[[int, bool], tuple[str, list[Figure]]], doc: str, samples: int = 7
) -> int:
    """`python benchmarks/<job>.py [--samples N] [--quick]`: the job's tables and figures.

    Exits 1 when a goal is missed, so a job can gate a script.
    """
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=0, help=f"default {samples}, 3 quick")
    parser.add_argument("--quick", action="store_true", help="fewer runs: a smoke test")
    opts = parser.parse_args()
    print(load_average(), file=sys.stderr)
    text, figures = measure(opts.samples or (3 if opts.quick else samples), opts.quick)
    print(text)
    print("\n" + summary(figures))
    print(load_average(), file=sys.stderr)
    return 1 if any(f.met is False for f in figures) else 0


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def profile(
    fn: Callable[[], object],
    reps: int,
    cleanup: Callable[[object], None] | None = None,
    threshold: float = 0.02,
) -> str:
    """pyinstrument's call tree of `reps` calls of fn, as shares of the total (frames >= 2%).

    Library frames are folded ("[n frames hidden]"); `cleanup` runs outside the profile.
    """
    try:
        from pyinstrument import Profiler
        from pyinstrument.renderers import ConsoleRenderer
    except ImportError:
        return "(no profile: pyinstrument is not installed; pip install -e '.[bench]')"
    profiler = Profiler(interval=0.0005)
    for _ in range(reps):
        profiler.start()
        out = fn()
        profiler.stop()
        if cleanup is not None:
            cleanup(out)
    renderer = ConsoleRenderer(
        unicode=False,
        color=False,
        show_all=False,
        time="percent_of_total",
        processor_options={"filter_threshold": threshold},
    )
    text = profiler.output(renderer)
    # Keep the tree: drop pyinstrument's banner and the frames above the profiled call.
    lines = [ln for ln in text.splitlines() if "%" in ln or "frames hidden" in ln]
    if lines and ("<module>" in lines[0] or "common.py" in lines[0]):
        lines = lines[1:]
    return "\n".join(lines)
