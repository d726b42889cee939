"""ProbePanel without a browser: the probe it runs, its verdict and report, the key kept out."""

from __future__ import annotations

from widget_tree import all_state

from rig_nb.demo import DemoServer
from rig_nb.testing import Response, ScriptedServer, chat_reply, tool_call
from rig_nb.widgets import ProbePanel

SECRET = "sk-widget-SECRET-4242"


def test_an_unprobed_probe_panel_shows_no_empty_band() -> None:
    panel = ProbePanel()
    assert (panel.base_url.value, panel.model.value) == ("", "")
    hidden = [panel.verdict, panel.error_class, panel.message, panel.report]
    assert all(w.layout.display == "none" for w in hidden)


def test_probe_panel_probes_the_endpoint_it_is_given(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "well-behaved")
    assert panel.probe() == "ok"
    assert panel.verdict.value.startswith("tool calling works")
    assert panel.verdict.layout.display is None
    assert panel.error_class.value == "" and panel.error_class.layout.display == "none"
    panel.stream.value = True
    assert panel.probe() == "ok"
    assert demo.requests[-1].json["stream"] is True


def test_probe_panel_full_report_shows_the_fix(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "qwen3-no-parser")
    panel.report_button.click()  # returns at once: the report runs on a worker thread
    assert panel.wait(timeout=60)
    report = panel.last_report
    assert report is not None
    assert report.check("reasoning_location").verdict == "content:unopened"
    assert panel.report.layout.display is None
    assert "reasoning_location" in panel.report.value and "--reasoning-parser" in panel.report.value


def test_probe_panel_reports_the_error_class(demo: DemoServer) -> None:
    panel = ProbePanel(demo.base_url, "hermes-text-tools")
    panel.button.click()
    assert panel.wait(timeout=60)
    assert panel.verdict.value.startswith("no tool calling")
    assert panel.error_class.value == "error class: NoToolCallingError"
    panel.model.value = "budget-think"
    assert panel.probe() == "OutputLimitError"
    assert panel.verdict.value.startswith("inconclusive")


def test_probe_panel_key_never_shows() -> None:
    echo = {"error": {"message": f"invalid api key {SECRET}", "type": "auth"}}
    with ScriptedServer(
        [Response(echo, status=401), chat_reply(tool_calls=[tool_call("ping")])]
    ) as s:
        panel = ProbePanel(s.base_url, "m")
        panel.key.value = SECRET
        panel.button.click()
        assert panel.wait(timeout=60)
        assert s.requests[0].headers["authorization"] == f"Bearer {SECRET}"
        assert panel.key.value == ""
        assert panel.error_class.value == "error class: BackendError"
        assert "401" in panel.message.value
        for text in (repr(panel), all_state(panel), panel.message.value, panel.verdict.value):
            assert SECRET not in text
        assert panel.probe() == "ok"  # the key stays in memory for the next probe
        assert s.requests[1].headers["authorization"] == f"Bearer {SECRET}"


def test_probe_panel_key_from_python_stays_out_of_widget_state() -> None:
    with ScriptedServer([chat_reply(tool_calls=[tool_call("ping")])]) as s:
        panel = ProbePanel(s.base_url, "m", api_key=SECRET)
        assert SECRET not in all_state(panel) and SECRET not in repr(panel)
        assert panel.probe() == "ok"
        assert s.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_probe_panel_bad_url_is_a_verdict_not_an_exception() -> None:
    panel = ProbePanel("ftp://example.invalid", "m")
    assert panel.probe() == "ValueError"
    assert panel.error_class.value == "error class: ValueError"
