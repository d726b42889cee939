"""The README's Python blocks run as printed, against the demo endpoint, without pandas.

The README's first command installs no notebook extra, so pandas and ipywidgets
are made unimportable in the subprocess that runs the blocks. The only changes
made to a block are the endpoint and model names: the README points at an
Ollama on localhost, the test at the demo endpoint.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rig_nb.demo import DemoServer

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
NO_NOTEBOOK_EXTRA = "import sys\nsys.modules['pandas'] = None\nsys.modules['ipywidgets'] = None\n"


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block-{n}" for n in range(len(BLOCKS))])
def test_a_readme_block_runs_as_printed(block: str, demo: DemoServer) -> None:
    assert "http://localhost:11434" in block and "qwen3:8b" in block
    code = block.replace("http://localhost:11434", demo.origin).replace(
        "qwen3:8b", "qwen3-no-parser"
    )
    proc = subprocess.run(
        [sys.executable, "-c", NO_NOTEBOOK_EXTRA + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "the block printed nothing"
    assert "Traceback" not in proc.stderr


TEXT = README.read_text()
# The first command (a fresh clone's setup and demo) and the fast tier's, as printed.
FIRST_COMMAND = TEXT.split("## The two commands")[1].split("```")[1].strip()
FAST_TIER = re.search(r'`([^`\n]*pytest -m "not real and not browser and not slow")`', TEXT)


def test_the_readme_names_its_commands() -> None:
    assert FIRST_COMMAND.startswith("python3 -m venv .venv")
    assert FAST_TIER is not None and "pip install" in FAST_TIER.group(1)


@pytest.mark.slow
def test_the_readme_commands_run_from_a_fresh_clone(tmp_path: Path) -> None:
    """A clone of this repository runs the first command, then collects the fast tier with
    its command, both as printed (pip reaches the package index; nothing else)."""
    assert FAST_TIER is not None
    repo = README.parent
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, timeout=120)
    # The shell a newcomer has: no PYTHONPATH or venv of this run leaks into the clone's.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    first = subprocess.run(
        ["bash", "-c", FIRST_COMMAND],
        cwd=clone,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "rig_nb demo:" in first.stdout
    fast = subprocess.run(
        ["bash", "-c", f"{FAST_TIER.group(1)} --collect-only -q"],
        cwd=clone,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert fast.returncode == 0, fast.stdout[-3000:] + fast.stderr[-2000:]
    assert re.search(r"^\d+/\d+ tests collected \(\d+ deselected\)", fast.stdout, re.M)
    assert "tests/browser/" not in fast.stdout
