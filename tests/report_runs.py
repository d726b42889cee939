"""What the report tests run to get traces: a compare frame and a demo run, keyed."""

from __future__ import annotations

import pandas as pd

from rig_nb import Client, RigError, RunRequest, Trace
from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, XSS_SCRIPT, DemoServer, demo_tools

SECRET = "sk-report-SECRET-4242"
INJECTOR = f"inj{XSS_SCRIPT}"  # an endpoint display name holding markup


def compare_frame(demo: DemoServer, dead_url: str) -> pd.DataFrame:
    """A compare frame of four endpoints, `dead_url` refusing, over three scenarios twice."""
    endpoints = [
        Endpoint("well-behaved", demo.base_url, "well-behaved"),
        Endpoint(INJECTOR, demo.base_url, "html-injector"),
        Endpoint("qwen3-no-parser", demo.base_url, "qwen3-no-parser"),
        Endpoint("dead", dead_url, "m"),
    ]
    weather = Scenario(
        "weather", system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), max_iterations=4
    )
    scenarios = [Scenario("probe", kind="probe"), Scenario("plain", prompt="Hi."), weather]
    return compare(endpoints, scenarios=scenarios, repeats=2, progress=False, timeout=5)


def run_trace(demo: DemoServer, model: str, prompt: str = DEMO_PROMPT) -> Trace:
    """The demo tool run of `model`, keyed with SECRET: its trace, failed or not."""
    with Client(demo.base_url, SECRET) as client:
        request = RunRequest(
            model, 512, system=DEMO_SYSTEM, prompt=prompt, tools=demo_tools(), max_iterations=4
        )
        try:
            return client.run(request).trace
        except RigError as exc:
            assert exc.trace is not None
            return exc.trace
