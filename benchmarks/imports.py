"""Import time of rig_nb vs openai alone, each in fresh interpreters.

Legacy `httpx` imports its command-line module at import time, and that pulls
in click, rich and pygments whenever they are installed (the `bench` extra
installs click and rich; IPython brings pygments). So the figure is taken two
ways: as this venv is, and with click and rich hidden (`sys.modules[name] = None`
makes their import fail, as in an environment without them).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from common import ROOT, Figure, ms

GOAL = 1.2
HIDE_CLI = "import sys; sys.modules['click'] = None; sys.modules['rich'] = None; "
_PROBE = (
    "import sys, time; t = time.perf_counter(); import {mod}; t = time.perf_counter() - t; "
    "import json; print(json.dumps([t, sorted(m for m in ('pandas', 'ipywidgets', 'numpy', "
    "'IPython', 'rich', 'click') if sys.modules.get(m) is not None)]))"
)
SETUPS = {"as installed": "", "without click/rich": HIDE_CLI}


def _import_once(mod: str, prefix: str) -> tuple[float, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", prefix + _PROBE.format(mod=mod)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    t, heavy = json.loads(out)
    return float(t), list(heavy)


def _added_by(mod: str, after: str) -> list[tuple[int, str]]:
    """What `import mod` loads beyond `after`: cumulative us of its imports, three levels deep.

    From `python -X importtime -c 'import after; import mod'`, the entries
    logged once `after` is done.
    """
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {after}; import {mod}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stderr
    lines = err.splitlines()
    done = next(i for i, ln in enumerate(lines) if ln.rstrip().endswith(f"| {after}"))
    rows: list[tuple[int, str]] = []
    for line in lines[done + 1 :]:
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2][1:].rstrip()
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 3:
            rows.append((int(parts[1]), "  " * depth + name.strip()))
    return rows


def measure(samples: int) -> tuple[str, list[Figure]]:
    mods = ["openai", "rig_nb"]
    keys = [(setup, m) for setup in SETUPS for m in mods]
    times: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
    heavy: dict[tuple[str, str], list[str]] = {}
    for _ in range(max(samples, 11)):
        for setup, m in keys:  # interleaved: load on the machine hits every figure alike
            t, h = _import_once(m, SETUPS[setup])
            times[(setup, m)].append(t)
            heavy[(setup, m)] = h
    med = {k: statistics.median(ts) for k, ts in times.items()}
    runs = len(times[keys[0]])
    lines = [
        f"\nimport time in fresh interpreters (cached bytecode), median of {runs}\n",
        "| environment | module | median import | fastest | of these, loaded: pandas, "
        "ipywidgets, numpy, IPython, rich, click |",
        "|---|---|---|---|---|",
    ]
    for setup, m in keys:
        loaded = ", ".join(heavy[(setup, m)]) or "none"
        fastest = ms(min(times[(setup, m)]))
        lines.append(f"| {setup} | {m} | {ms(med[(setup, m)])} | {fastest} | {loaded} |")
    lines.append(
        "\nThe ratio is the median over samples of rig_nb's time / openai's time taken "
        "back to back in the same sample."
    )
    lines.append(
        "\nwhat `import rig_nb` adds after `import openai`, as installed (cumulative, "
        "-X importtime, entries over 3 ms, one run):\n"
    )
    lines.append("```")
    lines += [
        f"{us / 1000:8.1f} ms  {name}" for us, name in _added_by("rig_nb", "openai") if us > 3000
    ]
    lines.append("```")
    figures: list[Figure] = []
    for setup in SETUPS:
        pairs = zip(times[(setup, "rig_nb")], times[(setup, "openai")], strict=True)
        ratio = statistics.median(r / o for r, o in pairs)
        figures.append(
            Figure(
                f"import rig_nb / import openai ({setup})",
                f"{ratio:.2f}x ({ms(med[(setup, 'rig_nb')])} vs {ms(med[(setup, 'openai')])})",
                f"<= {GOAL}x",
                ratio <= GOAL,
            )
        )
    loaded = [h for h in heavy[("as installed", "rig_nb")] if h in ("pandas", "ipywidgets")]
    figures.append(
        Figure(
            "pandas / ipywidgets out of `import rig_nb`",
            ", ".join(loaded) or "neither loaded",
            "neither loaded",
            not loaded,
        )
    )
    return "\n".join(lines), figures
