"""What to change on the server for a check's verdict: which of the server profile's advice
applies (`rig_nb.servers`: each kind's texts, the base profile's where a kind has none).

`advice(server, check, verdict, auto=...)` picks the fix a verdict calls for, "" when the
verdict needs none. Advice agrees with the other verdicts: "keep tool_choice auto" only
when "auto" got a tool call, and a check that got no reply to judge (`error ...`, `n/a`)
gets none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..dialects import TOOL_CALL_DIALECTS
from ..wire.base import profile_of

if TYPE_CHECKING:
    from ..servers import Server

__all__ = ["LENGTH", "advice"]

# The probe's budget ran out: not the server's fault, whatever its kind.
LENGTH = (
    "inconclusive: the probe's 256-token budget ran out before any tool call, often inside "
    "the reasoning; lower the reasoning effort (reasoning_effort, a thinking switch) or check "
    "with a larger budget"
)


def advice(server: Server | str, check: str, verdict: str, *, auto: str) -> str:
    """The server-side fix for a check's verdict on `server` (a profile, or a kind's name),
    or "" when the verdict needs none.

    `auto` is the verdict of tool_choice_auto: the advice to rely on "auto" holds only
    when it is "tool call" (else the auto row names the fix).
    """
    server = profile_of(server)
    if check.startswith("tool_choice_") and verdict == "length":
        return LENGTH
    if check.startswith("tool_choice_") and verdict == "call in reasoning":
        return server.advice("native_call_hygiene").replace(
            "misread this family's call markup", "left this family's call in the reasoning"
        )
    if check == "tool_choice_auto" and verdict == "text":
        return server.advice("tool_choice_auto")
    if check == "tool_choice_auto" and verdict.startswith("error 4"):
        # A server that refuses "auto" until it is configured for tools says so with a 4xx.
        return server.advice("tool_choice_auto", "rejected")
    if check == "tool_choice_unset" and verdict == "text":
        return server.advice(check) if auto == "tool call" else ""
    if check == "tool_choice_required" and verdict.startswith("error"):
        return server.advice(check) if auto == "tool call" else ""
    if check == "concurrency":  # before the rule below: "errors under load" has advice
        return _concurrency(server, verdict)
    if verdict.startswith("error") or verdict == "n/a":
        return ""
    if check == "reasoning_location" and verdict.startswith("content:"):
        return server.advice("reasoning_location")
    found = set(verdict.split(","))
    if check == "leak_dialects" and "harmony" in found:
        return server.advice("leak_dialects", "harmony")
    if check == "leak_dialects" and found & TOOL_CALL_DIALECTS:
        return server.advice("tool_choice_auto")
    if check == "leak_dialects" and verdict not in ("no", ""):
        return server.advice("reasoning_location")
    if check == "text_tool_calls" and verdict not in ("no", ""):
        fix = server.advice("tool_choice_auto")
        return f"{fix}; meanwhile RunRequest(recover_text_tool_calls=True) runs such calls"
    if check == "native_call_hygiene" and verdict.startswith("markup"):
        return server.advice("native_call_hygiene")
    if check == "native_call_hygiene" and verdict == "empty arguments":
        return server.advice(check, "empty") or server.advice("tool_choice_auto")
    if check == "stream_parity" and verdict.startswith("differs"):
        return server.advice("stream_parity")
    if check == "stream_grammar" and verdict.startswith("faults"):
        return server.advice("stream_grammar")
    if check in ("usage_reported", "reasoning_tokens_reported") and verdict == "no":
        return server.advice(check)
    return ""


def _concurrency(server: Server, verdict: str) -> str:
    if verdict == "crossed":
        return server.advice("concurrency", "crossed")
    if verdict.startswith("errors under load"):
        limited = "429" in verdict or "503" in verdict
        return (
            server.advice("concurrency", "rate_limited")
            if limited
            else server.advice("concurrency")
        )
    if verdict.startswith(("serialized", "partly parallel")):
        return server.advice("concurrency")
    return ""
