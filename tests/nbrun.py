"""Execute a notebook with nbclient in a kernel run by a given Python (this one by default)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
# Variables that point the notebooks at a real endpoint; unset, they use the demo.
ENDPOINT_VARS = ("RIG_NB_BASE_URL", "RIG_NB_MODEL", "RIG_NB_API_KEY")


def kernel_spec_dir(root: Path, python: str = sys.executable) -> Path:
    """A kernelspec directory whose only kernel, "rig-nb-test", runs `python`."""
    spec = root / "rig-nb-test"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "rig_nb test", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return root


def execute(nb: Any, kernels: Path, *, timeout: int = 180) -> Any:
    """Run every cell of `nb` in place (cwd notebooks/) and return it."""
    km = AsyncKernelManager(
        kernel_name="rig-nb-test",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]),
    )
    env = {k: v for k, v in os.environ.items() if k not in ENDPOINT_VARS}
    client = NotebookClient(
        nb, km=km, timeout=timeout, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute(env=env, cleanup_kc=True)
    return nb


def read(path: Path) -> Any:
    return nbformat.read(path, as_version=4)


def outputs(nb: Any) -> list[Any]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def errors(nb: Any) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in outputs(nb) if o.output_type == "error"]
