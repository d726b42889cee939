"""A notebook that never blocks: ProbePanel's work on a worker thread, progress, Cancel;
endpoint_report's progress and cancel between requests."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from loopback import WAIT_S, CountingGate

from rig_nb import Client
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.testing import RecordedRequest, Response, ScriptedServer, chat_reply, tool_call
from rig_nb.widgets import ProbePanel

MODELS = {"object": "list", "data": [{"id": "m", "owned_by": "vllm"}]}


class Gate(CountingGate):
    """Answers every request; the `hold`-th one (0-based) waits until `release` is set."""

    def __call__(self, request: RecordedRequest) -> Any:
        self.enter()
        if request.method == "GET":
            return MODELS
        return chat_reply(tool_calls=[tool_call("ping")])


def server_for(gate: Gate) -> ScriptedServer:
    return ScriptedServer([gate] * 40)


def test_report_progress_counts_requests_done_of_planned() -> None:
    seen: list[tuple[int, int]] = []
    with server_for(Gate()) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", progress=lambda d, p: seen.append((d, p)))
        sent = len(server.requests)
    assert [c.name for c in report.checks] == list(CHECKS)
    assert seen[0] == (0, seen[0][1]) and seen[0][1] >= sent - 1
    assert [d for d, _ in seen] == list(range(sent + 1))
    assert seen[-1] == (sent, max(sent, seen[0][1]))


@pytest.mark.parametrize("kind", ["event", "callable"])
def test_a_report_cancelled_before_it_starts_sends_nothing(kind: str) -> None:
    stop = threading.Event()
    stop.set()
    cancel: Any = stop if kind == "event" else stop.is_set
    with server_for(Gate()) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m", cancel=cancel)
        assert server.requests == []
    assert [c.name for c in report.checks] == list(CHECKS)
    assert all(c.verdict == "cancelled" for c in report.checks), report.checks


def test_bad_progress_or_cancel_is_a_value_error() -> None:
    with server_for(Gate()) as server, Client(server.base_url) as client:
        with pytest.raises(ValueError, match="cancel"):
            endpoint_report(client, "m", cancel="yes")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="progress"):
            endpoint_report(client, "m", progress=3)  # type: ignore[arg-type]
        assert server.requests == []


def test_the_click_returns_while_the_report_runs_and_cancel_keeps_what_was_found() -> None:
    gate = Gate(hold=2)  # the models list and tool_choice unset answer; "auto" is held
    with server_for(gate) as server:
        panel = ProbePanel(server.base_url, "m")
        panel.report_button.click()
        assert gate.arrived.wait(WAIT_S)  # the click handler returned with a request in flight
        assert panel.busy and panel.report_button.disabled and panel.button.disabled
        assert not panel.cancel_button.disabled
        assert panel.progress.value.startswith("2 of ") and panel.progress.value.endswith("done")
        panel.cancel_button.click()
        assert panel.cancel_button.disabled and "cancelling" in panel.progress.value
        gate.release.set()  # the request in flight ends: its answer is kept
        assert panel.wait(WAIT_S)
        sent = len(server.requests)
    assert sent == 3  # nothing after the cancel
    report = panel.last_report
    assert report is not None
    verdicts = {c.name: c.verdict for c in report.checks}
    assert verdicts["tool_choice_unset"] == "tool call"
    assert verdicts["tool_choice_auto"] == "tool call"
    assert verdicts["tool_choice_required"] == "cancelled"
    assert verdicts["structured_output"] == "cancelled"
    assert "<b>cancelled after 3 of " in panel.report.value
    assert panel.progress.value.startswith("cancelled after 3 of ")
    assert not panel.busy and not panel.report_button.disabled and panel.cancel_button.disabled


def test_cancel_during_the_first_request_still_leaves_a_report() -> None:
    gate = Gate(hold=1)  # the first check's request (tool_choice unset) never answers
    with server_for(gate) as server:
        panel = ProbePanel(server.base_url, "m", deadline=1.0)
        assert panel.start_report()
        assert gate.arrived.wait(WAIT_S)
        assert panel.cancel()
        assert panel.wait(WAIT_S)  # the deadline cut the request in flight
        gate.release.set()
        sent = len(server.requests)
    assert sent == 2
    report = panel.last_report
    assert report is not None and [c.name for c in report.checks] == list(CHECKS)
    first = report.check("tool_choice_unset")
    assert first.verdict == "cancelled"
    assert all(c.verdict == "cancelled" for c in report.checks)
    assert "tool_choice_unset" in panel.report.value


def test_clicking_probe_twice_runs_one_probe() -> None:
    gate = Gate(hold=0)
    with server_for(gate) as server:
        panel = ProbePanel(server.base_url, "m")
        panel.button.click()
        assert gate.arrived.wait(WAIT_S)
        panel.button.click()
        panel.report_button.click()
        assert panel.verdict.value == "probing..." and panel.report.value == ""
        assert not panel.start_probe() and not panel.start_report()
        with pytest.raises(RuntimeError, match="busy"):
            panel.probe()
        gate.release.set()
        assert panel.wait(WAIT_S)
        sent = len(server.requests)
    assert sent == 1
    assert panel.last_outcome == "ok" and panel.verdict.value.startswith("tool calling works")
    assert panel.progress.value == "1 of 1 request done"  # not cancelled: the count stays


def test_a_cancelled_probe_says_so() -> None:
    gate = Gate(hold=0)
    with server_for(gate) as server:
        panel = ProbePanel(server.base_url, "m", deadline=1.0)
        panel.button.click()
        assert gate.arrived.wait(WAIT_S)
        panel.cancel()
        assert panel.wait(WAIT_S)
        gate.release.set()
    assert panel.last_outcome == "Cancelled"
    assert panel.verdict.value.startswith("cancelled")
    assert panel.error_class.value == "error class: Cancelled"


def test_cancel_with_nothing_running_does_nothing() -> None:
    panel = ProbePanel("http://127.0.0.1:9/v1", "m")
    assert not panel.cancel() and panel.wait(0)
    assert panel.cancel_button.disabled


def test_the_worker_only_sets_widget_values() -> None:
    """An Output context captures the thread that entered it: the panel holds none."""
    import inspect

    import ipywidgets as widgets

    from rig_nb.widgets import probe_panel

    def walk(w: Any) -> list[Any]:
        return [w, *(x for c in getattr(w, "children", ()) for x in walk(c))]

    panel = ProbePanel("http://127.0.0.1:9/v1", "m")
    assert not any(isinstance(w, widgets.Output) for w in walk(panel))
    source = inspect.getsource(probe_panel)
    assert "widgets.Output" not in source and "display(" not in source


def test_a_failing_report_is_shown_and_frees_the_buttons() -> None:
    def refuse(request: RecordedRequest) -> Response:
        return Response({"error": {"message": "no"}}, status=503)

    with ScriptedServer([refuse] * 40) as server:
        panel = ProbePanel(server.base_url, "m")
        report = panel.full_report()
    assert report is not None and report.check("tool_choice_auto").verdict == "error 503"
    assert not panel.busy and not panel.report_button.disabled and not panel.button.disabled
