"""The command line's --thinking and --reasoning-replay, for run and compare, on the demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import cli

from rig_nb import Trace
from rig_nb.demo import DEMO_PROMPT, DemoServer


def _run(capsys: pytest.CaptureFixture[str], demo: DemoServer, model: str, *flags: str) -> Trace:
    args = ("run", "--base-url", demo.base_url, "--model", model, "--prompt", DEMO_PROMPT)
    ran = cli(capsys, *args, "--demo-tools", "--json", *flags)
    return Trace.from_json(ran.stdout)


@pytest.mark.parametrize(
    ("flag", "sent"),
    [
        pytest.param(
            "off",
            {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}},
            id="off",
        ),
        pytest.param(
            "on", {"chat_template_kwargs": {"enable_thinking": True, "thinking": True}}, id="on"
        ),
        pytest.param(
            "high",
            {
                "chat_template_kwargs": {"enable_thinking": True, "thinking": True},
                "reasoning_effort": "high",
            },
            id="effort",
        ),
        pytest.param("300", {"thinking_token_budget": 300}, id="budget"),
    ],
)
def test_run_takes_thinking(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, flag: str, sent: dict[str, object]
) -> None:
    trace = _run(capsys, demo, "honors-thinking-switch", "--thinking", flag)
    assert trace.outcome == "ok"
    assert trace.iterations[0].thinking_sent == sent
    assert all(bool(it.reasoning_content) is (flag != "off") for it in trace.iterations)


def test_run_takes_reasoning_replay(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    trace = _run(capsys, demo, "deepseek-thinking-tools", "--reasoning-replay", "none")
    assert trace.outcome == "BackendError"
    assert "Missing `reasoning_content` field" in trace.error
    replayed = _run(capsys, demo, "deepseek-thinking-tools")
    assert replayed.outcome == "ok"
    assert replayed.iterations[0].replayed == "reasoning_content"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(("--thinking", "maybe"), "expected on, off, low", id="thinking"),
        pytest.param(("--thinking", "-5"), "expected on, off, low", id="negative"),
        pytest.param(("--reasoning-replay", "some"), "invalid choice", id="replay"),
    ],
)
def test_bad_values_are_usage_errors(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, flags: tuple[str, ...], message: str
) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", "well-behaved", "--prompt", "hi")
    before = len(demo.requests)
    ran = cli(capsys, *args, *flags)
    assert ran.returncode == 2
    assert message in ran.stderr
    assert len(demo.requests) == before


def test_compare_takes_both(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    toml = tmp_path / "endpoints.toml"
    toml.write_text(
        f'[[endpoint]]\nname = "ds"\nbase_url = "{demo.base_url}"\n'
        'model = "deepseek-thinking-tools"\n'
    )
    ran = cli(capsys, "compare", str(toml), "--json", "--reasoning-replay", "none")
    rows = {r["scenario"]: r for r in json.loads(ran.stdout)}
    assert rows["tool round trip"]["outcome"] == "BackendError"
    assert ran.returncode == 1
    ran = cli(capsys, "compare", str(toml), "--json", "--thinking", "off")
    rows = {r["scenario"]: r for r in json.loads(ran.stdout)}
    assert rows["tool round trip"]["outcome"] == "ok"
