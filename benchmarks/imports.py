"""Import time: `import rig_nb`, `python -m rig_nb --help` and the Client, in fresh interpreters.

    .venv/bin/python benchmarks/imports.py [--samples N]

The package face is lazy (PEP 562): `import rig_nb` and the command line's
`--help` should not wait for the openai SDK (about 0.4 s here), which only
the Client needs. Each probe runs in a fresh interpreter (cached bytecode),
interleaved with the others so load on the machine hits all alike:
- `import openai`, the reference;
- `import rig_nb`; goal: openai (and pandas, ipywidgets) not loaded;
- `python -m rig_nb --help`, timed inside the interpreter from the start of
  `runpy.run_module("rig_nb")` to its exit, and as a whole process beside
  `python -c pass`; goal: openai not loaded;
- `from rig_nb import Client`, which does need openai; goal: <= 1.2x
  `import openai` (the goal the package face had before it became lazy).
Legacy `httpx` (whose CLI module pulls in click and rich when installed) is
imported only when a Client is built, so no figure here depends on them.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from common import ROOT, Figure, ms, run_alone

GOAL = 1.2
HEAVY = ("openai", "httpx", "pydantic", "pandas", "ipywidgets", "numpy", "IPython", "rich", "click")
_HELP = (
    "import io, runpy, contextlib\n"
    "sys.argv = ['rig_nb', '--help']\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    try:\n"
    "        runpy.run_module('rig_nb', run_name='__main__', alter_sys=True)\n"
    "    except SystemExit:\n"
    "        pass\n"
)
PROBES = {
    "import openai": "import openai\n",
    "import rig_nb": "import rig_nb\n",
    "python -m rig_nb --help": _HELP,
    "from rig_nb import Client": "from rig_nb import Client\n",
}
_WRAP = (
    "import sys, time, json\n"
    "t = time.perf_counter()\n"
    "{body}"
    "t = time.perf_counter() - t\n"
    "print(json.dumps([t, sorted(m for m in {heavy!r} if sys.modules.get(m) is not None)]))\n"
)


def _probe(body: str) -> tuple[float, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _WRAP.format(body=body, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    t, heavy = json.loads(out.strip().splitlines()[-1])
    return float(t), list(heavy)


def _process(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], capture_output=True, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def _importtime(args: list[str], min_us: int = 3000, depth: int = 3) -> list[str]:
    """`python -X importtime ...`: the modules over min_us cumulative, up to `depth` deep."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stderr
    rows: list[str] = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2][1:].rstrip()
        level = (len(name) - len(name.lstrip())) // 2
        us = int(parts[1])
        if level <= depth and us >= min_us:
            rows.append(f"{us / 1000:8.1f} ms  {'  ' * level}{name.strip()}")
    return rows


def measure(samples: int, quick: bool = False) -> tuple[str, list[Figure]]:
    runs = max(samples, 5 if quick else 11)
    times: dict[str, list[float]] = {name: [] for name in PROBES}
    loaded: dict[str, list[str]] = {}
    process: dict[str, list[float]] = {"python -c pass": [], "python -m rig_nb --help": []}
    for _ in range(runs):
        for name, body in PROBES.items():  # interleaved
            t, heavy = _probe(body)
            times[name].append(t)
            loaded[name] = heavy
        process["python -c pass"].append(_process(["-c", "pass"]))
        process["python -m rig_nb --help"].append(_process(["-m", "rig_nb", "--help"]))
    med = {k: statistics.median(v) for k, v in times.items()}
    pmed = {k: statistics.median(v) for k, v in process.items()}
    lines = [
        f"\nimport time in fresh interpreters (cached bytecode), median of {runs}\n",
        f"| probe | median | fastest | loaded, of {', '.join(HEAVY)} |",
        "|---|---|---|---|",
    ]
    for name in PROBES:
        heavy = ", ".join(loaded[name]) or "none"
        lines.append(f"| {name} | {ms(med[name])} | {ms(min(times[name]))} | {heavy} |")
    lines.append(
        f"\nwhole processes, median of {runs}: `python -c pass` {ms(pmed['python -c pass'])}, "
        f"`python -m rig_nb --help` {ms(pmed['python -m rig_nb --help'])}"
    )
    lines += [
        "\nwhat `python -m rig_nb --help` imports (cumulative, -X importtime, entries over "
        "3 ms, three levels deep, one run):\n",
        "```",
        *_importtime(["-m", "rig_nb", "--help"]),
        "```",
    ]
    ratio = statistics.median(
        c / o
        for c, o in zip(times["from rig_nb import Client"], times["import openai"], strict=True)
    )
    figures: list[Figure] = []
    for name in ("import rig_nb", "python -m rig_nb --help"):
        has = "openai" in loaded[name]
        figures.append(
            Figure(
                f"openai out of `{name}`",
                f"{'openai LOADED' if has else 'not loaded'}; {ms(med[name])} "
                f"(import openai: {ms(med['import openai'])})",
                "openai not loaded",
                not has,
            )
        )
    bad = [h for h in loaded["import rig_nb"] if h in ("pandas", "ipywidgets")]
    figures += [
        Figure(
            "pandas / ipywidgets out of `import rig_nb`",
            ", ".join(bad) or "neither loaded",
            "neither loaded",
            not bad,
        ),
        Figure(
            "`from rig_nb import Client` / `import openai`",
            f"{ratio:.2f}x ({ms(med['from rig_nb import Client'])} vs {ms(med['import openai'])})",
            f"<= {GOAL}x",
            ratio <= GOAL,
        ),
    ]
    return "\n".join(lines), figures


if __name__ == "__main__":
    sys.exit(run_alone(measure, __doc__ or "", samples=11))
