"""tool_schema_report (the SCHEMA_FEATURES battery) and the doctor's tool_schemas check on the
real vLLM (vllm_server.SERVER_ARGS: --tool-call-parser hermes, --enable-auto-tool-choice,
window 2048, greedy): each feature's verdict as this server gives it, and its own words
(tests/real/FINDINGS.md, "Tool schemas").

A named tool_choice is vLLM's structured-output path for a tool call; what comes back is
validated against the tool's schema with jsonschema, as for any server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from vllm_server import MODEL, TIMEOUT_S, VllmServer

from rig_nb import Client
from rig_nb.capabilities import (
    SCHEMA_FEATURES,
    SchemaReport,
    endpoint_report,
    tool_schema_report,
)

WINDOW_REFUSAL = "This model's maximum context length is 2048 tokens"
# The battery without enum_large (whose 300 values put the whole list past the window).
FITTING = [(f, t) for f, t in SCHEMA_FEATURES if f != "enum_large"]


def _show(name: str, report: SchemaReport) -> None:
    for r in report.rows:
        calls = r.trace.iterations[-1].tool_calls if r.trace and r.trace.iterations else []
        args = calls[0].arguments if calls else ""
        print(f"{name} {r.feature or r.tool:<30} {r.verdict:<14} {r.evidence} | {args}")
    print(f"{name} toolset {report.toolset_tokens} {report.toolset_verdict}")


@pytest.fixture(scope="module")
def vllm_client(vllm: VllmServer) -> Iterator[Client]:
    with Client(vllm.base_url, timeout=TIMEOUT_S) as client:
        yield client


def test_the_whole_battery_is_past_the_window(vllm_client: Client) -> None:
    report = tool_schema_report(vllm_client, MODEL)
    _show("battery", report)
    assert report.server == "vllm"
    assert set(report.verdicts().values()) == {"rejected 400"}
    assert all(WINDOW_REFUSAL in r.evidence for r in report.rows)
    assert (report.toolset_verdict, report.toolset_tokens) == ("rejected 400", None)


# Each tool of the fitting list (all eleven sent with every probe, one named), as seen: a
# call with empty arguments (`fails open`: the first required property missing), or the
# call written as `<tool_call>` text until the 256-token budget ran out (`no call`).
FITTING_SEEN = {
    "record_note": "fails open",
    "set_location": "no call",
    "set_limit": "no call",
    "set_label": "fails open",
    "open_ticket": "no call",
    "schedule_meeting": "fails open",
    "pick_colors": "no call",
    "set_scores": "no call",
    "set_config": "fails open",
    "set_mode": "no call",
    "echo_text": "fails open",
}


def test_the_battery_that_fits(vllm_client: Client) -> None:
    report = tool_schema_report(vllm_client, MODEL, [t for _, t in FITTING])
    _show("fitting", report)
    assert report.verdicts() == FITTING_SEEN
    for r in report.rows:
        if r.verdict == "fails open":
            assert r.evidence.startswith("/: '") and r.evidence.endswith("is a required property")
        else:
            assert "finish length" in r.evidence and "<tool_call>" in r.evidence
    assert report.toolset_verdict == "ok"
    assert report.toolset_tokens is not None and report.toolset_tokens > 500


def test_the_doctor_check(vllm_client: Client) -> None:
    report = endpoint_report(vllm_client, MODEL, checks=["tool_schemas"])
    check = report.check("tool_schemas")
    print("doctor", check.verdict, "|", check.evidence, "|", check.advice)
    assert report.requests == 6
    assert check.verdict == (
        "fails open: ref_defs, any_of_null, pattern_unanchored, format_date_time, nested_3"
    )
    assert "/when: {'type': 'date-time', 'format': 'date-time'} is not of type" in check.evidence
    assert "structured outputs" in check.advice
