"""ProbePanel's Cancel with every deadline the Client takes, None included, against the demo."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from loopback import WAIT_S, CountingGate

from rig_nb.demo import DemoServer
from rig_nb.demo.kit import Stream
from rig_nb.demo.personas import WellBehaved
from rig_nb.testing import Response
from rig_nb.widgets import ProbePanel


class HeldPersona(WellBehaved, CountingGate):
    """The well-behaved persona; its `hold`-th chat request (0-based) waits for `release`."""

    name = "held"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        self.enter()
        return super().reply(request)


@pytest.fixture
def held() -> Iterator[tuple[DemoServer, HeldPersona]]:
    persona = HeldPersona(hold=0)
    with DemoServer(extra_personas=[persona], stream_first_delay=0) as demo:
        yield demo, persona
        persona.release.set()


def test_cancel_without_a_deadline_says_the_reply_is_awaited(
    held: tuple[DemoServer, HeldPersona], caplog: pytest.LogCaptureFixture
) -> None:
    demo, persona = held
    panel = ProbePanel(demo.base_url, "held", deadline=None)
    with caplog.at_level(logging.WARNING):
        panel.button.click()
        assert persona.arrived.wait(WAIT_S)
        panel.cancel_button.click()  # a handler's exception is logged by ipywidgets, not raised
        progress = panel.progress.value
        persona.release.set()
        assert panel.wait(WAIT_S)
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert "cancelling" in progress and "no deadline" in progress
    assert "None" not in progress
    assert panel.last_outcome == "ok"  # the request in flight ended with its reply
    assert panel.progress.value == "cancelled after 1 of 1 request"
    assert not panel.busy and panel.cancel_button.disabled and not panel.button.disabled


def test_a_report_cancelled_without_a_deadline_keeps_what_was_found(
    held: tuple[DemoServer, HeldPersona],
) -> None:
    demo, persona = held
    persona.hold = 1  # the first check answers; the second is in flight at the cancel
    panel = ProbePanel(demo.base_url, "held", deadline=None)
    assert panel.start_report()
    assert persona.arrived.wait(WAIT_S)
    assert panel.cancel()
    assert "no deadline" in panel.progress.value
    persona.release.set()
    assert panel.wait(WAIT_S)
    report = panel.last_report
    assert report is not None
    verdicts = {c.name: c.verdict for c in report.checks}
    assert verdicts["tool_choice_unset"] == "tool call"
    assert verdicts["tool_choice_auto"] == "tool call"
    assert verdicts["structured_output"] == "cancelled"
    assert panel.progress.value.startswith("cancelled after ")
    assert panel.message.value == ""


def test_cancel_with_a_deadline_names_it(held: tuple[DemoServer, HeldPersona]) -> None:
    demo, persona = held
    panel = ProbePanel(demo.base_url, "held", deadline=2.5)
    assert panel.start_probe()
    assert persona.arrived.wait(WAIT_S)
    assert panel.cancel()
    assert "cut by its deadline (2.5 s)" in panel.progress.value
    persona.release.set()
    assert panel.wait(WAIT_S)


@pytest.mark.parametrize(
    ("timeout", "deadline", "name"),
    [
        pytest.param(60.0, 0.0, "deadline", id="zero-deadline"),
        pytest.param(60.0, -1.0, "deadline", id="negative-deadline"),
        pytest.param(60.0, float("nan"), "deadline", id="nan-deadline"),
        pytest.param(None, 300.0, "timeout", id="no-timeout"),
        pytest.param(0.0, 300.0, "timeout", id="zero-timeout"),
    ],
)
def test_bad_timing_is_refused_at_construction(timeout: Any, deadline: Any, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ProbePanel("http://127.0.0.1:9/v1", "m", timeout=timeout, deadline=deadline)
