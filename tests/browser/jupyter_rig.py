"""Plumbing for the browser tier: Jupyter servers as subprocesses, notebooks, page helpers.

Servers listen on 127.0.0.1 with a random port and a token, read config only from private
temporary dirs, and are stopped by PID. Page helpers drive JupyterLab as a person would
(open the notebook, Run > Run All Cells) and locate widget outputs by their own text, which
works the same in JupyterLab and in Voila.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from playwright.sync_api import Locator, Page, expect

from rig_nb.widgets.trace_view import ITERATION_HEADER, LINE_CLASS

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium tries the (closed) network at start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
STARTUP_DEADLINE_S = 120.0
# Text each widget always shows: how its output is found in the page.
TRACE_VIEW = "ending: how the turn ended"  # the legend above the table
LEAK_LAB = "reasoning_shape:"
COMPARE_VIEW = "each cell: runs ok / runs"
PROBE_REPORT = "stream_parity"  # a check of the full report
# A TraceView's cells: the column header and each row's line are flex rows of titled spans.
TRACE_CELLS = "div[style*='display:flex'] > span[title]"
TEXT_COLUMN = ITERATION_HEADER.index("text")
ENDING_COLUMN = ITERATION_HEADER.index("ending")
WIDGET_ERROR = "Error displaying widget"
XSS_MARKER = "window.__rig_xss"
# JupyterLab front-end plugins that call out to the network or pop up over the notebook.
DISABLED_LAB_PLUGINS = {
    "@jupyterlab/apputils-extension:announcements": True,
    "@jupyterlab/extensionmanager-extension": True,
}
# Every cell stays attached to the DOM, so outputs can be found wherever they are scrolled.
LAB_USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A Jupyter-family server running as a subprocess of the test session."""

    name: str
    proc: subprocess.Popen[bytes]
    port: int
    token: str
    log_path: Path

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.origin}{path}{sep}token={self.token}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, probe_path: str) -> None:
        """Poll `probe_path` until it answers 200; fail early if the process exits."""
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log()}")
            try:
                resp = httpx.get(self.url(probe_path), timeout=5.0, trust_env=False)
                if resp.status_code == 200:
                    return
                last = f"HTTP {resp.status_code}"
            except httpx.TransportError as exc:
                last = repr(exc)
            try:
                self.proc.wait(timeout=0.25)
            except subprocess.TimeoutExpired:
                pass
        raise RuntimeError(
            f"{self.name} not ready in {STARTUP_DEADLINE_S}s ({last}):\n{self.log()}"
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def start_server(name: str, argv: list[str], env: dict[str, str], workdir: Path) -> Server:
    """Start `argv` ({port} and {token} filled in) with output to workdir/<name>.log."""
    port = free_port()
    token = secrets.token_hex(16)
    log_path = workdir / f"{name}.log"
    argv = [a.format(port=port, token=token) for a in argv]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    return Server(name=name, proc=proc, port=port, token=token, log_path=log_path)


def jupyter_environment(base: Path) -> dict[str, str]:
    """The servers' environment: private config, data and runtime dirs, no ambient endpoint."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUPYTER", "OPENAI_", "RIG_NB_")) and k != "IPYTHONDIR"
    }
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ]:
        (base / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / sub)
    labconfig = base / "config" / "labconfig"
    labconfig.mkdir(exist_ok=True)
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": DISABLED_LAB_PLUGINS})
    )
    env["PYTHONUNBUFFERED"] = "1"
    return env


def lab_argv(root: Path, state: Path) -> list[str]:
    settings = state / "settings"
    for rel, values in LAB_USER_SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        "--port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        f"--LabApp.workspaces_dir={state / 'workspaces'}",
        f"--LabApp.user_settings_dir={settings}",
    ]


def voila_argv(root: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "voila",
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        "--Voila.port={port}",
        "--Voila.port_retries=0",
        "--Voila.token={token}",
        f"--Voila.root_dir={root}",
    ]


def write_notebook(path: Path, cells: list[str]) -> None:
    """A version 4 notebook of code cells, kernel python3, never run."""
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"cell-{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1))


def open_in_lab(page: Page, lab: Server, name: str) -> None:
    """Open notebook `name` in JupyterLab and wait until its kernel is idle."""
    page.goto(lab.url(f"/lab/tree/{name}?reset"))
    page.locator("#jupyterlab-splash").wait_for(state="detached")
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(state="visible")
    # The toolbar indicator reads "idle" before the kernel exists; the status bar does not.
    page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\| Idle$")).wait_for()


def run_all_cells(page: Page) -> None:
    """Run > Run All Cells, as a person would."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']:not(.lm-mod-disabled)").click()


def open_in_voila(page: Page, voila: Server, name: str) -> None:
    page.goto(voila.url(f"/voila/render/{name}"))


def output_with(page: Page, text: str) -> Locator:
    """The cell outputs whose rendered text contains `text`."""
    return page.locator(".jp-OutputArea-output").filter(has_text=text)


def trace_rows(output: Locator) -> Locator:
    """The expand toggles of a TraceView: one per iteration row."""
    return output.locator("button[title='show everything sent and received']")


def expect_rows_aligned(output: Locator) -> None:
    """Each TraceView toggle sits level with, and left of, its own row's line.

    Toggles and lines are separate widgets (a toggle column beside an HTML of lines), so only
    their equal heights keep them level; this measures it in the rendered page.
    """
    toggles = trace_rows(output)
    lines = output.locator(f"div.{LINE_CLASS}")
    expect(lines).to_have_count(toggles.count())
    rect = (
        "els => els.map(e => e.getBoundingClientRect())"
        ".map(r => [r.top, r.bottom, r.left, r.right])"
    )
    boxes = list(zip(toggles.evaluate_all(rect), lines.evaluate_all(rect), strict=True))
    for n, (toggle, line) in enumerate(boxes):
        assert abs((toggle[0] + toggle[1]) / 2 - (line[0] + line[1]) / 2) <= 2, (n, toggle, line)
        assert toggle[3] <= line[2] + 1, (n, toggle, line)


def expect_no_widget_errors(page: Page) -> None:
    expect(page.get_by_text(WIDGET_ERROR)).to_have_count(0)


def expect_markup_inert(page: Page, outputs: dict[str, Locator], payloads: list[str]) -> None:
    """Each output shows every payload as text; none became an element or ran."""
    for name, output in outputs.items():
        for payload in payloads:
            assert payload in output.inner_text(), f"{name} does not show {payload!r} as text"
    assert page.locator("img[src='x']").count() == 0, "an <img> from endpoint text is in the DOM"
    scripts = page.locator("script").evaluate_all("els => els.map(e => e.textContent)")
    assert not [s for s in scripts if XSS_MARKER in s], (
        "a <script> from endpoint text is in the DOM"
    )
    assert page.evaluate(f"typeof {XSS_MARKER}") == "undefined", "endpoint text ran as script"


def expect_markup_page_inert(page: Page, rows: int, shot: Path, payloads: list[str]) -> None:
    """The markup notebook's TraceView, LeakLab and CompareView show `payloads` as inert text."""
    trace_view = output_with(page, TRACE_VIEW)
    expect(trace_rows(trace_view)).to_have_count(rows)
    expect(trace_view.get_by_text("Raw reply")).to_have_count(rows)
    compare_view = output_with(page, COMPARE_VIEW)
    expect(compare_view).to_contain_text("hostile-gateway")
    compare_view.get_by_text(re.compile(r"^all \d+ rows$")).click()  # the rows, with the errors
    expect(compare_view.locator("table").nth(1)).to_be_visible()
    expect_no_widget_errors(page)
    page.screenshot(path=str(shot), full_page=True)
    expect_markup_inert(
        page,
        {
            "TraceView": trace_view,
            "LeakLab": output_with(page, LEAK_LAB),
            "CompareView": compare_view,
        },
        payloads,
    )


def open_file_browser(page: Page) -> None:
    """Show JupyterLab's file browser in the left sidebar (the default layout has it open)."""
    browser = page.locator("#filebrowser")
    if not browser.is_visible():
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']").click()
    expect(browser).to_be_visible()


def output_widths(page: Page) -> list[float]:
    """The widths of the rendered (non-empty) cell output areas."""
    widths: list[float] = page.locator(".jp-OutputArea-output").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().width).filter(w => w > 0)"
    )
    return widths


def set_output_width(page: Page, width: int) -> None:
    """Resize the window until the notebook's output areas are `width` px wide."""
    viewport = page.viewport_size
    assert viewport is not None
    current = output_widths(page)[0]
    page.set_viewport_size(
        {"width": round(viewport["width"] + width - current), "height": viewport["height"]}
    )
    page.wait_for_function(
        "w => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".map(e => e.getBoundingClientRect().width).filter(x => x > 0)"
        ".every(x => Math.abs(x - w) < 0.5)",
        arg=width,
    )


def boxes(cells: Locator) -> list[tuple[float, float, str]]:
    """(left, right, text) of each element, in page coordinates."""
    found: list[tuple[float, float, str]] = [
        tuple(b)
        for b in cells.evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return [r.left, r.right, e.textContent.slice(0, 40)]; })"
        )
    ]
    return found


def cells_outside(output: Locator, cells: Locator) -> list[tuple[float, float, str]]:
    """The cells that do not start inside `output`'s box, or run past its right edge.

    Positions are relative to the output area's left edge.
    """
    box = output.bounding_box()
    assert box is not None
    left, right = box["x"], box["x"] + box["width"]
    return [
        (round(a - left, 1), round(b - left, 1), text)
        for a, b, text in boxes(cells)
        if not (left - 0.5 <= a < right) or b > right + 0.5
    ]


def trace_cells(view: Locator) -> Locator:
    return view.locator(TRACE_CELLS)


def row_cell_texts(output: Locator, row: int = 0) -> list[str] | None:
    """The cell texts of a TraceView row as the page shows them now (None: no such row yet)."""
    texts: list[str] | None = output.evaluate(
        f"(out, n) => {{ const line = out.querySelectorAll('div.{LINE_CLASS}')[n];"
        " return line ? [...line.children].map(c => c.textContent) : null; }",
        row,
    )
    return texts
