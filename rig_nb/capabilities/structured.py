"""The doctor's structured-output check: where a `response_format` JSON answer lands.

One request: a short question with `response_format` json_schema (an object
with an integer `answer`), no tools. The verdict says where the JSON came back:

    content       the content is the JSON object itself (what a client parses)
    reasoning     no answer, the JSON object in the reasoning (field or think tags):
                  the schema constrained the reasoning, or the parser took the JSON
                  for reasoning (vllm-project/vllm#48863,
                  lmstudio-ai/lmstudio-bug-tracker#1773)
    ignored       an answer that is not the JSON object (prose, a fenced block):
                  the server did not apply response_format
    error STATUS  the request was refused (LM Studio answers 400 to json_object)
    cancelled     the caller cancelled the report before the reply came
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import strict_json
from ..content import decode_json_object
from ..errors import BackendError, Cancelled, RigError
from ..record import record_one
from ..trace import Trace
from ..wire import Request, Turn
from ..wire.base import profile_of

if TYPE_CHECKING:
    from ..backend import Backend
    from ..servers import Server

__all__ = [
    "STRUCTURED_CHECKS",
    "STRUCTURED_QUESTION",
    "STRUCTURED_SCHEMA",
    "StructuredOutput",
    "structured_output_check",
    "structured_output_verdict",
]

STRUCTURED_CHECKS = ("structured_output",)
STRUCTURED_QUESTION = "What is 17 * 23? Reply with the result as the JSON object asked for."
STRUCTURED_SCHEMA: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "product",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}
_MAX_TOKENS = 512


def _status(trace: Trace) -> str:
    exc = trace.exception
    if isinstance(exc, Cancelled):
        return "cancelled"
    if isinstance(exc, BackendError) and exc.status_code is not None:
        return f"error {exc.status_code}"
    return "error"


def _is_object(text: str) -> bool:
    try:
        value = strict_json.loads(text.strip())
    except ValueError:
        return False
    return isinstance(value, dict)


def structured_output_verdict(trace: Trace) -> str:
    """`content`, `reasoning`, `ignored`, `error STATUS` or `cancelled` for one structured reply."""
    if not trace.iterations or trace.iterations[-1].ending == "error":
        return _status(trace)
    it = trace.iterations[-1]
    if it.text and _is_object(it.text):
        return "content"
    if it.ending == "json_in_reasoning":
        return "reasoning"
    return "ignored"


def _ask(client: Backend, model: str, max_tokens: int) -> Trace:
    request = Request(
        model,
        (Turn("user", STRUCTURED_QUESTION),),
        max_tokens,
        response_format=STRUCTURED_SCHEMA,
    )
    settings = {
        "kind": "structured_output",
        "max_tokens": max_tokens,
        "response_format": STRUCTURED_SCHEMA,
    }
    return record_one(client, request, settings)[0]


def _evidence(trace: Trace, verdict: str, redact: Any) -> str:
    if not trace.iterations:
        return ""
    it = trace.iterations[-1]
    if verdict.startswith("error") or verdict == "cancelled":
        return " ".join(redact(trace.error).split())[:160]
    if verdict == "reasoning":
        held = it.reasoning_content or it.raw_content
        try:
            found = json.dumps(decode_json_object(held))
        except RigError:
            found = held
        where = f"content empty; JSON in {it.reasoning_field or 'think tags'}: {found}"
    else:
        where = f'content "{it.text or it.raw_content}"'
    text = " ".join(redact(where).split())
    return text if len(text) <= 160 else text[:157] + "..."


class StructuredOutput(NamedTuple):
    """What the `structured_output` check found (the doctor makes its Check of it)."""

    verdict: str
    evidence: str
    advice: str
    trace: Trace


def structured_output_check(
    client: Backend, model: str, server: Server | str, *, max_tokens: int = _MAX_TOKENS
) -> StructuredOutput:
    """The `structured_output` check for `endpoint_report` (one request), advice included;
    `server` is a profile or a kind's name."""
    server = profile_of(server)
    trace = _ask(client, model, max_tokens)
    verdict = structured_output_verdict(trace)
    fix = ""
    if verdict == "ignored":
        fix = server.advice("structured_output")
    elif verdict == "reasoning":
        fix = server.advice("structured_output", "reasoning")
    return StructuredOutput(verdict, _evidence(trace, verdict, client.redact), fix, trace)
