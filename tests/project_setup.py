"""Where the project's scripts keep what they install, and running one of them from a test.

The cache is `$RIG_NB_CACHE`, else `~/.cache/rig_nb`, as every `scripts/setup-*` says; a
setup script is idempotent (a warm run returns at once), so a fixture may call it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["CACHE", "REPO", "run_setup"]

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("RIG_NB_CACHE") or Path.home() / ".cache" / "rig_nb")


def run_setup(name: str, timeout: float) -> None:
    """`scripts/setup-<name>`, which installs what a tier needs once and then does nothing."""
    subprocess.run(["bash", str(REPO / "scripts" / f"setup-{name}")], check=True, timeout=timeout)
