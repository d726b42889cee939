"""The text of one tool call, read into a TextToolCall: JSON, Qwen3-Coder XML, GLM pairs.

Arguments are always the text of a JSON object as json.dumps(value,
allow_nan=False) writes it, or "" with `error` saying why. Every function here
reads the text it is handed once; `scan.py` hands each one a window of
the reply that no other call's window overlaps.
"""

from __future__ import annotations

import json
import json.encoder
import re
from dataclasses import dataclass
from typing import Any

from ._call_json import NAME_IN_JSON, WS, decode

__all__ = [
    "FLAT_FUNCTION",
    "FLAT_TAG",
    "Calls",
    "TextToolCall",
    "call_from_object",
    "json_call",
    "make_call",
    "name_ok",
    "read_flat",
    "record",
    "schemas_of",
    "tag_body",
    "xml_call",
]


@dataclass(frozen=True)
class TextToolCall:
    """A tool call written as text in a reply's content."""

    dialect: str  # one of the recoverable dialects
    name: str  # the function name as written ("" when none could be read)
    arguments: str  # a JSON object as text, ready for json.loads; "" when unreadable
    error: str = ""  # why the call could not be read; "" when fine


_new = object.__new__


def record(dialect: str, name: str, arguments: str, error: str = "") -> TextToolCall:
    """TextToolCall(dialect, name, arguments, error), built without the frozen __init__.

    That __init__ sets each field through object.__setattr__; a megabyte of
    calls is tens of thousands of records, and this halves their cost.
    """
    call = _new(TextToolCall)
    fields = call.__dict__
    fields["dialect"] = dialect
    fields["name"] = name
    fields["arguments"] = arguments
    fields["error"] = error
    return call


def _no_default(value: Any) -> Any:
    raise TypeError(type(value).__name__)


# The C encoder json.dumps(value, allow_nan=False) builds on every call, built
# once; markers=None: decoded values hold no cycles.
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
if _make_encoder is not None:
    _encode = _make_encoder(
        None, _no_default, json.encoder.encode_basestring_ascii, None, ": ", ", ", 0, 0, 0
    )

    def _dump(value: dict[str, Any]) -> str:
        return "".join(_encode(value, 0))
else:  # pragma: no cover - CPython always has _json
    _encoder = json.JSONEncoder(allow_nan=False)

    def _dump(value: dict[str, Any]) -> str:
        return _encoder.encode(value)


_NAME_OK = re.compile(r"[^\W\d][\w.\-/]{0,255}\Z")
_LITERAL_START = frozenset("-0123456789tfn[{ \t\n\r")  # or the whitespace before one
_MISSING: Any = object()
# Per declared tool, per parameter: the JSON types its schema allows (None: no type given).
Schemas = dict[str, dict[str, "frozenset[str] | None"]]


class Calls(list[TextToolCall]):
    """The calls read so far, and the declared tools' parameter types they are read against."""

    def __init__(self, schemas: Schemas | None = None) -> None:
        super().__init__()
        self.schemas = schemas or {}

    def types(self, name: str) -> dict[str, frozenset[str] | None] | None:
        """The parameter types of the declared tool `name`; None when it is not declared."""
        return self.schemas.get(name)


def make_call(dialect: str, name: str, arguments: Any) -> TextToolCall:
    """A call from a name and its arguments: a dict, JSON text, or _MISSING (none given)."""
    if type(arguments) is dict:
        try:
            text = _dump(arguments)
        except (ValueError, RecursionError):
            return record(dialect, name, "", "arguments hold a value that is not JSON")
        call = _new(TextToolCall)  # record(), inlined: this is the path of every call read
        fields = call.__dict__
        fields["dialect"] = dialect
        fields["name"] = name
        fields["arguments"] = text
        fields["error"] = ""
        return call
    if arguments is _MISSING:
        return record(dialect, name, "{}")
    if isinstance(arguments, str):
        value, error = decode(arguments)
        if error and not arguments.strip(WS):  # blank text: no arguments given
            return record(dialect, name, "{}")
        if error:
            return record(dialect, name, "", error)
        if type(value) is dict:
            return make_call(dialect, name, value)
    return record(dialect, name, "", "arguments are not a JSON object")


def call_from_object(dialect: str, value: Any) -> TextToolCall | None:
    """A call written as {"name": ..., "arguments": ...}; arguments may be JSON text."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and "name" not in value:
        value = value["function"]  # OpenAI's shape: {"type": "function", "function": {...}}
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    return make_call(dialect, name, value.get("arguments", value.get("parameters", _MISSING)))


def json_call(dialect: str, text: str) -> TextToolCall | None:
    value, error = decode(text)
    if error:
        found = NAME_IN_JSON.search(text)
        return record(dialect, found.group(1), "", error) if found else None
    return call_from_object(dialect, value)


_TYPE_OF: dict[type, tuple[str, ...]] = {
    str: ("string",),
    bool: ("boolean",),
    int: ("integer", "number"),
    float: ("number",),
    type(None): ("null",),
    dict: ("object",),
    list: ("array",),
}


def _param_value(text: str, types: frozenset[str] | None = None) -> Any:
    """A written parameter, typed by the declared schema's types when there are some.

    Without types: a JSON number, bool, null, object or array as such, else the
    text. With types: the text for a string parameter ("5123123" stays a
    string); for others the JSON value when its type is one allowed, else the
    text (the tool's own validation then names the mismatch).
    """
    if types is not None:
        if types == {"string"}:
            return text
        value, error = decode(text)
        if not error and any(t in types for t in _TYPE_OF.get(type(value), ())):
            return value
        return text
    if text[:1] in _LITERAL_START:
        value, error = decode(text)
        if not error:
            return value
    return text


def _types(schema: Any) -> frozenset[str] | None:
    """The JSON types a parameter schema allows (type, a list of types, anyOf/oneOf, enum)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset((kind,))
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return frozenset(kind)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            found = [_types(o) for o in options]
            if found and all(f is not None for f in found):
                return frozenset().union(*(f for f in found if f is not None))
    values = schema.get("enum")
    if isinstance(values, list) and values:
        return frozenset(n for v in values for n in _TYPE_OF.get(type(v), ())[:1])
    return None


def schemas_of(tools: Any) -> Schemas:
    """Parameter types per declared tool, from rig_nb Tools or OpenAI-style tool dicts.

    A tool given as a Tool (name, input_schema), {"type": "function", "function":
    {...}}, or {"name", "parameters" | "input_schema"}; anything else is skipped.
    """
    found: Schemas = {}
    for t in tools or ():
        if isinstance(t, dict):
            spec = t.get("function", t) if isinstance(t.get("function"), dict) else t
            name = spec.get("name")
            schema = spec.get("parameters", spec.get("input_schema"))
        else:
            name, schema = getattr(t, "name", None), getattr(t, "input_schema", None)
        if not isinstance(name, str):
            continue
        props = schema.get("properties") if isinstance(schema, dict) else None
        found[name] = (
            {k: _types(v) for k, v in props.items() if isinstance(k, str)}
            if isinstance(props, dict)
            else {}
        )
    return found


_PARAM_END = re.compile(r"</parameter>|<parameter=")


def _parameter_text(written: str) -> str:
    """A `<parameter=K>` value as written: Qwen3-Coder puts it on lines of its own (those two
    newlines are not the value's); Seed-OSS writes it inline, where a last newline is."""
    if written[:1] != "\n":
        return written
    return written[1:-1] if written[-1:] == "\n" and len(written) > 1 else written[1:]


def name_ok(name: str) -> bool:
    """A function name as tools declare them: no spaces, quotes or markup."""
    return name.isidentifier() or _NAME_OK.match(name) is not None


def xml_call(
    dialect: str, name: str, body: str, schemas: Schemas | None = None
) -> TextToolCall | None:
    """Qwen3-Coder: <parameter=K>\\nV\\n</parameter> in a function body.

    A body that is a JSON object instead (functionary's `<function=NAME>{...}</function>`)
    is read as the arguments.
    """
    if not name_ok(name):
        return None
    if "<parameter=" not in body and body.lstrip(WS).startswith("{"):
        return make_call(dialect, name, body)
    types = schemas.get(name) if schemas else None
    arguments: dict[str, Any] = {}
    pos = 0
    while (start := body.find("<parameter=", pos)) >= 0:
        close = body.find(">", start + 11)
        if close < 0:
            return record(dialect, name, "", "a <parameter= tag is not closed")
        end = _PARAM_END.search(body, close + 1)
        if end is None:
            stop = pos = len(body)
        else:
            stop = end.start()
            pos = end.end() if end.group() == "</parameter>" else stop
        key = body[start + 11 : close]
        value = _parameter_text(body[close + 1 : stop])
        arguments[key] = _param_value(value, types.get(key) if types else None)
    return make_call(dialect, name, arguments)


_LOOSE = json.JSONDecoder(strict=False)


def _glm_call(text: str, schemas: Schemas | None = None) -> TextToolCall | None:
    """GLM: NAME<arg_key>K</arg_key><arg_value>V</arg_value>... inside <tool_call>.

    A call written JSON-escaped (`todo_write\\n<arg_key>...\\"id\\"...`, as GLM-4.6
    has been seen to) is read once unescaped.
    """
    find = text.find
    key = find("<arg_key>")
    line = find("\n", 0, key) if key >= 0 else find("\n")
    name = text[: line if line >= 0 else key if key >= 0 else len(text)].strip(WS)
    if not name_ok(name):
        if "\\" in name and "\\" in text[:key] and key > 0:
            try:
                plain = _LOOSE.decode('"' + text + '"')
            except (ValueError, RecursionError):
                return None
            return _glm_call(plain, schemas) if "\\" not in plain[: plain.find("<")] else None
        return None
    types = (schemas or {}).get(name, {})
    arguments: dict[str, Any] = {}
    while key >= 0:
        key_end = find("</arg_key>", key)
        value = find("<arg_value>", key_end) if key_end >= 0 else -1
        value_end = find("</arg_value>", value) if value >= 0 else -1
        if value_end < 0:
            return record("tool-call-tag", name, "", "an <arg_key> has no closed <arg_value>")
        key_name = text[key + 9 : key_end].strip(WS)
        arguments[key_name] = _param_value(text[value + 11 : value_end], types.get(key_name))
        key = find("<arg_key>", value_end + 12)
    return make_call("tool-call-tag", name, arguments)


# The common calls whole, with no `<` in any key or value: one match reads the window the
# general readers would find and the pairs in it, with the same result (GLM's keys stripped,
# a Qwen3-Coder value on lines of its own without those newlines). Anything else fails the
# match and goes to the general readers. No two adjacent parts can match the same
# characters, so a failed match costs the length it read, once.
_FUNCTION_BODY = (
    r"([^\s<>]{1,256})>((?:[ \t\r\n]*<parameter=[^<>]*>[^<]*</parameter>)*)[ \t\r\n]*</function>"
)
_GLM_BODY = (
    r"[ \t\r\n]*([^\W\d][\w.\-/]{0,255})[ \t\r\n]*"
    r"((?:<arg_key>[^<]*</arg_key>[ \t\r\n]*<arg_value>[^<]*</arg_value>[ \t\r\n]*)*)</tool_call>"
)
# After `<tool_call>`: Qwen3-Coder's function (groups 1, 2) or GLM's pairs (groups 3, 4).
FLAT_TAG = re.compile(
    r"(?:[ \t\r\n]*<function=" + _FUNCTION_BODY + r"[ \t\r\n]*</tool_call>|" + _GLM_BODY + ")"
)
# After `<function=`: a function, and a `</tool_call>` right after it.
FLAT_FUNCTION = re.compile(_FUNCTION_BODY + r"(?:[ \t\r\n]*</tool_call>)?")
_GLM_PAIR = re.compile(r"<arg_key>([^<]*)</arg_key>[ \t\r\n]*<arg_value>([^<]*)</arg_value>")
_PARAMETER = re.compile(r"<parameter=([^<>]*)>([^<]*)</parameter>")


def read_flat(pattern: re.Pattern[str], s: str, pos: int, endpos: int, calls: Calls) -> int:
    """The call a FLAT_TAG or FLAT_FUNCTION `pattern` reads at s[pos:endpos], appended to
    `calls`, and where it ends; -1 when there is none or its name is not one (then the general
    readers read the window, to the same end).
    """
    found = pattern.match(s, pos, endpos)
    if found is None:
        return -1
    schemas = calls.schemas
    name, params = found.group(1, 2)
    if name is None:
        name, pairs = found.group(3, 4)
        types = schemas.get(name)
        arguments = {
            (k := key.strip(WS)): _param_value(value, types.get(k) if types else None)
            for key, value in _GLM_PAIR.findall(pairs)
        }
        calls.append(make_call("tool-call-tag", name, arguments))
        return found.end()
    if not name_ok(name):
        return -1
    types = schemas.get(name)
    arguments = {
        key: _param_value(_parameter_text(value), types.get(key) if types else None)
        for key, value in _PARAMETER.findall(params)
    }
    calls.append(make_call("function-tag", name, arguments))
    return found.end()


def tag_body(text: str, schemas: Schemas | None = None) -> TextToolCall | None:
    """What <tool_call>...</tool_call> holds: JSON, a Qwen3-Coder function, or GLM."""
    text = text.strip(WS)
    if text.startswith("{"):
        return json_call("tool-call-tag", text)
    if text.startswith("<function="):
        close = text.find(">")
        if close < 0:
            return None
        body = text[close + 1 :]
        end = body.rfind("</function>")
        return xml_call("function-tag", text[10:close], body if end < 0 else body[:end], schemas)
    return _glm_call(text, schemas)
