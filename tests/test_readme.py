"""The README's Python blocks run as printed, against the demo endpoint, without pandas.

The README's first command installs no notebook extra, so pandas and ipywidgets
are made unimportable in the subprocess that runs the blocks. The only changes
made to a block are the endpoint and model names: the README points at an
Ollama on localhost, the test at the demo endpoint.
"""

from __future__ import annotations

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
