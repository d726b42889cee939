"""Calls in the markup of MiniMax, Gemma 4 and DeepSeek V3/R1/V3.1, read for the scan.

- MiniMax-M2 (llama.cpp's models/templates/MiniMax-M2.jinja, vLLM's minimax_m2 parser):
  ``<minimax:tool_call>\\n<invoke name="get_time">\\n<parameter name="city">Tokyo</parameter>\\n
  </invoke>\\n</minimax:tool_call>``.
- MiniMax-M3 (llama.cpp's MiniMax-M3.jinja): the same invoke with each tag behind the
  ``]<]minimax[>[`` delimiter and parameters as ``<city>Tokyo</city>``, in ``<tool_call>``.
- Gemma 4 (llama.cpp's google-gemma-4-31B-it.jinja, vLLM's gemma4 parser):
  ``<|tool_call>call:get_time{city:<|"|>London<|"|>}<tool_call|>``: bare keys, strings
  between ``<|"|>`` tokens.
- DeepSeek V3.1 (deepseek-ai-DeepSeek-V3.1.jinja): ``<\\uff5ctool\\u2581calls\\u2581begin\\uff5c>
  <\\uff5ctool\\u2581call\\u2581begin\\uff5c>get_time<\\uff5ctool\\u2581sep\\uff5c>{"city": "Paris"}
  <\\uff5ctool\\u2581call\\u2581end\\uff5c>...``; V3 and R1 write ``function<\\uff5ctool\\u2581sep
  \\uff5c>NAME\\n```json\\n{...}\\n```\\u0060`` in the same call tokens. ASCII bars (``<|tool\\u2581
  call\\u2581begin|>``) are read too.

Each handler has the scan's signature (`scan.py`): it reads the call whose opener
ends at `end`, within `bound`, and returns where the scan resumes; every search
runs forward from `end`, so each character is looked at a bounded number of times.
"""

from __future__ import annotations

import json
import json.encoder
import re
from typing import Any

from ._call_json import WS, decode
from .calls import Calls, _param_value, make_call, name_ok, record

__all__ = [
    "DEEPSEEK_CALL",
    "GEMMA_CALL",
    "MINIMAX_CALL",
    "MINIMAX_DELIMITED",
    "DSML_CALLS",
    "deepseek",
    "dsml",
    "gemma",
    "minimax",
    "minimax_delimited",
]

MINIMAX_CALL = "<minimax:tool_call>"
MINIMAX_DELIM = "]<]minimax[>["
MINIMAX_DELIMITED = MINIMAX_DELIM + "<tool_call>"
GEMMA_CALL = "<|tool_call>"
DSML = "\uff5cDSML\uff5c"
DSML_CALLS = re.compile(f"<{DSML}(?:function|tool)_calls>")
_STRING = frozenset(("string",))
_BAR = "[\uff5c|]"
DEEPSEEK_CALL = f"<{_BAR}tool\u2581call\u2581begin{_BAR}>"

_MINIMAX_END = re.compile(r"</minimax:tool_call>|<minimax:tool_call>")
_DELIMITED_END = re.compile(
    re.escape(MINIMAX_DELIM + "</tool_call>") + "|" + re.escape(MINIMAX_DELIMITED)
)
_INVOKE = re.compile(r'<invoke name="([^"<>\n]{1,256})">')
_M3_PARAM = re.compile(r"<([^\s<>/]{1,256})>")
_DSML_END = re.compile(f"</{DSML}(?:function|tool)_calls>|<{DSML}(?:function|tool)_calls>")
_GEMMA_END = re.compile(r"<tool_call\|>|<\|tool_call>")
_GEMMA_HEAD = re.compile(r"[ \t\r\n]*call:([^\s{<]{1,256})[ \t\r\n]*")
# A bare key of a Gemma object: after '{' or ',' (outside strings, which are cut out first).
_GEMMA_KEY = re.compile(r"([{,][ \t\r\n]*)([^\W\d][\w.\-]*)[ \t\r\n]*:")
_GEMMA_QUOTE = '<|"|>'
_DEEPSEEK_END = re.compile(f"<{_BAR}tool\u2581call\u2581end{_BAR}>|{DEEPSEEK_CALL}")
_DEEPSEEK_SEP = re.compile(f"<{_BAR}tool\u2581sep{_BAR}>")


def _window(
    masked: str, end: int, bound: int, closer: re.Pattern[str], last: str
) -> tuple[int, int]:
    """(where the call's text stops, where the scan resumes); (-1, bound): drafted in reasoning."""
    close = closer.search(masked, end, bound)
    if close is None:
        return (bound, bound) if bound == len(masked) else (-1, bound)
    closing = close.group() == last or (not last and close.group().startswith("</"))
    return close.start(), close.end() if closing else close.start()


def _invokes(
    dialect: str, body: str, calls: Calls, param: re.Pattern[str] | None, close_of: str
) -> None:
    """Each `<invoke name="N">...</invoke>` of a MiniMax body, its parameters typed by schema."""
    pos = 0
    while (found := _INVOKE.search(body, pos)) is not None:
        name = found.group(1)
        stop = body.find("</invoke>", found.end())
        inner = body[found.end() : stop if stop >= 0 else len(body)]
        pos = stop + 9 if stop >= 0 else len(body)
        if not name_ok(name):
            continue
        types = calls.types(name) or {}
        arguments: dict[str, Any] = {}
        at = 0
        failed = False
        attributes = ""
        while not failed:
            if param is None:
                start = inner.find('<parameter name="', at)
                if start < 0:
                    break
                key_end = inner.find('">', start + 17)
                if key_end < 0:
                    break
                key, _, attributes = inner[start + 17 : key_end].partition('"')
                value_at = key_end + 2
                close = inner.find(close_of, value_at)
            else:
                tag = param.search(inner, at)
                if tag is None:
                    break
                key, value_at = tag.group(1), tag.end()
                close = inner.find(f"</{key}>", value_at)
            if close < 0:
                calls.append(record(dialect, name, "", f"parameter {key!r} is not closed"))
                failed = True
                break
            value, kind = inner[value_at:close].strip(WS), types.get(key)
            if param is None and 'string="true"' in attributes:
                kind = _STRING  # DSML says which values are strings
            nested = (
                _nested(value, 0) if param is not None and kind != frozenset(("string",)) else None
            )
            arguments[key] = _param_value(value, kind) if nested is None else nested
            at = close + (len(close_of) if param is None else len(key) + 3)
        if not failed:
            calls.append(make_call(dialect, name, arguments))


def _nested(text: str, depth: int) -> Any:
    """MiniMax-M3's objects and arrays written as tags: `<k>v</k>...`, `<item>` for elements.

    None when text is not a run of such tags (it is then a scalar). Depth is capped,
    so each character is read at most that many times.
    """
    if depth > 8 or not text.startswith("<") or text.startswith("</"):
        return None
    pairs: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        tag = _M3_PARAM.match(text, pos)
        if tag is None:
            return None
        key = tag.group(1)
        close = text.find(f"</{key}>", tag.end())
        if close < 0:
            return None
        inner = text[tag.end() : close].strip(WS)
        sub = _nested(inner, depth + 1)
        pairs.append((key, _param_value(inner) if sub is None else sub))
        pos = close + len(key) + 3
        while pos < len(text) and text[pos] in WS:
            pos += 1
    if pairs and all(key == "item" for key, _ in pairs):
        return [value for _, value in pairs]
    return dict(pairs)


def minimax(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    stop, pos = _window(masked, end, bound, _MINIMAX_END, "</minimax:tool_call>")
    if stop >= 0:
        _invokes("minimax-tool-calls", s[end:stop], calls, None, "</parameter>")
    return pos


def minimax_delimited(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    last = MINIMAX_DELIM + "</tool_call>"
    stop, pos = _window(masked, end, bound, _DELIMITED_END, last)
    if stop >= 0:
        body = s[end:stop].replace(MINIMAX_DELIM, "")
        _invokes("minimax-tool-calls", body, calls, _M3_PARAM, "")
    return pos


def dsml(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    """DeepSeek V3.2 (and V4): MiniMax's invoke, every tag behind the DSML marker."""
    stop, pos = _window(masked, end, bound, _DSML_END, "")
    if stop >= 0:
        _invokes("dsml", s[end:stop].replace(DSML, ""), calls, None, "</parameter>")
    return pos


def _quote_key(key: re.Match[str]) -> str:
    return f'{key[1]}"{key[2]}":'


_string: Any = json.encoder.encode_basestring  # C: quoted and escaped


def _gemma_json(text: str) -> str:
    """Gemma's object notation as JSON: `<|"|>` strings quoted, bare keys quoted."""
    parts = text.split(_GEMMA_QUOTE)
    parts[1::2] = map(_string, parts[1::2])
    parts[0::2] = [_GEMMA_KEY.sub(_quote_key, p) if ":" in p else p for p in parts[0::2]]
    return "".join(parts)


# One `key:value` of a flat Gemma object: a `<|"|>` string or a scalar literal.
_GEMMA_PAIR = re.compile(r'([^\W\d][\w.\-]*):(?:<\|"\|>(.*?)<\|"\|>|([^,{}\[\]<"]*))(,|\Z)', re.S)


def _gemma_flat(text: str) -> dict[str, Any] | None:
    """A flat Gemma object read directly (no JSON text built); None when it is not flat."""
    inner = text[1:-1]
    found: dict[str, Any] = {}
    pos = 0
    # Each pair matched where the last ended: a search would try every later position,
    # each one scanning a word or an unclosed string to the end (quadratic).
    while pos < len(inner):
        pair = _GEMMA_PAIR.match(inner, pos)
        if pair is None:
            return None
        key, string, literal, _ = pair.groups()
        if string is None:
            value, error = decode(literal)
            if error:
                return None
            found[key] = value
        else:
            found[key] = string
        pos = pair.end()
    return found


# The common Gemma call whole, on one line: a name and a flat object of `<|"|>` strings
# holding no '<', backtick or newline, closed at once. Nothing in it can start or end
# code or another call, so it reads as the general path below reads it.
_GEMMA_STRING_PAIR = re.compile(r'([^\W\d][\w.\-]*):<\|"\|>([^<`\n]*)<\|"\|>')
_GEMMA_CALL = re.compile(  # group 1 the name, group 2 the pairs (their own groups follow)
    r"call:([^\W\d][\w.\-]{0,255})\{((?:%(pair)s,)*%(pair)s)?\}<tool_call\|>".replace(
        "%(pair)s", _GEMMA_STRING_PAIR.pattern
    )
)

_NOT_CLOSED = "arguments are not valid JSON (the object is not closed)"


def gemma(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    whole = _GEMMA_CALL.match(s, end, bound)
    if whole is not None:
        pairs = _GEMMA_STRING_PAIR.findall(whole.group(2) or "")
        calls.append(make_call("gemma-tool-call", whole.group(1), dict(pairs)))
        return whole.end()
    stop, pos = _window(masked, end, bound, _GEMMA_END, "<tool_call|>")
    if stop < 0:
        return pos
    head = _GEMMA_HEAD.match(s, end, stop)
    if head is None or not name_ok(head.group(1)):
        return pos
    name, text = head.group(1), s[head.end() : stop].strip(WS)
    if text[:1] == "{" and text[-1:] != "}":  # cut off: no decoding needed to say so
        calls.append(record("gemma-tool-call", name, "", _NOT_CLOSED))
        return pos
    flat = _gemma_flat(text) if text[:1] == "{" else None
    if flat is not None:
        calls.append(make_call("gemma-tool-call", name, flat))
        return pos
    value, error = decode(_gemma_json(text)) if text else ({}, "")
    if error or not isinstance(value, dict):
        calls.append(record("gemma-tool-call", name, "", error or "arguments are not an object"))
    else:
        calls.append(make_call("gemma-tool-call", name, value))
    return pos


def deepseek(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    close = _DEEPSEEK_END.search(masked, end, bound)
    if close is None and bound < len(s):
        return bound
    stop = close.start() if close else bound
    pos = close.end() if close and "end" in close.group() else stop
    body = s[end:stop]
    sep = _DEEPSEEK_SEP.search(body)
    if sep is None:
        return pos
    name, arguments = body[: sep.start()].strip(WS), body[sep.end() :]
    if name == "function":  # V3 and R1: the name after the separator, JSON in a fence
        name, _, arguments = arguments.partition("\n")
        name = name.strip(WS)
        arguments = arguments.strip(WS)
        if arguments.startswith("```") and arguments.endswith("```") and len(arguments) >= 6:
            arguments = arguments[3:-3].removeprefix("json")
    if name_ok(name):
        calls.append(make_call("deepseek-tool-calls", name, arguments))
    return pos
