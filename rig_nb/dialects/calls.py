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
    "Calls",
    "TextToolCall",
    "call_from_object",
    "json_call",
    "make_call",
    "name_ok",
    "record",
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
Calls = list[TextToolCall]


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
    if arguments is _MISSING or (isinstance(arguments, str) and not arguments.strip(WS)):
        return record(dialect, name, "{}")
    if isinstance(arguments, str):
        arguments, error = decode(arguments)
        if error:
            return record(dialect, name, "", error)
        if type(arguments) is dict:
            return make_call(dialect, name, arguments)
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


def _param_value(text: str) -> Any:
    """A written parameter: a JSON number, bool, null, object or array as such, else the text."""
    if text[:1] in _LITERAL_START:
        value, error = decode(text)
        if not error:
            return value
    return text


_PARAM_END = re.compile(r"</parameter>|<parameter=")


def name_ok(name: str) -> bool:
    """A function name as tools declare them: no spaces, quotes or markup."""
    return name.isidentifier() or _NAME_OK.match(name) is not None


def xml_call(dialect: str, name: str, body: str) -> TextToolCall | None:
    """Qwen3-Coder: <parameter=K>\\nV\\n</parameter> in a function body."""
    if not name_ok(name):
        return None
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
        # Qwen3-Coder writes each value on lines of its own.
        value = body[close + 2 if body[close + 1 : close + 2] == "\n" else close + 1 : stop]
        arguments[body[start + 11 : close]] = _param_value(
            value[:-1] if value[-1:] == "\n" else value
        )
    return make_call(dialect, name, arguments)


def _glm_call(text: str) -> TextToolCall | None:
    """GLM: NAME<arg_key>K</arg_key><arg_value>V</arg_value>... inside <tool_call>."""
    find = text.find
    key = find("<arg_key>")
    line = find("\n", 0, key) if key >= 0 else find("\n")
    name = text[: line if line >= 0 else key if key >= 0 else len(text)].strip(WS)
    if not name_ok(name):
        return None
    arguments: dict[str, Any] = {}
    while key >= 0:
        key_end = find("</arg_key>", key)
        value = find("<arg_value>", key_end) if key_end >= 0 else -1
        value_end = find("</arg_value>", value) if value >= 0 else -1
        if value_end < 0:
            return record("tool-call-tag", name, "", "an <arg_key> has no closed <arg_value>")
        arguments[text[key + 9 : key_end].strip(WS)] = _param_value(text[value + 11 : value_end])
        key = find("<arg_key>", value_end + 12)
    return make_call("tool-call-tag", name, arguments)


def tag_body(text: str) -> TextToolCall | None:
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
        return xml_call("function-tag", text[10:close], body if end < 0 else body[:end])
    return _glm_call(text)
