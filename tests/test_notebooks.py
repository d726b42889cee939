"""Every notebook in notebooks/ is saved clean and runs top to bottom on the demo endpoint."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbrun import NOTEBOOKS, errors, execute, kernel_spec_dir, outputs, read

PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
REQUIRED = {"01-quickstart", "02-probe-your-endpoint", "03-reasoning-leaks", "04-compare-endpoints"}
WIDGET = "application/vnd.jupyter.widget-view+json"
MACHINE_PATHS = ("/work/", "/root/", "/home/", "/tmp/", "/Users/", "C:\\\\")


@pytest.fixture(scope="session")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return kernel_spec_dir(tmp_path_factory.mktemp("kernels"))


def cell_outputs(nb: Any, source: str) -> list[Any]:
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.strip() == source]
    assert len(cells) == 1, source
    return list(cells[0].outputs)


def mimes(outs: list[Any]) -> set[str]:
    return {m for o in outs for m in o.get("data", {})}


def test_the_notebooks_are_there() -> None:
    assert {p.stem for p in PATHS} >= REQUIRED


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_saved_clean(path: Path) -> None:
    text = path.read_text()
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert "widgets" not in nb.metadata  # no saved widget state
    assert text.isascii()
    for marker in MACHINE_PATHS:
        assert marker not in text
    assert not re.search(r"\b(sk|hf|gsk|xai)-[A-Za-z0-9_-]{8,}", text)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_runs_without_errors(path: Path, kernels: Path) -> None:
    nb = execute(read(path), kernels)
    assert errors(nb) == []
    stderr = [o.text for o in outputs(nb) if o.output_type == "stream" and o.name == "stderr"]
    assert stderr == []
    if path.stem == "01-quickstart":
        assert "tool calling works" in "".join(o.get("text", "") for o in outputs(nb))
        assert WIDGET in mimes(cell_outputs(nb, "result.trace"))  # Trace._ipython_display_
        live = [o for o in outputs(nb) if WIDGET in o.get("data", {})]
        assert len(live) >= 3  # TraceView, the bare trace, LeakLab
    if path.stem == "02-probe-your-endpoint":
        assert cell_outputs(nb, "panel.probe()")[0].data["text/plain"] == "'ok'"
    if path.stem == "04-compare-endpoints":
        assert "image/png" in mimes(outputs(nb))
        assert WIDGET in mimes(
            cell_outputs(nb, "from rig_nb.widgets import CompareView\n\nCompareView(df)")
        )
