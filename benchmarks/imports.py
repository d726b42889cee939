"""Import time of rig_nb vs openai alone, each in fresh interpreters."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from common import ROOT, Figure, ms

GOAL = 1.2
_PROBE = (
    "import sys, time; t = time.perf_counter(); import {mod}; t = time.perf_counter() - t; "
    "import json; print(json.dumps([t, sorted(m for m in ('pandas', 'ipywidgets', 'numpy', "
    "'IPython') if m in sys.modules)]))"
)


def _import_once(mod: str) -> tuple[float, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(mod=mod)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    t, heavy = json.loads(out)
    return float(t), list(heavy)


def _self_times(mod: str) -> list[tuple[int, str]]:
    """The biggest cumulative entries of `python -X importtime -c 'import mod'`."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {mod}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stderr
    rows: list[tuple[int, str]] = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            if len(name) - len(name.lstrip()) <= 2:  # top-level imports only
                rows.append((int(parts[1]), name.strip()))
    return sorted(rows, reverse=True)[:8]


def measure(samples: int) -> tuple[str, list[Figure]]:
    mods = ["openai", "rig_nb"]
    times: dict[str, list[float]] = {m: [] for m in mods}
    heavy: dict[str, list[str]] = {}
    for _ in range(max(samples, 5)):
        for m in mods:
            t, h = _import_once(m)
            times[m].append(t)
            heavy[m] = h
    med = {m: statistics.median(ts) for m, ts in times.items()}
    ratio = med["rig_nb"] / med["openai"]
    lines = [
        f"\nimport time in fresh interpreters (cached bytecode), median of {len(times['openai'])}\n",
        "| module | median import | heavy modules loaded |",
        "|---|---|---|",
    ]
    for m in mods:
        lines.append(f"| {m} | {ms(med[m])} | {', '.join(heavy[m]) or 'none'} |")
    lines.append("\nbiggest top-level imports under `import rig_nb` (cumulative us, -X importtime):\n")
    lines += [f"- {name}: {us} us" for us, name in _self_times("rig_nb")]
    figures = [
        Figure(
            "import rig_nb / import openai",
            f"{ratio:.2f}x ({ms(med['rig_nb'])} vs {ms(med['openai'])})",
            f"<= {GOAL}x",
            ratio <= GOAL,
        ),
        Figure(
            "pandas / ipywidgets out of `import rig_nb`",
            ", ".join(h for h in heavy["rig_nb"] if h in ("pandas", "ipywidgets")) or "neither loaded",
            "neither loaded",
            not any(h in ("pandas", "ipywidgets") for h in heavy["rig_nb"]),
        ),
    ]
    return "\n".join(lines), figures
