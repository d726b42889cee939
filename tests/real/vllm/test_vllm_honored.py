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
