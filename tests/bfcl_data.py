"""BFCL v4's real data and bfcl-eval's own checker, as scripts/setup-bfcl caches them.

The data is the bfcl-eval wheel installed with --no-deps into a folder of the cache
(`site`), so any test environment (the 3.10 and 3.13 venvs too) reads it through
`data_dir`, or finds it as an installed package with that folder put on sys.path.
bfcl-eval's checker runs in a venv of its own (`reference_verdicts`), as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from project_setup import CACHE, run_setup

from rig_nb.evals import BfclCase
from rig_nb.evals.bfcl import BFCL_VERSION

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "evals" / "bfcl_reference.py"


@cache
def setup_bfcl() -> None:
    """scripts/setup-bfcl, once per session (it returns at once when all is cached)."""
    run_setup("bfcl", 1800)


def bfcl_site() -> Path:
    """The folder holding the installed `bfcl_eval` package (data only)."""
    setup_bfcl()
    return CACHE / f"bfcl-eval-{BFCL_VERSION}" / "site"


def bfcl_data_dir() -> Path:
    return bfcl_site() / "bfcl_eval" / "data"


def reference_python() -> Path:
    setup_bfcl()
    return CACHE / f"bfcl-venv-{BFCL_VERSION}" / "bin" / "python"


def job(case: BfclCase, calls: Sequence[tuple[str, Any]], key: str = "") -> dict[str, Any]:
    """One line for bfcl_reference.py: a case and the calls to judge (arguments given as a
    dict are sent as the JSON a model would have written)."""
    return {
        "id": key or case.id,
        "category": case.category,
        "functions": case.functions,
        "answer": case.answer,
        "calls": [[n, a if isinstance(a, str) else json.dumps(a)] for n, a in calls],
    }


def reference_verdicts(jobs: list[dict[str, Any]], *args: str) -> list[dict[str, Any]]:
    """bfcl-eval's own verdict on each job, in order (see bfcl_reference.py)."""
    feed = "".join(json.dumps(j) + "\n" for j in jobs)
    done = subprocess.run(
        [str(reference_python()), str(REFERENCE), *args],
        input=feed,
        capture_output=True,
        text=True,
        timeout=1200,
        check=True,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(Path.home())},
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
