"""The README's pictures of issue 34: TraceView's timeline in JupyterLab at an 800 px output
width, and Phoenix's own UI showing a rig_nb run exported with export_otlp."""

from __future__ import annotations

from pathlib import Path

import httpx
from conftest import Browser, keep_for_docs
from jupyter_rig import (
    TRACE_VIEW,
    Server,
    expect_no_widget_errors,
    open_in_lab,
    output_with,
    run_all_cells,
    set_output_width,
    trace_rows,
    write_notebook,
)
from phoenix_server import phoenix_server
from playwright.sync_api import Page, expect

from rig_nb import Client, RunRequest
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.report import export_otlp

OUTPUT_PX = 800
MODEL = "reasoning-field"  # three rounds, reasoning in a field, tool calls in the first two
# The demo paced like a server (0.3 s to the first token) and each tool taking 0.2 s, so
# every kind of mark is wide enough to see.
TIMELINE_CELLS = [
    "import time\n"
    "from rig_nb import Client, RunRequest, Tool\n"
    "from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools\n"
    "from rig_nb.widgets import TraceView\n"
    "\n"
    "demo = DemoServer(stream_first_delay=0.3, stream_interval=0.01)\n"
    "demo.start()\n"
    "client = Client(demo.base_url)\n"
    "\n"
    "\n"
    "def slow(t):\n"
    "    def run(args):\n"
    "        time.sleep(0.2)\n"
    "        return t(args)\n"
    "    return Tool(t.name, t.description, t.input_schema, run)",
    "view = TraceView()\n"
    "display(view)\n"
    f"request = RunRequest({MODEL!r}, 1024, system=DEMO_SYSTEM, prompt=DEMO_PROMPT,\n"
    "                     tools=[slow(t) for t in demo_tools()], stream=True)\n"
    "client.run(request, trace=view.trace)",
]


def test_the_timeline_in_lab(page: Page, lab: Server, server_root: Path, artifacts: Path) -> None:
    write_notebook(server_root / "timeline.ipynb", TIMELINE_CELLS)
    open_in_lab(page, lab, "timeline.ipynb")
    run_all_cells(page)
    view = output_with(page, TRACE_VIEW)
    expect(view).to_contain_text("ok, 3 iterations")
    expect(trace_rows(view)).to_have_count(3)
    set_output_width(page, OUTPUT_PX)
    picture = view.locator("svg[role=img]")
    expect(picture).to_have_count(1)
    # Each mark's numbers are its hover text; the kinds the run had are all drawn.
    titles = picture.locator("rect > title").all_text_contents()
    for kind in ("waiting for the first token", "reasoning:", "answer:", "tool get_weather"):
        assert any(kind in t for t in titles), (kind, titles)
    out, svg = view.bounding_box(), picture.bounding_box()
    assert out is not None and svg is not None
    assert out["x"] <= svg["x"] and svg["x"] + svg["width"] <= out["x"] + out["width"] + 0.5
    expect_no_widget_errors(page)
    view.scroll_into_view_if_needed()
    view.screenshot(path=str(artifacts / "timeline.png"))
    keep_for_docs(artifacts / "timeline.png")


def test_phoenix_shows_a_run(
    browser: Browser, demo: DemoServer, artifacts: Path, tmp_path: Path
) -> None:
    traces = []
    with Client(demo.base_url) as client:
        for model in ("hermes-text-tools", MODEL):  # the last sent is listed first
            request = RunRequest(
                model, 1024, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools()
            )
            traces.append(client.run_trace(request))
    with phoenix_server(tmp_path) as phoenix:
        export_otlp(traces, phoenix.traces_url, deadline=30)
        with httpx.Client(trust_env=False, timeout=10) as http:
            projects = http.get(f"{phoenix.base_url}/v1/projects").json()["data"]
        (project,) = [p for p in projects if p["name"] == "default"]
        # Phoenix's page is Phoenix's: what it fetches is not this test's subject, so a page
        # of the context without the offsite check of the `page` fixture.
        page = browser.context.new_page()
        try:
            page.set_viewport_size({"width": OUTPUT_PX, "height": 700})
            page.goto(f"{phoenix.base_url}/projects/{project['id']}")
            expect(page.get_by_text("invoke_agent rig_nb").first).to_be_visible()
            page.get_by_text("invoke_agent rig_nb").first.click()
            expect(page.get_by_text(f"chat {MODEL}").first).to_be_visible()
            # The root span's details, loaded after the tree: its attributes, the outcome.
            expect(page.get_by_text("rig_nb.outcome").first).to_be_visible()
            page.screenshot(path=str(artifacts / "phoenix.png"))
        finally:
            page.close()
    keep_for_docs(artifacts / "phoenix.png")
