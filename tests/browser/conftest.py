"""Browser tier: JupyterLab and Voila as subprocesses on 127.0.0.1, driven by headless Chromium.

Chromium is Debian's (/usr/bin/chromium, installed by scripts/setup-browser); playwright only
drives it. Every server started here is stopped by PID at session end. Nothing may reach the
network: the browser aborts any request that is not for 127.0.0.1 and records it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from playwright.sync_api import BrowserContext, Page, Playwright, Route, sync_playwright

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
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
STARTUP_DEADLINE_S = 90.0
WIDGET_ERROR = "Error displaying widget"
# JupyterLab front-end plugins that would call out to the network or pop up over the notebook.
DISABLED_LAB_PLUGINS = {
    "@jupyterlab/apputils-extension:announcements": True,
    "@jupyterlab/extensionmanager-extension": True,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


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
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log()}")
            try:
                resp = httpx.get(self.url(probe_path), timeout=5.0)
                if resp.status_code == 200:
                    return
                last = f"HTTP {resp.status_code}"
            except httpx.TransportError as exc:
                last = repr(exc)
            # Wait on the process rather than sleeping: returns early if it dies.
            try:
                self.proc.wait(timeout=0.25)
            except subprocess.TimeoutExpired:
                pass
        raise RuntimeError(f"{self.name} not ready after {STARTUP_DEADLINE_S}s ({last}):\n{self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def start_server(name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> Server:
    port = free_port()
    token = secrets.token_hex(16)
    log_path = log_dir / f"{name}.log"
    argv = [a.format(port=port, token=token) for a in argv]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=log_dir)
    return Server(name=name, proc=proc, port=port, token=token, log_path=log_path)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def server_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory both servers serve: notebooks are written or copied here."""
    return tmp_path_factory.mktemp("root")


@pytest.fixture(scope="session")
def jupyter_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for the servers: private config, data and runtime dirs, no ambient tokens."""
    base = tmp_path_factory.mktemp("jupyter")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "OPENAI_"))}
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ]:
        (base / sub).mkdir()
        env[var] = str(base / sub)
    labconfig = base / "config" / "labconfig"
    labconfig.mkdir()
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": DISABLED_LAB_PLUGINS})
    )
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="session")
def lab(
    jupyter_env: dict[str, str], server_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("labstate")
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        "--port={port}",
        "--ServerApp.port_retries=0",
        "--allow-root",
        "--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={server_root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        f"--LabApp.workspaces_dir={state / 'workspaces'}",
        f"--LabApp.user_settings_dir={state / 'settings'}",
    ]
    server = start_server("jupyterlab", argv, jupyter_env, state)
    try:
        server.wait_ready("/api/status")
        yield server
    finally:
        server.stop()
        _keep_log(server)


def _keep_log(server: Server) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(server.log_path, ARTIFACTS / server.log_path.name)


@dataclass
class Browser:
    context: BrowserContext
    offsite: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    context = playwright.chromium.launch_persistent_context(
        str(profile),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900},
    )
    result = Browser(context)

    def guard(route: Route) -> None:
        url = route.request.url
        if url.startswith(("http://127.0.0.1:", "ws://127.0.0.1:", "data:", "blob:")):
            route.continue_()
        else:
            result.offsite.append(url)
            route.abort()

    context.route("**/*", guard)
    try:
        yield result
    finally:
        context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


CALL_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    page = browser.context.new_page()
    console: list[str] = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: console.append(f"pageerror: {exc}"))
    try:
        yield page
    finally:
        if request.node.stash.get(CALL_FAILED, False):
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            stem = ARTIFACTS / f"failed-{request.node.name}"
            page.screenshot(path=f"{stem}.png", full_page=True)
            Path(f"{stem}.console.txt").write_text("\n".join(console))
        page.close()
    assert browser.offsite == [], f"the page tried to leave 127.0.0.1: {browser.offsite}"


def write_notebook(root: Path, name: str, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    path = root / name
    nbformat.write(nb, path)
    return path


def open_in_lab(page: Page, lab: Server, name: str) -> None:
    page.goto(lab.url(f"/lab/tree/{name}"))
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=60_000)
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(state="visible", timeout=60_000)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(
        state="attached", timeout=60_000
    )


def run_all_cells(page: Page) -> None:
    """Run every cell through the Run menu, as a person would."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    item = page.locator(".lm-Menu-item[data-command='runmenu:run-all']:not(.lm-mod-disabled)")
    item.click()


def no_widget_errors(page: Page) -> Any:
    return page.get_by_text(WIDGET_ERROR).count() == 0
