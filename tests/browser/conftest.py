"""Browser tier: JupyterLab and Voila as subprocesses on 127.0.0.1, driven by headless Chromium.

Chromium is Debian's (/usr/bin/chromium, installed by scripts/setup-browser); playwright only
drives it. The notebooks run on the demo endpoint inside their kernels. Every server started
here is stopped by PID at session end; the browser aborts and records any request that is not
for 127.0.0.1 or a local file. Failures leave a screenshot and the console log under
test-artifacts/browser/. The README's screenshots (docs/) are taken here too: `keep_for_docs`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_rig import (
    CHROMIUM,
    CHROMIUM_ARGS,
    Server,
    jupyter_environment,
    lab_argv,
    start_server,
    voila_argv,
    write_notebook,
)
from playwright.sync_api import BrowserContext, Page, Playwright, Route, expect, sync_playwright

from rig_nb import Client, RigError, RunRequest, Trace
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"
DOCS = REPO / "docs"
QUICKSTART = "01-quickstart.ipynb"
TIMEOUT_MS = 90_000
CALL_FAILED = pytest.StashKey[bool]()
# Voila's lab template links Font Awesome from this CDN (voila 0.5, templates/lab/index.html.j2).
# Aborted like any other offsite request, but not a failure: the widgets' icons still render.
VOILA_FONT_AWESOME = "https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@"

HOSTILE_GATEWAY = '''\
from rig_nb.testing import LoopbackServer, Response


class HostileGateway(LoopbackServer):
    """A proxy whose own error message carries live markup."""

    def handle(self, request):
        message = f"upstream refused {XSS_SCRIPT} {XSS_IMG}"
        return Response({"error": {"message": message, "type": "bad_request"}}, status=400)


gateway = HostileGateway()
gateway.start()
'''

# Endpoint text with live markup through every widget: TraceView (rows opened), LeakLab on a
# raw reply, CompareView over the persona and a gateway whose error message holds markup.
MARKUP_CELLS = [
    "from rig_nb import Client, RunRequest\n"
    "from rig_nb.compare import Endpoint, compare\n"
    "from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, XSS_IMG, XSS_SCRIPT, DemoServer\n"
    "from rig_nb.demo import demo_tools\n"
    "from rig_nb.widgets import CompareView, LeakLab, TraceView\n"
    "\n"
    "demo = DemoServer()\n"
    "demo.start()\n"
    "client = Client(demo.base_url)",
    HOSTILE_GATEWAY,
    "view = TraceView()\n"
    "display(view)\n"
    'request = RunRequest("html-injector", 1024, system=DEMO_SYSTEM, prompt=DEMO_PROMPT,\n'
    "                     tools=demo_tools())\n"
    "result = client.run(request, trace=view.trace)\n"
    "for row in view.rows:\n"
    "    row.toggle.value = True",
    "LeakLab(result.trace.iterations[-1].raw_content)",
    'CompareView(compare([Endpoint("html-injector", demo.base_url, "html-injector"),\n'
    '                     Endpoint("hostile-gateway", gateway.base_url, "any-model")]))',
]

COMPARE_MODELS = ["well-behaved", "budget-think", "hermes-text-tools", "tool-spinner"]
COMPARE_CELLS = [
    "from rig_nb.compare import Endpoint, compare\n"
    "from rig_nb.demo import DemoServer\n"
    "from rig_nb.widgets import CompareView\n"
    "\n"
    "demo = DemoServer()\n"
    "demo.start()",
    f"models = {COMPARE_MODELS!r}\n"
    "CompareView(compare([Endpoint(m, demo.base_url, m) for m in models]))",
]

# A long trace: rows in several segments (toggle column + HTML of lines), some rows open.
ROWS = 40
OPEN_ROWS = [3, 4, 25, ROWS - 1]
ROWS_CELLS = [
    "from rig_nb import Iteration, Trace\n"
    "from rig_nb.widgets import TraceView\n"
    "\n"
    f"texts = [f'row {{i}} ' + 'x' * 5000 for i in range({ROWS})]\n"
    "its = [Iteration(index=i, raw_content=t, text=t, finish_reason='stop')\n"
    "       for i, t in enumerate(texts)]\n"
    "view = TraceView(Trace(model='m', iterations=its, outcome='ok'))\n"
    f"for i in {OPEN_ROWS!r}:\n"
    "    view.rows[i].toggle.value = True\n"
    "view",
]

# The detector's own check: an unescaped HTML widget holding the payload does run it here.
CONTROL_CELLS = [
    "import ipywidgets as widgets\nfrom rig_nb.demo import XSS_IMG\n\nwidgets.HTML(value=XSS_IMG)",
]

# The views at an 800 px output area: a leaky streamed run (text tool calls recovered, its first
# row open), a run cut short with an error, notebook 04's compare, a wider compare (eight
# endpoints, one with a long name), and a doctor's full report.
LEAKY_MODEL = "hermes-text-tools"
SHORT_MODEL, SHORT_BUDGET = "budget-think", 64
NOTEBOOK_MODELS = [
    "well-behaved",
    "budget-think",
    "hermes-text-tools",
    "answer-in-reasoning",
    "tool-spinner",
]
LAYOUT_REPEATS = 3
LONG_NAME = "a-litellm-gateway-in-front-of-vllm-serving-qwen3-32b"
WIDE_ENDPOINTS = [
    *[(m, m) for m in ["well-behaved", "qwen3-no-parser", "r1-json-sketch", "budget-think"]],
    *[(m, m) for m in ["reasoning-field", "hermes-text-tools", "tool-spinner"]],
    (LONG_NAME, "gpt-oss-raw-harmony"),
]
LAYOUT_CELLS = [
    "from rig_nb import Client, RigError, RunRequest\n"
    "from rig_nb.compare import Endpoint, compare\n"
    "from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools\n"
    "from rig_nb.widgets import CompareView, ProbePanel, TraceView\n"
    "\n"
    "demo = DemoServer()\n"
    "demo.start()\n"
    "client = Client(demo.base_url)\n"
    "\n"
    "\n"
    "def watch(model, max_tokens=1024, **kwargs):\n"
    "    view = TraceView()\n"
    "    display(view)\n"
    "    request = RunRequest(model, max_tokens, system=DEMO_SYSTEM, prompt=DEMO_PROMPT,\n"
    "                         tools=demo_tools(), stream=True, **kwargs)\n"
    "    try:\n"
    "        client.run(request, trace=view.trace)\n"
    "    except RigError:\n"
    "        pass\n"
    "    return view",
    f"leaky = watch({LEAKY_MODEL!r}, recover_text_tool_calls=True)\n"
    "leaky.rows[0].toggle.value = True",
    f"short = watch({SHORT_MODEL!r}, max_tokens={SHORT_BUDGET})",
    f"models = {NOTEBOOK_MODELS!r}\n"
    "endpoints = [Endpoint(m, demo.base_url, m) for m in models]\n"
    f"CompareView(compare(endpoints, repeats={LAYOUT_REPEATS}))",
    f"wide = [Endpoint(n, demo.base_url, m) for n, m in {WIDE_ENDPOINTS!r}]\n"
    "CompareView(compare(wide))",
    f"panel = ProbePanel(demo.base_url, {LEAKY_MODEL!r})\n"
    "panel.probe()\n"
    "panel.full_report()\n"
    "panel",
]

STREAM_PROMPT = "What is the capital of France? Answer in one short sentence."
# A streamed reply paced slowly enough to see its row grow: one round, 29 deltas 0.2 s apart.
STREAM_MODEL = "qwen3-no-parser"
STREAM_CELLS = [
    "from rig_nb import Client, RunRequest\n"
    "from rig_nb.demo import DemoServer\n"
    "from rig_nb.widgets import TraceView\n"
    "\n"
    "demo = DemoServer(stream_first_delay=0.5, stream_interval=0.2)\n"
    "demo.start()\n"
    "client = Client(demo.base_url)",
    "view = TraceView()\n"
    "display(view)\n"
    f"request = RunRequest({STREAM_MODEL!r}, 1024, prompt={STREAM_PROMPT!r}, stream=True)\n"
    "client.run(request, trace=view.trace)",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


def demo_run(model: str, max_tokens: int = 1024, **kwargs: object) -> Trace:
    """The demo request run on `model`, as the notebooks run it: the personas are deterministic."""
    with DemoServer() as server, Client(server.base_url) as client:
        request = RunRequest(
            model,
            max_tokens,
            system=DEMO_SYSTEM,
            prompt=DEMO_PROMPT,
            tools=demo_tools(),
            **kwargs,  # type: ignore[arg-type]
        )
        trace = Trace()
        try:
            client.run(request, trace=trace)
        except RigError:
            pass
        return trace


@pytest.fixture(scope="session")
def quickstart_trace() -> Trace:
    return demo_run("qwen3-no-parser")


@pytest.fixture(scope="session")
def injector_trace() -> Trace:
    return demo_run("html-injector")


@pytest.fixture(scope="session")
def leaky_trace() -> Trace:
    return demo_run(LEAKY_MODEL, stream=True, recover_text_tool_calls=True)


@pytest.fixture(scope="session")
def short_trace() -> Trace:
    return demo_run(SHORT_MODEL, SHORT_BUDGET, stream=True)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def server_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory both servers serve: the quickstart and the tier's own notebooks."""
    root = tmp_path_factory.mktemp("root")
    shutil.copyfile(REPO / "notebooks" / QUICKSTART, root / QUICKSTART)
    write_notebook(root / "markup.ipynb", MARKUP_CELLS)
    write_notebook(root / "compare.ipynb", COMPARE_CELLS)
    write_notebook(root / "control.ipynb", CONTROL_CELLS)
    write_notebook(root / "rows.ipynb", ROWS_CELLS)
    write_notebook(root / "layout.ipynb", LAYOUT_CELLS)
    write_notebook(root / "stream.ipynb", STREAM_CELLS)
    return root


@pytest.fixture(scope="session")
def jupyter_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return jupyter_environment(tmp_path_factory.mktemp("jupyter"))


def keep_for_docs(shot: Path) -> None:
    """Copy a screenshot to docs/ (the README's) when missing or when RIG_NB_UPDATE_DOCS=1.

    Latencies and ports differ on every run: refreshing always would dirty the tree each time.
    """
    target = DOCS / shot.name
    if os.environ.get("RIG_NB_UPDATE_DOCS") == "1" or not target.exists():
        DOCS.mkdir(exist_ok=True)
        shutil.copyfile(shot, target)


def _serve(
    name: str, argv: list[str], env: dict[str, str], workdir: Path, probe: str
) -> Iterator[Server]:
    server = start_server(name, argv, env, workdir)
    try:
        server.wait_ready(probe)
        yield server
    finally:
        server.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(server.log_path, ARTIFACTS / server.log_path.name)


@pytest.fixture(scope="session")
def lab(
    jupyter_env: dict[str, str], server_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("lab")
    yield from _serve("jupyterlab", lab_argv(server_root, state), jupyter_env, state, "/api/status")


@pytest.fixture(scope="session")
def voila(
    jupyter_env: dict[str, str], server_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("voila")
    yield from _serve("voila", voila_argv(server_root), jupyter_env, state, "/")


@dataclass
class Browser:
    context: BrowserContext
    offsite: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    profile = tmp_path_factory.mktemp("chromium-profile")
    pw: Playwright
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1600, "height": 1000},
        )
        context.set_default_timeout(TIMEOUT_MS)
        expect.set_options(timeout=TIMEOUT_MS)
        result = Browser(context)

        def guard(route: Route) -> None:
            url = route.request.url
            # file:// is a saved report the test opens itself (tests/browser/test_report.py).
            if url.startswith(("http://127.0.0.1:", "ws://127.0.0.1:", "file://")):
                route.continue_()
                return
            if not url.startswith(VOILA_FONT_AWESOME):
                result.offsite.append(url)
            route.abort()

        context.route("**/*", guard)
        try:
            yield result
        finally:
            context.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    seen = len(browser.offsite)
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
            page.screenshot(path=f"{stem}.png")
            Path(f"{stem}.console.txt").write_text("\n".join(console))
        page.close()
    offsite = browser.offsite[seen:]
    assert offsite == [], f"the page tried to leave 127.0.0.1: {offsite}"
