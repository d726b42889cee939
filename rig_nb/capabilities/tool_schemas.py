"""Which of your tools this endpoint holds to its schema: `tool_schema_report`.

    report = tool_schema_report(client, "qwen3")            # the SCHEMA_FEATURES battery
    report = tool_schema_report(client, "qwen3", mcp.tools) # your tools, one probe each
    report.to_dataframe()                                    # feature, tool, verdict, evidence

Each probe sends the whole list with a named `tool_choice` for one tool (every wire
translates the chat-shaped choice; Ollama's wire, which has none, sends only that tool) and
a prompt asking for a call with plausible arguments, then validates the call's arguments
against that tool's `input_schema` with `jsonschema` (Draft 2020-12, formats checked; no
remote `$ref` is ever fetched). Then one request with the whole list and no tool choice,
and the same request without tools, measure the list's cost in prompt tokens: at most
`limit + 2` model requests.

Servers fail here in ways a one-tool probe never sees: llama-server generates without
constraints (HTTP 200) when a schema's grammar fails to build (ggml-org/llama.cpp#19051)
and refuses an unanchored `pattern` with a 400 (containers/kubernetes-mcp-server#758);
Ollama strips nested object properties (ollama/ollama#13472); vLLM returned nested
arguments as JSON strings when the schema had `$defs` (vllm-project/vllm#46924).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
import referencing
import referencing.exceptions

from .. import strict_json
from ..errors import BackendError, Cancelled, RigError
from ..record import record_one
from ..servers import server_of_models
from ..tool import Tool
from ..trace import Trace, _pandas
from ..usage import kept_count
from ..wire import Request, ToolSpec, Turn
from .replies import cut, short

if TYPE_CHECKING:
    import pandas as pd

    from ..backend import Backend
    from ..servers import Server

__all__ = [
    "SCHEMA_FEATURES",
    "SCHEMA_VERDICTS",
    "SchemaCheck",
    "SchemaReport",
    "TOOL_SCHEMAS_FEATURES",
    "grouped",
    "probe_tool",
    "tool_schemas_check",
    "tool_schema_report",
]

# The verdicts a probe can give ("rejected" is followed by the status).
SCHEMA_VERDICTS = ("ok", "rejected", "fails open", "args as string", "no call", "stalled")
_MAX_TOKENS = 256
_COST_MAX_TOKENS = 16
_COST_PROMPT = "Reply with the word OK."
# Validation errors looked at for a stringified object: enough for any sane schema.
_ERRORS_SEEN = 64
Redact = Callable[[str], str]


def _object(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), **more}


_NESTED_3 = _object(
    {"server": _object({"limits": _object({"max_connections": {"type": "integer", "minimum": 1}})})}
)

# (feature, tool, prompt): the prompt asks for one value the schema admits.
_BATTERY: tuple[tuple[str, Tool, str], ...] = (
    (
        "plain",
        Tool("record_note", "Record a short note.", _object({"text": {"type": "string"}})),
        'Call record_note with text "hello".',
    ),
    (
        "ref_defs",
        Tool(
            "set_location",
            "Set the current location.",
            {
                **_object({"where": {"$ref": "#/$defs/point"}}),
                "$defs": {"point": _object({"lat": {"type": "number"}, "lon": {"type": "number"}})},
            },
        ),
        "Call set_location with where set to latitude 38.7 and longitude -9.1.",
    ),
    (
        "any_of_null",
        Tool(
            "set_limit",
            "Set the result limit, or null for no limit.",
            _object({"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}),
        ),
        "Call set_limit with limit 10.",
    ),
    (
        "type_list",
        Tool(
            "set_label",
            "Set a label, or null to clear it.",
            _object({"label": {"type": ["string", "null"]}}),
        ),
        'Call set_label with label "urgent".',
    ),
    (
        "pattern_unanchored",
        Tool(
            "open_ticket",
            "Open a ticket by its id: two capital letters, a dash and four digits.",
            _object({"ticket": {"type": "string", "pattern": "[A-Z]{2}-[0-9]{4}"}}),
        ),
        'Call open_ticket with ticket "AB-1234".',
    ),
    (
        "format_date_time",
        Tool(
            "schedule_meeting",
            "Schedule a meeting at an RFC 3339 date-time.",
            _object({"when": {"type": "string", "format": "date-time"}}),
        ),
        'Call schedule_meeting with when "2026-03-14T09:30:00Z".',
    ),
    (
        "min_max_items",
        Tool(
            "pick_colors",
            "Pick two or three colors.",
            _object(
                {
                    "colors": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 2,
                        "maxItems": 3,
                    }
                }
            ),
        ),
        'Call pick_colors with colors "red" and "blue".',
    ),
    (
        "additional_properties_schema",
        Tool(
            "set_scores",
            "Set each player's integer score.",
            _object({"scores": {"type": "object", "additionalProperties": {"type": "integer"}}}),
        ),
        "Call set_scores with scores alice 3 and bob 5.",
    ),
    (
        "enum_large",
        Tool(
            "pick_code",
            "Pick a code from the list.",
            _object({"code": {"type": "string", "enum": [f"code_{i:03d}" for i in range(300)]}}),
        ),
        'Call pick_code with code "code_123".',
    ),
    (
        "nested_3",
        Tool("set_config", "Set the server configuration.", _object({"config": _NESTED_3})),
        "Call set_config with config.server.limits.max_connections 8.",
    ),
    (
        "const",
        Tool("set_mode", "Set the mode (only fast exists).", _object({"mode": {"const": "fast"}})),
        'Call set_mode with mode "fast".',
    ),
    (
        "schema_keyword",
        Tool(
            "echo_text",
            "Echo a text back.",
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                **_object({"text": {"type": "string"}}),
            },
        ),
        'Call echo_text with text "hello".',
    ),
)

SCHEMA_FEATURES: tuple[tuple[str, Tool], ...] = tuple((f, t) for f, t, _ in _BATTERY)
"""The built-in battery: (feature, Tool) for each JSON Schema feature servers break."""
_PROMPTS = {t.name: p for _, t, p in _BATTERY}
_SUFFIX = " Do not answer in text."


@dataclass
class SchemaCheck:
    """One probe: the battery's feature ("" for your tools), the tool's name, the verdict
    (`ok`, `rejected <status>`, `fails open`, `args as string`, `no call`, `stalled`) and its
    evidence (redacted, cut short); `trace` is the probe's request and reply."""

    feature: str
    tool: str
    verdict: str
    evidence: str = ""
    trace: Trace | None = field(default=None, repr=False, compare=False)


@dataclass
class SchemaReport:
    """What `tool_schema_report` found: one `SchemaCheck` per probe, the whole list's cost in
    prompt tokens (None when usage is not reported) and how that request went (`ok`,
    `rejected <status>` or `stalled`)."""

    model: str
    server: str
    rows: list[SchemaCheck] = field(default_factory=list)
    toolset_tokens: int | None = None
    toolset_verdict: str = "ok"

    @property
    def ok(self) -> bool:
        """Every probe `ok`, and the whole list accepted."""
        return all(r.verdict == "ok" for r in self.rows) and self.toolset_verdict == "ok"

    def verdicts(self) -> dict[str, str]:
        """Each row's verdict by feature (or by tool name for your tools)."""
        return {r.feature or r.tool: r.verdict for r in self.rows}

    def to_dataframe(self) -> pd.DataFrame:
        """One row per probe: feature, tool, verdict, evidence."""
        rows = [(r.feature, r.tool, r.verdict, r.evidence) for r in self.rows]
        columns = ["feature", "tool", "verdict", "evidence"]
        df: pd.DataFrame = _pandas().DataFrame(rows, columns=columns)
        return df


def _spec(tool: Tool) -> ToolSpec:
    return ToolSpec(tool.name, tool.description, tool.input_schema)


def _named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def _failed(trace: Trace, redact: Redact) -> tuple[str, str] | None:
    """The verdict of a request that got no reply: `stalled` or `rejected <status>`."""
    exc = trace.exception
    if exc is None:
        return None
    said = short(str(exc).removeprefix("ai backend: "), redact)
    if isinstance(exc, Cancelled):
        return "stalled", "cancelled before the reply came"
    if isinstance(exc, BackendError):
        if exc.kind in ("timeout", "deadline"):
            return "stalled", said
        status = exc.status_code if exc.status_code is not None else exc.kind
        return f"rejected {status}", said
    return f"rejected {type(exc).__name__}", said


def _pointer(path: Iterable[Any]) -> str:
    tokens = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(tokens) if tokens else "/"


def _holds_json(value: Any) -> bool:
    """A string whose JSON is an object or an array."""
    if not isinstance(value, str) or value.strip()[:1] not in ("{", "["):
        return False
    try:
        return isinstance(strict_json.loads(value), (dict, list))
    except ValueError:
        return False


def _declares_container(error: jsonschema.ValidationError) -> bool:
    want = error.validator_value
    kinds = want if isinstance(want, list) else [want]
    return error.validator == "type" and any(k in ("object", "array") for k in kinds)


def validate_arguments(schema: Mapping[str, Any], arguments: Any) -> tuple[str, str]:
    """The verdict of a call's decoded arguments against `schema`: `ok`, `args as string`
    or `fails open`, and the evidence (the first validation error's JSON pointer and
    message, unredacted)."""
    if not isinstance(arguments, dict):
        return "fails open", f"/: the arguments are {type(arguments).__name__}, not an object"
    try:
        validator = jsonschema.Draft202012Validator(
            schema,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
            registry=referencing.Registry(),  # nothing fetched: an unknown $ref is an error
        )
        errors = list(itertools.islice(validator.iter_errors(arguments), _ERRORS_SEEN))
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable) as exc:
        message = getattr(exc, "message", str(exc))
        return "ok", f"not validated: the schema is not usable ({message})"
    if not errors:
        return "ok", ""
    for error in errors:
        if _declares_container(error) and _holds_json(error.instance):
            where = _pointer(error.absolute_path)
            return "args as string", f"{where}: an object or array sent as a JSON string"
    first = jsonschema.exceptions.best_match(errors)
    assert first is not None
    return "fails open", f"{_pointer(first.absolute_path)}: {first.message}"


def probe_tool(
    client: Backend,
    model: str,
    tools: Sequence[Tool],
    tool: Tool,
    *,
    feature: str = "",
    stream: bool = False,
) -> SchemaCheck:
    """One probe: `tools` sent with `tool_choice` naming `tool`, its call's arguments
    validated against `tool.input_schema` (one model request)."""
    prompt = _PROMPTS.get(tool.name) if feature else None
    if prompt is None:
        prompt = (
            f"Call the tool {tool.name} now, with plausible arguments that its "
            "parameters schema admits."
        )
    request = Request(
        model,
        (Turn("user", prompt + _SUFFIX),),
        _MAX_TOKENS,
        tools=tuple(_spec(t) for t in tools),
        tool_choice=_named(tool.name),
        stream=stream,
    )
    settings = {
        "kind": "tool_schema",
        "feature": feature,
        "tool": tool.name,
        "max_tokens": _MAX_TOKENS,
        "tool_choice": _named(tool.name),
        "tools": [t.name for t in tools],
        "api": client.api,
    }
    trace, reply = record_one(client, request, settings)
    redact = client.redact
    failed = _failed(trace, redact)
    if failed is not None or reply is None:
        verdict, evidence = failed or ("stalled", "no reply")
        return SchemaCheck(feature, tool.name, verdict, evidence, trace)
    calls = [c for c in reply.tool_calls if c.name == tool.name]
    if not calls:
        names = ", ".join(c.name or "?" for c in reply.tool_calls)
        why = f"called {names} instead" if names else f"finish {reply.finish_reason or '-'}"
        text = (reply.content or "").strip()
        evidence = f'{why}; content "{text}"' if text else why
        return SchemaCheck(feature, tool.name, "no call", short(evidence, redact), trace)
    raw = calls[0].arguments
    try:
        arguments = strict_json.loads(raw) if raw.strip() else {}
    except ValueError:
        evidence = f"/: the arguments are not JSON: {raw}"
        return SchemaCheck(feature, tool.name, "fails open", short(evidence, redact), trace)
    verdict, evidence = validate_arguments(tool.input_schema, arguments)
    return SchemaCheck(feature, tool.name, verdict, short(evidence, redact), trace)


def _prompt_tokens(trace: Trace) -> int | None:
    if trace.exception is not None or not trace.iterations:
        return None
    return kept_count(trace.iterations[-1].usage.get("prompt_tokens"))


def _cost(
    client: Backend, model: str, tools: Sequence[Tool], stream: bool
) -> tuple[int | None, str]:
    """The whole list's prompt tokens (the request with it, less the same without) and how
    the request with it went (two model requests; one when that one fails)."""

    def ask(specs: tuple[ToolSpec, ...]) -> Trace:
        request = Request(
            model,
            (Turn("user", _COST_PROMPT),),
            _COST_MAX_TOKENS,
            tools=specs,
            tool_choice=None,
            stream=stream,
        )
        settings = {"kind": "toolset_cost", "tools": [s.name for s in specs], "api": client.api}
        return record_one(client, request, settings)[0]

    with_tools = ask(tuple(_spec(t) for t in tools))
    failed = _failed(with_tools, client.redact)
    if failed is not None:
        return None, failed[0]
    listed = _prompt_tokens(with_tools)
    if listed is None:
        return None, "ok"
    bare = _prompt_tokens(ask(()))
    return (None if bare is None else max(0, listed - bare)), "ok"


def _server_kind(client: Backend, model: str) -> str:
    """The server kind from the model list (not a model request): "unknown" when it fails."""
    try:
        models = client.list_models()
    except RigError:
        return "unknown"
    return server_of_models(models, model)


def tool_schema_report(
    client: Backend,
    model: str,
    tools: Iterable[Tool] | None = None,
    *,
    stream: bool = False,
    limit: int = 16,
) -> SchemaReport:
    """Which tools `model` on `client`'s endpoint calls with arguments their schema admits.

    Without `tools`: the built-in battery `SCHEMA_FEATURES`. With tools (yours, or an
    McpTools' `.tools`): one probe per tool, the first `limit` in the order given. Each
    probe sends the whole list with a named `tool_choice`; then one request with the
    whole list and no tool choice, and the same without tools, measure its cost. At most
    `limit + 2` model requests; `stream=True` streams each of them.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError("limit must be an int >= 0")
    if tools is None:
        named = list(SCHEMA_FEATURES)
    else:
        given = list(tools)
        for t in given:
            if not isinstance(t, Tool):
                raise ValueError(f"not a Tool: {type(t).__name__}")
        named = [("", t) for t in given]
    names = [t.name for _, t in named]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"duplicate tool name {', '.join(map(repr, dupes))}")
    listed = [t for _, t in named]
    server = _server_kind(client, model)
    rows = [
        probe_tool(client, model, listed, tool, feature=feature, stream=stream)
        for feature, tool in named[:limit]
    ]
    tokens, verdict = _cost(client, model, listed, stream) if listed else (None, "ok")
    return SchemaReport(model, server, rows, tokens, verdict)


# The doctor's six: the features most agents' tools hold, each probed alone.
TOOL_SCHEMAS_FEATURES = (
    "plain",
    "ref_defs",
    "any_of_null",
    "pattern_unanchored",
    "format_date_time",
    "nested_3",
)
_EVIDENCE_CHARS = 320


def _variant(verdict: str) -> str:
    return verdict.split(" ", 1)[0] if verdict.startswith("rejected") else verdict.replace(" ", "_")


def tool_schemas_check(
    client: Backend, model: str, server: Server
) -> tuple[str, str, str, Trace | None]:
    """The doctor's `tool_schemas` check (six requests, each one battery tool alone with a
    named tool_choice): its verdict (`grouped`), evidence per feature not ok, the server
    profile's advice for each kind of failure, and the first failing probe's trace. When
    `plain`, the control, gets no reply, the verdict is `error <status>` (as every other
    check's for such an endpoint) and the other five are not sent."""
    battery = dict(SCHEMA_FEATURES)
    rows: list[SchemaCheck] = []
    for f in TOOL_SCHEMAS_FEATURES:
        rows.append(probe_tool(client, model, [battery[f]], battery[f], feature=f))
        control = rows[0]
        if control.verdict.startswith(("rejected", "stalled")):
            # The simplest tool got no reply: the endpoint, not a schema, failed (the other
            # checks say `error ...` for it too); nothing more is sent.
            status = control.verdict.removeprefix("rejected").strip() or "timeout"
            return f"error {status}", f"plain: {control.evidence}", "", control.trace
    bad = [r for r in rows if r.verdict != "ok"]
    evidence = "; ".join(f"{r.feature}: {r.evidence or r.verdict}" for r in bad)
    fixes: list[str] = []
    for r in bad:
        fix = server.advice("tool_schemas", _variant(r.verdict))
        if fix and fix not in fixes:
            fixes.append(fix)
    shown = (bad or rows)[0].trace
    return grouped(rows), cut(evidence, _EVIDENCE_CHARS), "; ".join(fixes), shown


def grouped(rows: Iterable[SchemaCheck]) -> str:
    """`ok` when every row is, else the others by verdict in order of first appearance:
    `rejected 400: ref_defs; fails open: format_date_time`."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        if r.verdict != "ok":
            groups.setdefault(r.verdict, []).append(r.feature or r.tool)
    if not groups:
        return "ok"
    return "; ".join(f"{v}: {', '.join(names)}" for v, names in groups.items())
