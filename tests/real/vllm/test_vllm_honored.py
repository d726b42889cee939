"""The doctor's `honored_params` check against the real vLLM (issue 42): which of
tool_choice, parallel_tool_calls, max_tokens and stop it applies. Verdicts as seen
(tests/real/FINDINGS.md, "Honored parameters")."""

from __future__ import annotations

from vllm_server import MODEL, VllmServer

from rig_nb import Client
from rig_nb.capabilities import endpoint_report


def test_honored_params_on_vllm(vllm: VllmServer) -> None:
    with Client(vllm.base_url, timeout=600) as client:
        report = endpoint_report(client, MODEL, checks=["honored_params"])
    check = report.check("honored_params")
    print(f"\n{report.requests} requests\n  {check.verdict}\n  {check.evidence}\n  {check.advice}")
    assert report.server == "vllm" and report.requests == 6
    # Greedy SmolLM2 behind --tool-call-parser hermes: "required" brings a call (vLLM's
    # grammar); "none" an answer without one. A named tool ran to the 512-token budget with
    # no call parsed, and two cities got no call at all: neither shows what the server did
    # with the setting. The stop answer never listed the words.
    assert check.verdict == "unclear: tool_choice=named, parallel_tool_calls=false, stop"
    assert "tool_choice=required honored (finish tool_calls, called get_weather)" in (
        check.evidence
    )
    assert "tool_choice=none honored (finish length, no tool call)" in check.evidence
    assert "tool_choice=named unclear (finish length, no tool call" in check.evidence
    assert "max_tokens honored (16 completion tokens for max_tokens 16, finish length)" in (
        check.evidence
    )
    assert check.ok is None and check.advice == ""
