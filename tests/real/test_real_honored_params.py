"""The doctor's `honored_params` check on a real llama-server (issue 42): which of
tool_choice, parallel_tool_calls, max_tokens and stop it applies. Verdicts as seen
(tests/real/FINDINGS.md, "Honored parameters"); run with `pytest -s` to see them."""

from __future__ import annotations

import pytest
from llama_server_procs import Proc

from rig_nb import Client
from rig_nb.capabilities import endpoint_report

pytestmark = pytest.mark.real


def test_honored_params_on_llama_server_hermes(hermes_tools_server: Proc) -> None:
    # 512-token tool requests of SmolLM2 on two shared cores: a generous timeout.
    with Client(hermes_tools_server.base_url, timeout=600, deadline=900) as client:
        report = endpoint_report(client, hermes_tools_server.model, checks=["honored_params"])
    check = report.check("honored_params")
    print(f"\n{report.requests} requests\n  {check.verdict}\n  {check.evidence}\n  {check.advice}")
    assert report.server == "llama.cpp" and report.requests == 6
    # SmolLM2 made no tool call on any of the four tool requests (not even forced: a named
    # tool ended `stop` in text, "required" ran to its budget), so none of the tool
    # parameters can be judged; the limits can, and llama-server applies both.
    assert check.verdict == (
        "unclear: tool_choice=none, tool_choice=named, tool_choice=required, "
        "parallel_tool_calls=false"
    )
    assert "max_tokens honored (16 completion tokens for max_tokens 16, finish length)" in (
        check.evidence
    )
    assert 'stop honored (the answer ends before "gamma")' in check.evidence
    assert "no request brought a tool call back" in check.evidence
    assert check.ok is None and check.advice == ""
