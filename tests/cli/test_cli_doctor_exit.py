"""`doctor` exits 0 when the report is ok, 1 when not, 2 on a usage error (DESIGN Round 5):
the demo personas that write every call as text and that cross streams under load fail the
checks that catch them (`Check.ok` False) and the command exits 1."""

from __future__ import annotations

import json

import pytest
from cli_helpers import cli

from rig_nb.demo import DemoServer


@pytest.mark.parametrize(
    ("model", "checks", "failed"),
    [
        pytest.param(
            "hermes-text-tools",
            "tool_choice_auto,text_tool_calls,leak_dialects",
            {"tool_choice_auto", "text_tool_calls", "leak_dialects"},
            id="calls-as-text",
        ),
        pytest.param("crossed-streams", "concurrency", {"concurrency"}, id="crossed-streams"),
        pytest.param(
            "well-behaved", "tool_choice_auto,text_tool_calls,concurrency", set(), id="ok"
        ),
    ],
)
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_doctor_exits_1_when_a_check_fails(
    capsys: pytest.CaptureFixture[str],
    demo: DemoServer,
    model: str,
    checks: str,
    failed: set[str],
    as_json: bool,
) -> None:
    args = ("doctor", "--base-url", demo.base_url, "--model", model, "--checks", checks)
    ran = cli(capsys, *args, "--json") if as_json else cli(capsys, *args)
    assert ran.returncode == (1 if failed else 0), ran.stdout + ran.stderr
    if as_json:
        report = json.loads(ran.stdout)
        assert {c["name"] for c in report["checks"] if c["ok"] is False} == failed
        assert report["ok"] is not failed


def test_doctor_exits_2_on_a_usage_error(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    ran = cli(capsys, "doctor", "--base-url", demo.base_url, "--model", "m", "--checks", "nope")
    assert ran.returncode == 2
