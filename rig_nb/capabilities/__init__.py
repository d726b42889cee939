"""The endpoint doctor: what an endpoint really does, and what to change on the server.

report = endpoint_report(client, "qwen3")
report.server                      # "vllm", "llama.cpp", ... or "unknown"
report.to_dataframe()              # check, verdict, evidence, advice

doctor.py      endpoint_report, the checks of one request each, the server kind
thinking.py    reasoning across turns: reasoning_replay, thinking_switch
structured.py  structured_output (where a response_format answer lands)
api_parity.py  the probe and the question over both wires
advice.py      the server-side fix for a verdict, by server kind
"""

from .doctor import (
    CHECKS,
    NOT_OPENAI_COMPATIBLE,
    TOOL_CHOICES,
    Check,
    EndpointReport,
    describe_report,
    endpoint_report,
    guess_server,
    server_of_models,
    tool_choice_matrix,
    tool_choice_verdict,
)

__all__ = [
    "CHECKS",
    "NOT_OPENAI_COMPATIBLE",
    "TOOL_CHOICES",
    "Check",
    "EndpointReport",
    "describe_report",
    "endpoint_report",
    "guess_server",
    "server_of_models",
    "tool_choice_matrix",
    "tool_choice_verdict",
]
