"""binder/ installs into a fresh virtual environment and the quickstart runs there.

repo2docker runs `pip install -r binder/requirements.txt` from the repository
root and starts the kernel in that environment; Jupyter itself (and with it
ipykernel) comes from repo2docker's own environment, so it is added here.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import nbformat
import pytest
from nbrun import NOTEBOOKS, REPO, errors, execute, kernel_spec_dir, outputs, read

PROBE = (
    "import sys, rig_nb, ipywidgets, pandas, matplotlib\nprint(sys.prefix)\nprint(rig_nb.__file__)"
)


@pytest.mark.slow
def test_binder_requirements_install_and_the_quickstart_runs(tmp_path: Path) -> None:
    env_dir = tmp_path / "binder-env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(
        [*install, "-r", "binder/requirements.txt", "ipykernel"], cwd=REPO, check=True, timeout=1200
    )

    nb = read(NOTEBOOKS / "01-quickstart.ipynb")
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    execute(nb, kernel_spec_dir(tmp_path / "kernels", python), timeout=300)

    assert errors(nb) == []
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs).split()
    assert printed[0] == str(env_dir) and printed[1].startswith(str(env_dir))
    assert any("tool calling works" in o.get("text", "") for o in outputs(nb))
    assert sys.prefix != str(env_dir)
