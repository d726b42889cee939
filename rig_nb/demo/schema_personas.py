"""Demo personas for tool schemas: a server that refuses them, ignores them, or stringifies.

A forced call (a named `tool_choice`) gets arguments built from the tool's schema
(`held_arguments`): what a server whose grammar holds the model to the schema gives,
taking quoted values from the prompt where the schema admits them. `well-behaved` calls
that way too. Each persona here then breaks it as a real server did, and names its source.
Each docstring also says how the demo run ends on it (see `rig_nb.demo.personas`).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing

from ..testing import Response
from ..wire import ToolSpec
from .kit import Heard, Persona, Said, Stream

__all__ = [
    "ArgsAsString",
    "SchemaFailsOpen",
    "SchemaRejecting",
    "held_arguments",
    "held_call",
    "matching",
    "schema_personas",
]

_QUOTED = re.compile(r'"([^"]*)"')
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_DATE_TIME = "2026-01-02T03:04:05Z"
_FORMATS = {
    "date-time": _DATE_TIME,
    "date": "2026-01-02",
    "time": "03:04:05Z",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}
# What a server that ignores format, pattern and enum writes for such a string.
_IGNORED = "any text"
# Deeper than this, a schema's value is {} (a recursive $ref ends here).
_DEPTH = 16


# Python's own regex parser: a string a pattern matches is built from its parse tree.
_PARSER: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")
_CATEGORY = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_WORD": "a",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_NOT_WORD": " ",
    "CATEGORY_NOT_SPACE": "a",
}


def _one_of(items: Any) -> str:
    """A character of a class (`[...]`), or "a" for a negated one (checked after)."""
    for op, value in items:
        name = str(op)
        if name == "NEGATE":
            return "a"
        if name == "LITERAL":
            return chr(value)
        if name == "RANGE":
            return chr(value[0])
        if name == "CATEGORY":
            return _CATEGORY.get(str(value), "a")
    return "a"


def _text(parsed: Any, depth: int = 0) -> str:
    """The shortest string the parse tree spells (each repeat at its least, the first branch)."""
    if depth > _DEPTH:
        raise ValueError("pattern too deep")
    out: list[str] = []
    for op, value in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name == "NOT_LITERAL":
            out.append("b" if chr(value) == "a" else "a")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_one_of(value))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = value
            out.append(_text(sub, depth + 1) * low)
        elif name == "SUBPATTERN":
            out.append(_text(value[-1], depth + 1))
        elif name == "BRANCH":
            out.append(_text(value[1][0], depth + 1))
        elif name == "ATOMIC_GROUP":
            out.append(_text(value, depth + 1))
    return "".join(out)


def matching(pattern: str) -> str | None:
    """A short string `pattern` matches (searched, as JSON Schema's `pattern` is), or None
    when none is found this way."""
    try:
        found = _text(_PARSER.parse(pattern))
        return found if re.search(pattern, found) else None
    except (re.error, ValueError, TypeError, IndexError, RecursionError):
        return None


def _admits(schema: Mapping[str, Any], value: Any) -> bool:
    try:
        validator = jsonschema.Draft202012Validator(
            schema,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
            registry=referencing.Registry(),
        )
        return bool(validator.is_valid(value))
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable):
        return False


def _null(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "null"


class _Maker:
    """Builds a value a schema admits; `open_` ignores format, pattern, enum and minItems."""

    def __init__(self, root: Mapping[str, Any], prompt: str, open_: bool = False) -> None:
        self.root = root
        self.quoted = _QUOTED.findall(prompt)
        self.numbers = [float(n) for n in _NUMBER.findall(prompt)]
        self.used: set[str] = set()
        self.open = open_

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for token in [t for t in ref[1:].split("/") if t]:
            token = token.replace("~1", "/").replace("~0", "~")
            node = node.get(token) if isinstance(node, Mapping) else None
        return node if isinstance(node, Mapping) else {}

    def value(self, schema: Any, depth: int = 0) -> Any:
        if not isinstance(schema, Mapping) or depth > _DEPTH:
            return {}
        if isinstance(schema.get("$ref"), str):
            return self.value(self._resolve(schema["$ref"]), depth + 1)
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum and not self.open:
            named = [q for q in self.quoted if q in enum]
            return named[0] if named else enum[0]
        for key in ("anyOf", "oneOf", "allOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                typed = [
                    b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")
                ]
                return self.value((typed or branches)[0], depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
        if kind is None:
            kind = "object" if "properties" in schema else "string"
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind in ("integer", "number"):
            return self._number(schema, kind)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(schema)

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = schema.get("required")
        names = [str(n) for n in required] if isinstance(required, list) else list(props)
        out = {n: self.value(props.get(n, {}), depth + 1) for n in names}
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, Mapping):
            for name in ("alice", "bob"):
                out[name] = self.value(extra, depth + 1)
        return out

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        if self.open:
            return []
        low = schema.get("minItems", 1)
        count = low if isinstance(low, int) and not isinstance(low, bool) else 1
        return [self.value(schema.get("items", {}), depth + 1) for _ in range(max(count, 1))]

    def _number(self, schema: Mapping[str, Any], kind: str) -> int | float:
        for n in self.numbers:
            value: int | float = int(n) if n.is_integer() else n
            if (kind == "number" or isinstance(value, int)) and _admits(schema, value):
                self.numbers.remove(n)
                return value
        low = schema.get("minimum", 1)
        value = low if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
        return int(value) if kind == "integer" else value

    def _string(self, schema: Mapping[str, Any]) -> str:
        if self.open and any(k in schema for k in ("format", "pattern", "enum")):
            return _IGNORED
        for q in self.quoted:
            if q not in self.used and _admits(schema, q):
                self.used.add(q)
                return str(q)
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            return _FORMATS[fmt]
        pattern = schema.get("pattern")
        found = matching(pattern) if isinstance(pattern, str) else None
        return found if found is not None else "hello"


def held_arguments(spec: ToolSpec, prompt: str, *, open_: bool = False) -> dict[str, Any]:
    """Arguments for `spec` that its schema admits, quoted values from `prompt` first; with
    `open_`, arguments that ignore format, pattern, enum and minItems (as a server whose
    grammar failed to build lets the model write)."""
    value = _Maker(spec.parameters, prompt, open_).value(spec.parameters)
    return value if isinstance(value, dict) else {}


def _loose(schema: Mapping[str, Any]) -> bool:
    """The schema holds a keyword a failed grammar lets the model ignore."""
    return any(k in ("format", "pattern", "enum", "minItems") for _, k, _ in _walk(schema))


def held_call(turn: Heard, *, open_: bool = False) -> Said:
    """The reply of a server whose grammar holds the model to each tool's schema: the
    diligent plan (`Heard.plan`: a named tool_choice forces its tool), each call's
    arguments as the prompt and results give them when the schema admits them, else built
    from the schema. With `open_`, the grammar failed to build: arguments of a schema with
    format, pattern, enum or minItems ignore those."""
    plan = turn.plan()
    if not plan:
        return Said(turn.answer())
    specs = {t.name: t for t in turn.tools}
    calls: list[tuple[str, Mapping[str, Any] | str]] = []
    for name, args in plan:
        spec = specs.get(name)
        if spec is not None:
            loose = open_ and _loose(spec.parameters)
            if loose or not _admits(spec.parameters, args):
                args = held_arguments(spec, turn.prompt, open_=open_)
        calls.append((name, args))
    return Said(None, calls)


def _walk(schema: Any) -> list[tuple[str, Any, Any]]:
    """Every (pointer, key, value) in `schema`, iteratively."""
    found: list[tuple[str, Any, Any]] = []
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        where, node = stack.pop()
        items = node.items() if isinstance(node, Mapping) else enumerate(node)
        for key, value in items:
            found.append((where, key, value))
            if isinstance(value, (Mapping, list)):
                stack.append((f"{where}/{key}", value))
    return found


def _conversion_errors(tools: list[ToolSpec]) -> list[str]:
    """What llama.cpp's json-schema-to-grammar says of these tools' schemas, in order."""
    said: list[str] = []
    for spec in tools:
        for _, key, value in sorted(_walk(spec.parameters), key=lambda f: f[0]):
            if key == "$ref" and isinstance(value, str):
                token = value.lstrip("#/").split("/")[0] or value
                said.append(f"Error resolving ref {value}: {token} not in {{}}")
            elif key == "pattern" and isinstance(value, str):
                if not (value.startswith("^") and value.endswith("$")):
                    said.append("Pattern must start with '^' and end with '$'")
    return said


class SchemaRejecting(Persona):
    """llama-server refusing a tool list it cannot turn into a grammar: HTTP 400.

    llama.cpp's json-schema-to-grammar refuses a `pattern` that is not anchored
    (`Pattern must start with '^' and end with '$'`; kubernetes-mcp-server#758, the same
    in Ollama and LM Studio) and a `$ref` it cannot resolve inside its tool-call wrapper
    (`Error resolving ref ...`), and the server answers the whole request
    `{"error": {"code": 400, "message": "JSON schema conversion failed:\\n<reasons>",
    "type": "invalid_request_error"}}` (the body quoted from ggml-org/llama.cpp#19716).
    Here any tool in the list with a `$ref` or an unanchored `pattern` gets that 400;
    other lists are answered as `well-behaved` does.

    Demo run: ends `answer` after two tool rounds, outcome ok (the demo's tools hold neither).
    """

    name = "schema-rejecting"
    owned_by = "llamacpp"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        reasons = _conversion_errors(turn.tools)
        if reasons:
            message = "JSON schema conversion failed:\n" + "\n".join(reasons)
            error = {"code": 400, "message": message, "type": "invalid_request_error"}
            return Response({"error": error}, 400)
        return self.finish(turn, self.respond(turn))

    def respond(self, turn: Heard) -> Said:
        return held_call(turn)


class SchemaFailsOpen(Persona):
    """llama-server whose grammar for the tools failed to build: it generates unconstrained.

    When a schema's grammar fails to build, llama-server answers HTTP 200 and lets the
    model write what it likes (ggml-org/llama.cpp#19051): the arguments ignore `format`,
    `pattern`, `enum` and `minItems`. Here a forced call's arguments do so: such a string
    is "any text", such an array is empty; everything else holds.

    Demo run: ends `answer` after two tool rounds, outcome ok (the demo's tools use none).
    """

    name = "schema-fails-open"
    owned_by = "llamacpp"

    def respond(self, turn: Heard) -> Said:
        return held_call(turn, open_=True)


class ArgsAsString(Persona):
    """vLLM sending a nested object argument as a string holding its JSON.

    With a tool schema holding `$defs`, vLLM returned the nested arguments as JSON
    strings: `{"where": "{\\"lat\\": 38.7, ...}"}` instead of an object
    (vllm-project/vllm#46924). Here every argument whose value is an object is sent so.

    Demo run: ends `answer` after two tool rounds, outcome ok (the demo's tools take no objects).
    """

    name = "args-as-string"
    owned_by = "vllm"

    def respond(self, turn: Heard) -> Said:
        said = held_call(turn)
        calls = [
            (
                name,
                {k: json.dumps(v) if isinstance(v, dict) else v for k, v in args.items()}
                if isinstance(args, Mapping)
                else args,
            )
            for name, args in said.tool_calls
        ]
        return Said(said.content, calls)


def schema_personas() -> list[Persona]:
    """The personas whose servers break tool schemas."""
    return [SchemaRejecting(), SchemaFailsOpen(), ArgsAsString()]
