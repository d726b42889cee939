"""BFCL: rig_nb's check against bfcl-eval's own ast_checker, and compare over the ten categories.

Judgments per second of client CPU on the same (case, calls) pairs: every case of the
eight categories with possible answers (2,351), each with its possible answers made into
calls and two seeded wrong calls. bfcl-eval 2026.3.23's `ast_checker` runs in
scripts/setup-bfcl's venv (tests/evals/bfcl_reference.py --bench), on calls decoded
beforehand, as its runner hands them over; rig_nb's `BfclCase.check` gets them as the
model sent them (JSON text, decoded inside the check) and, like for like, decoded. Each
sample runs both; the ratio is taken within a sample. "first judgment" is rig_nb's rate
on fresh cases, each judged once: it includes preparing the case's answers, which later
judgments reuse (bfcl-eval redoes that work on every call).

Then compare over all 3,475 cases of the ten categories against the demo endpoint's
well-behaved persona in a child process (an instant server): the wall time.

    .venv/bin/python benchmarks/bfcl_bench.py [--samples N] [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import ROOT, Figure, run_alone

sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bfcl_data import REFERENCE, bfcl_data_dir, job, reference_python  # noqa: E402

from rig_nb.evals import BFCL_CATEGORIES, BfclCase, load_bfcl  # noqa: E402

RATIO_GOAL = 2.0
RATE_GOAL = 20_000
COMPARE_GOAL_S = 60.0


def _calls(case: BfclCase, decoded: bool) -> list[list[tuple[str, Any]]]:
    """The answers as calls, then two seeded misses: a value changed, a name misspelled."""
    right = []
    for entry in case.answer:
        name, params = next(iter(entry.items()))
        right.append(
            (name.replace(".", "_"), {p: v[0] for p, v in params.items() if v and v[0] != ""})
        )
    name, args = right[0]
    changed = {k: (f"{v}x" if isinstance(v, str) else [v]) for k, v in args.items()}
    variants = [right, [(name, changed), *right[1:]], [(name + "_v2", args), *right[1:]]]
    if decoded:
        return variants
    return [[(n, json.dumps(a)) for n, a in calls] for calls in variants]


def _ours(pairs: list[tuple[BfclCase, list[tuple[str, Any]]]], seconds: float) -> float:
    judgments = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for case, calls in pairs:
            case.check(calls)
        judgments += len(pairs)
    return judgments / (time.process_time() - start)


def _theirs(feed: str, seconds: float) -> float:
    done = subprocess.run(
        [str(reference_python()), str(REFERENCE), "--bench", str(seconds)],
        input=feed,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(Path.home())},
    )
    out = json.loads(done.stdout)
    return float(out["judgments"]) / float(out["cpu_s"])


def _first(data: Path) -> float:
    fresh = [c for c in load_bfcl(data_dir=data) if c.answer]
    pairs = [(c, _calls(c, False)[0]) for c in fresh]
    start = time.process_time()
    for case, calls in pairs:
        case.check(calls)
    return len(pairs) / (time.process_time() - start)


def _compare_wall(data: Path) -> tuple[float, int, dict[str, int]]:
    from rig_nb.compare import Endpoint, compare
    from rig_nb.evals import bfcl_scenarios

    code = (
        "import sys\nfrom rig_nb.demo import DemoServer\n"
        "with DemoServer() as s:\n    print(s.base_url, flush=True)\n    sys.stdin.read()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        url = server.stdout.readline().strip()
        start = time.perf_counter()
        scenarios = bfcl_scenarios(BFCL_CATEGORIES, data_dir=data)
        df = compare([Endpoint("demo", url, "well-behaved")], scenarios=scenarios, progress=False)
        wall = time.perf_counter() - start
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    counts = {str(k): int(v) for k, v in df["outcome"].value_counts().items()}
    return wall, len(df), counts


def measure(samples: int, quick: bool) -> tuple[str, list[Figure]]:
    data = bfcl_data_dir()
    cases = [c for c in load_bfcl(data_dir=data) if c.answer]
    text_pairs = [(c, calls) for c in cases for calls in _calls(c, False)]
    dict_pairs = [(c, calls) for c in cases for calls in _calls(c, True)]
    feed = "".join(json.dumps(job(c, calls)) + "\n" for c, calls in text_pairs)
    seconds = 1.0 if quick else 2.0
    first = _first(data)
    rows: list[tuple[float, float, float]] = []
    for _ in range(max(1, samples // 2)):
        theirs = _theirs(feed, seconds)
        rows.append((theirs, _ours(text_pairs, seconds), _ours(dict_pairs, seconds)))
    ratios_text = sorted(o / t for t, o, _ in rows)
    ratios_dict = sorted(d / t for t, _, d in rows)
    ratio_text = ratios_text[len(rows) // 2]
    ratio_dict = ratios_dict[len(rows) // 2]
    theirs_med = sorted(t for t, _, _ in rows)[len(rows) // 2]
    text_med = sorted(o for _, o, _ in rows)[len(rows) // 2]
    dict_med = sorted(d for _, _, d in rows)[len(rows) // 2]
    wall, n_rows, outcomes = _compare_wall(data)
    lines = [
        f"\n{len(text_pairs)} judgments a round ({len(cases)} cases x 3 call lists), "
        f"{len(rows)} samples, CPU time of the judging process; ratios within a sample\n",
        "| contender | judgments/s | ratio to bfcl-eval |",
        "|---|---|---|",
        f"| bfcl-eval 2026.3.23 `ast_checker`, calls decoded | {theirs_med:,.0f} | 1.00x |",
        f"| rig_nb `BfclCase.check`, calls as JSON text | {text_med:,.0f} | {ratio_text:.2f}x |",
        f"| rig_nb `BfclCase.check`, calls decoded | {dict_med:,.0f} | {ratio_dict:.2f}x |",
        f"| rig_nb, first judgment of each case (preparing it) | {first:,.0f} | "
        f"{first / theirs_med:.2f}x |",
        f"\ncompare over the ten categories ({n_rows} cases), demo endpoint `well-behaved` "
        f"in a child process, concurrency 4: {wall:.1f} s wall; outcomes "
        + ", ".join(f"{k} {v}" for k, v in outcomes.items()),
    ]
    figures = [
        Figure(
            "BfclCase.check / bfcl-eval ast_checker, judgments per CPU second (JSON text)",
            f"{ratio_text:.2f}x",
            f">= {RATIO_GOAL}x",
            ratio_text >= RATIO_GOAL,
        ),
        Figure(
            "BfclCase.check / bfcl-eval ast_checker, both given decoded calls",
            f"{ratio_dict:.2f}x",
            f">= {RATIO_GOAL}x",
            ratio_dict >= RATIO_GOAL,
        ),
        Figure(
            "BfclCase.check judgments per second of client CPU",
            f"{text_med:,.0f}",
            f">= {RATE_GOAL:,}",
            text_med >= RATE_GOAL,
        ),
        Figure(
            "compare over the ten BFCL categories, demo endpoint, wall",
            f"{wall:.1f} s",
            f"< {COMPARE_GOAL_S:.0f} s",
            wall < COMPARE_GOAL_S,
        ),
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=6))
