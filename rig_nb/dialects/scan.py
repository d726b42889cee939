"""The scan behind find_text_tool_calls and has_text_tool_calls: reasoning skipped, calls read.

One forward pass over the reply with its code masked (`code.py`, same
offsets): markers are found in the mask, call text is read from the reply.
Reasoning blocks of every dialect are skipped (an unclosed one runs to the
end), and a closer with no opener drops what came before it. Each call is read
from a window that ends at its closing marker, at an opener that starts a
line, at a reasoning closer (the call was drafted in reasoning and is not
read), or at the end of the reply; the scan resumes where the window ends, so
windows never overlap and the decoder is handed each character once (arguments
written as a JSON string once more, from the string's value). Windows are
sliced out before decoding: a JSONDecodeError counts the lines of the text it
was handed, and decoding in place would cost the reply's length per failed
candidate. The next call after text holding no marker is read without a search,
and a GLM or Qwen3-Coder call with no `<` in its values in one match (reading
the same window to the same call): a megabyte of calls costs the reading, not
a search and a slice per call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._call_json import NAME_IN_JSON, WS, decode_at, scan_once, why
from .calls import (
    FLAT_FUNCTION,
    FLAT_TAG,
    Calls,
    Schemas,
    TextToolCall,
    call_from_object,
    json_call,
    make_call,
    name_ok,
    read_flat,
    record,
    schemas_of,
    tag_body,
    xml_call,
)
from .code import mask_code
from .families import (
    DEEPSEEK_CALL,
    DSML_CALLS,
    GEMMA_CALL,
    MINIMAX_CALL,
    MINIMAX_DELIMITED,
    deepseek,
    dsml,
    gemma,
    minimax,
    minimax_delimited,
)
from .markers import FUNCTION_TAG, RECIPIENT, STRIPPED, STRIPPED_START

__all__ = ["find_text_tool_calls", "has_text_tool_calls", "scan"]

# gpt-oss with its special tokens stripped: what ends its analysis.
_STRIPPED_CLOSE = re.compile(r"assistant(?:final|commentary)")

# Reasoning blocks by opener. An unclosed one runs to the end of the reply; a
# closer with no opener ends reasoning that began before the reply did (the
# server consumed the opener), so what came before it is reasoning too.
_BLOCKS = {
    "<think>": "</think>",
    "[THINK]": "[/THINK]",
    "<seed:think>": "</seed:think>",
    "<thought>": "</thought>",
    "<|channel>": "<channel|>",
    "<mm:think>": "</mm:think>",
    "\u25c1think\u25b7": "\u25c1/think\u25b7",
}
# What ends reasoning, tokens stripped from gpt-oss's included.
_REASONING_CLOSERS = frozenset((*_BLOCKS.values(), "assistantfinal", "assistantcommentary"))
_NEXT_CLOSER = re.compile(
    "|".join([*(re.escape(c) for c in _BLOCKS.values()), "assistant(?:final|commentary)"])
)
# A call is read from a window of the reply, found in the mask (code hides
# markers there too). It ends at the call's closer, at an opener that starts a
# line (an unclosed call, then the next: a JSON string holds no raw newline),
# or at `bound`: the next reasoning closer, or the end of the reply. A window
# that reaches a closer was drafted in reasoning (everything before a bare
# closer is, as strip_reasoning has it for </think>) and is not read. The scan
# resumes where a window ends, so windows never overlap.
_TAG_END = re.compile(r"</tool_call>|\n[ \t]*<tool_call>")
_FUNCTION_END = re.compile(r"</function>|</tool_call>|\n[ \t]*<(?:function=|tool_call>)")
_KIMI_END = re.compile(r"<\|tool_call_end\|>|<\|tool_call_begin\|>|<\|tool_calls_section_end\|>")
_HARMONY_END = re.compile(r"<\|call\|>|<\|end\|>|<\|return\|>|<\|start\|>")
_TRAILING_TAG = re.compile(r"[ \t\r\n]*</tool_call>")
_ANALYSIS_END = re.compile(r"<\|end\|>|<\|call\|>|<\|return\|>")
_MISTRAL_HEAD = re.compile(
    r"[ \t\r\n]*([^\W\d][\w.\-/]{0,255})[ \t\r\n]*(?:\[CALL_ID\][\w-]{0,64}[ \t\r\n]*)?"
    r"(?:\[ARGS\][ \t\r\n]*)?"
)
_HARMONY_NAME = re.compile(r"[^\s<]{1,256}")
_SPACE = re.compile(r"[ \t\n\r]*")
# Where a Hermes call object starts, found back from a bare `</tool_call>`.
_NAME_OBJECT = re.compile(r'\{[ \t\r\n]*"name"[ \t\r\n]*:')
# A harmony header ends at <|message|> within this many characters, on one line.
_HEADER_MAX = 256


def _tag(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    if masked is s and (done := read_flat(FLAT_TAG, s, end, bound, calls)) >= 0:
        return done  # no code in the reply: a flat call's window is its match
    close = _TAG_END.search(masked, end, bound)
    if close is None:
        if bound < len(s):
            return bound
        stop = pos = bound
    else:
        stop = close.start()
        pos = close.end() if close.group() == "</tool_call>" else stop
    call = tag_body(s[end:stop], calls.schemas)
    if call is not None:
        calls.append(call)
    return pos


def _bare_close(s: str, masked: str, start: int, brace: int, calls: Calls) -> None:
    """Hermes' `{"name": ...}</tool_call>` with its opening tag lost: the object before it.

    The object starts at the first `{"name":` outside code since the scan's last stop.
    """
    found = _NAME_OBJECT.search(masked, start, brace + 1)
    if found is not None:
        call = json_call("tool-call-tag", s[found.start() : brace + 1])
        if call is not None:
            calls.append(call)


def _function(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    if masked is s and (done := read_flat(FLAT_FUNCTION, s, end, bound, calls)) >= 0:
        return done
    close = masked.find(">", end, bound)
    if close < 0:
        return bound  # the name runs into a reasoning closer
    body_end = _FUNCTION_END.search(masked, close + 1, bound)
    if body_end is None:
        if bound < len(s):
            return bound
        stop = pos = bound
    else:
        tag, stop = body_end.group(), body_end.start()
        if tag == "</function>":
            trailing = _TRAILING_TAG.match(masked, body_end.end(), bound)
            pos = trailing.end() if trailing else body_end.end()
        else:
            pos = stop if tag[0] == "\n" else body_end.end()
    call = xml_call("function-tag", s[end:close], s[close + 1 : stop], calls.schemas)
    if call is not None:
        calls.append(call)
    return pos


def _mistral(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    """[TOOL_CALLS][{...}, ...] (before v11) or [TOOL_CALLS]NAME[ARGS]{...} (v11 on).

    What follows the JSON is content, read by the scan and not decoded. v11
    writes parallel calls back to back: the next one is read here when it
    starts right away with a letter outside code, as the scan would read it.
    """
    while True:
        window_end = masked.find("[TOOL_CALLS]", end, bound)
        if window_end < 0:
            if bound < len(s):
                return bound
            window_end = bound
        args = s.find("[ARGS]{", end, min(window_end, end + 300))
        name = s[end:args] if args >= 0 else ""
        if name.isidentifier():
            brace = args + 6
        else:
            head = _MISTRAL_HEAD.match(s, end, window_end)
            if head is None:
                return _mistral_array(s, end, window_end, calls)
            name, brace = head.group(1), head.end()
            if not s.startswith("{", brace):
                calls.append(record("mistral-tool-calls", name, "", "no JSON arguments"))
                return brace
        try:
            value, stop = scan_once(s[brace:window_end], 0)
        except (StopIteration, ValueError, RecursionError) as err:
            calls.append(record("mistral-tool-calls", name, "", why(err)))
            return window_end
        calls.append(make_call("mistral-tool-calls", name, value))
        end = brace + stop
        if not (
            len(calls) < limit
            and masked.startswith("[TOOL_CALLS]", end)
            and s[end + 12 : end + 13].isalpha()
        ):
            return end
        end += 12


def _mistral_array(s: str, end: int, window_end: int, calls: Calls) -> int:
    window = s[end:window_end]
    space = _SPACE.match(window)
    value, stop, error = decode_at(window, space.end() if space else 0)
    if error:
        found = NAME_IN_JSON.search(window)
        if found:
            calls.append(record("mistral-tool-calls", found.group(1), "", error))
        return window_end
    for item in value if isinstance(value, list) else [value]:
        call = call_from_object("mistral-tool-calls", item)
        if call is not None:
            calls.append(call)
    return end + stop


def _kimi(s: str, masked: str, end: int, bound: int, calls: Calls, limit: int) -> int:
    close = _KIMI_END.search(masked, end, bound)
    if close is None and bound < len(s):
        return bound
    stop = close.start() if close else bound
    head, marker, arguments = s[end:stop].partition("<|tool_call_argument_begin|>")
    head = head.strip(WS)
    name, colon, index = head.rpartition(":")
    name = name if colon and index.isdigit() else head
    name = name[10:] if name.startswith("functions.") else name
    if name_ok(name):
        if marker:
            calls.append(make_call("kimi-tool-calls", name, arguments))
        else:
            calls.append(record("kimi-tool-calls", name, "", "no arguments marker"))
    return close.end() if close and close.group() == "<|tool_call_end|>" else stop


def _harmony_header(masked: str, end: int) -> tuple[int, bool]:
    """The <|message|> that ends the header going on at `end` (-1: none), and if it is analysis.

    A header with a `to=functions.NAME` recipient is a call on any channel: not analysis.
    """
    message = masked.find("<|message|>", end, end + _HEADER_MAX)
    if message < 0 or masked.find("\n", end, message) >= 0:
        return -1, False
    analysis = masked.find("<|channel|>analysis", end, message) >= 0
    return message, analysis and masked.find(RECIPIENT, end, message) < 0


def _skip_analysis(masked: str, message: int) -> int:
    """Past the analysis message whose body starts after `message`; -1 when it never ends."""
    close = _ANALYSIS_END.search(masked, message + 11)
    return close.end() if close else -1


def _harmony_call(s: str, masked: str, end: int, message: int, bound: int, calls: Calls) -> int:
    """The body of a `to=functions.NAME ...<|message|>` message, up to <|call|>."""
    close = _HARMONY_END.search(masked, message + 11, bound)
    if close is None and bound < len(s):
        return bound
    stop = close.start() if close else bound
    name = _HARMONY_NAME.match(s, end, message)
    if name and name_ok(name.group()):
        calls.append(make_call("harmony", name.group(), s[message + 11 : stop]))
    return close.end() if close and close.group() != "<|start|>" else stop


# Each reads the call whose opener ends at `end` (and may read the calls right
# after it, up to limit) and returns where the scan resumes, at most `bound`.
Handler = Callable[[str, str, int, int, Calls, int], int]
_HANDLERS: dict[str, Handler] = {
    "<tool_call>": _tag,
    "<function=": _function,
    "[TOOL_CALLS]": _mistral,
    "<|tool_call_begin|>": _kimi,
    MINIMAX_CALL: minimax,
    MINIMAX_DELIMITED: minimax_delimited,
    GEMMA_CALL: gemma,
    "<\uff5ctool\u2581call\u2581begin\uff5c>": deepseek,
    "<|tool\u2581call\u2581begin|>": deepseek,
    "<\uff5cDSML\uff5cfunction_calls>": dsml,
    "<\uff5cDSML\uff5ctool_calls>": dsml,
}


_CLOSERS = frozenset(_BLOCKS.values())
_ANALYSIS = "<|channel|>analysis"
_REASONING = "|".join(
    [*(re.escape(m) for m in (*_BLOCKS, *_BLOCKS.values())), r"<\|channel\|>analysis\b"]
)
# Openers of calls the handlers read. The lookaheads drop openers that cannot
# start a readable call, so a megabyte of bare markers is one search, not a
# call attempt per marker.
_OPENERS = {
    "<tool_call>": re.compile(r"<tool_call>(?=[ \t\r\n]*(?:[{\w]|<function=))"),
    "<function=": re.compile(r"<function=(?=[^\s<>]{1,256}>(?![ \t\r\n]*<function=))"),
    "[TOOL_CALLS]": re.compile(r"\[TOOL_CALLS\](?=[ \t\r\n]*(?:\[[ \t\r\n]*\{|[^\W\d]))"),
    "<|tool_call_begin|>": re.compile(r"<\|tool_call_begin\|>(?=[ \t\r\n]*[\w.])"),
    MINIMAX_CALL: re.compile(re.escape(MINIMAX_CALL) + r"(?=[ \t\r\n]*<invoke )"),
    MINIMAX_DELIMITED: re.compile(re.escape(MINIMAX_DELIMITED)),
    GEMMA_CALL: re.compile(re.escape(GEMMA_CALL) + r"(?=[ \t\r\n]*call:)"),
    DEEPSEEK_CALL: re.compile(DEEPSEEK_CALL + r"(?=[ \t\r\n]*[\w.])"),
    DSML_CALLS.pattern: re.compile(DSML_CALLS.pattern + "(?=[ \t\r\n]*<\uff5cDSML\uff5cinvoke )"),
}
_OPENER_OF = {"<\uff5ctool\u2581call\u2581begin\uff5c>": DEEPSEEK_CALL}
_OPENER_OF["<|tool\u2581call\u2581begin|>"] = DEEPSEEK_CALL
_OPENER_OF["<\uff5cDSML\uff5cfunction_calls>"] = DSML_CALLS.pattern
_OPENER_OF["<\uff5cDSML\uff5ctool_calls>"] = DSML_CALLS.pattern
# Where a call starts: inside an unclosed reasoning block, it ends the block (Kimi-K2-Thinking
# and Qwen3 open a call before closing their reasoning).
_CALL_START = re.compile("|".join(p.pattern for p in _OPENERS.values()))
# Every alternative starts with '<', '[', ']', '}' or U+25C1 (Kimi's think marks), which
# keeps re's search fast on prose (a letter would stop it at every word) and is what
# _QUIET leaves out.
_FIND_EVENTS = re.compile(
    "|".join([_REASONING, *(p.pattern for p in _OPENERS.values()), r"\}[ \t\r\n]*</tool_call>"])
)
# The next call of a run, after whitespace (which holds no marker of any kind), or after
# quiet text: text holding no event, as no character an event starts with is in it. The
# recipient and token-stripped harmony start with letters: a run stops short of them.
_QUIET = "[^<\\[\\]}\u25c1]*"
_NEXT = {marker: re.compile(r"[ \t\r\n]*" + p.pattern) for marker, p in _OPENERS.items()}
_RUN = {marker: re.compile(_QUIET + p.pattern) for marker, p in _OPENERS.items()}
for _literal, _opener in _OPENER_OF.items():
    _NEXT[_literal] = _NEXT[_opener]
    _RUN[_literal] = _RUN[_opener]
# Detection reads the same calls (the same windows are consumed, so both agree
# on what is reasoning), and also stops at the markers no call can be read from.
_DETECT_EVENTS = re.compile(
    _FIND_EVENTS.pattern + r"|</?tool_call>|<arg_key>|" + FUNCTION_TAG + r"|\[TOOL_CALLS\]"
    r"|<\|tool_calls_section_(?:begin|end)\|>|<\|tool_call_(?:argument_)?begin\|>"
    r"|</?\uff5cDSML\uff5c|</?minimax:tool_call>|\]<\]minimax\[>\[|<\|tool_call>|<tool_call\|>"
    r"|<[\uff5c|]tool\u2581calls?\u2581begin[\uff5c|]>|\[TOOL_CALL\]|<\|tool_call_start\|>"
    r"|</?TOOLCALL>|<\|tools_prefix\|>|<\|START_ACTION\|>|<function name=\"|<\|function_call\|>"
    r"|</?tool_calls>|<\|open\|>(?:tools|call)\b"
)
# The markers above that start no call the scan reads: detected, never read.


def _last_close(masked: str) -> int:
    """Where the last reasoning closer ends (-1: none): no call after it can be dropped."""
    last = -1
    for closer in _REASONING_CLOSERS:
        at = masked.rfind(closer)
        if at >= 0:
            last = max(last, at + len(closer))
    return last


# A reply holding none of these has no tool call and no tool-call marker in any dialect.
_CALL_MARKERS = (
    "tool_call",
    "<function=",
    "[TOOL_CALLS]",
    "<|tool_call",
    "to=functions.",
    "\uff5cDSML\uff5c",
    "<arg_key>",
    "assistantcommentary",
    "minimax",
    "tool\u2581call",
    "TOOL_CALL]",
    "TOOLCALL",
    "<|tools_prefix|>",
    "START_ACTION",
    "<function name=",
    "<|function_call|>",
    "<|open|>",
)


def scan(
    s: str, limit: int, detect: bool, schemas: Schemas | None = None
) -> tuple[list[TextToolCall], bool]:
    """The calls in s outside code and reasoning (at most limit), and whether a tool-call marker is.

    One forward scan over s with its code masked (same offsets): markers are
    found in the mask, call bodies read from s. Three cursors (markup events,
    harmony recipients, token-stripped harmony) are each searched again only
    once the scan has passed them, and every handler returns a position past
    what it read: the work is linear in len(s). detect: stop once a marker
    outside reasoning is sure (no reasoning closer after it), instead of at limit.
    """
    calls = Calls(schemas)
    seen = False
    for marker in _CALL_MARKERS:
        if marker in s:
            break
    else:
        return calls, seen  # no call in any dialect: spares a search stopping at every "<"
    masked = mask_code(s)
    events = _DETECT_EVENTS if detect else _FIND_EVENTS
    size = len(s)
    never = size + 1
    last_close = -2
    pos = 0
    if STRIPPED_START.match(masked):
        opened = _STRIPPED_CLOSE.search(masked)
        if opened is None:
            return calls, seen
        pos = opened.end()
    event = stripped = None
    event_at = recipient_at = stripped_at = closer_at = -1
    call_at = -1
    block_close: dict[str, int] = {}
    while pos < size:
        start = pos
        if event_at < pos:
            event = events.search(masked, pos)
            event_at = event.start() if event else never
        if recipient_at < pos:
            recipient_at = masked.find(RECIPIENT, pos)
            recipient_at = never if recipient_at < 0 else recipient_at
        if stripped_at < pos:
            stripped = STRIPPED.search(masked, pos)
            stripped_at = stripped.start() if stripped else never
        if event is not None and event_at < recipient_at and event_at < stripped_at:
            marker, pos = event.group(), event.end()
            handler = _HANDLERS.get(marker)
            opener = _OPENER_OF.get(marker, marker)
            if detect and handler is not None and not _OPENERS[opener].match(masked, event_at):
                handler = None  # the plain marker of detection: no call starts here
            if handler is not None:
                if closer_at < event_at:
                    closer = _NEXT_CLOSER.search(masked, event_at)
                    closer_at = closer.start() if closer else size
                pos = handler(s, masked, pos, closer_at, calls, limit)
                # Calls one after another: the opener the search would find next is
                # right here, after whitespace, or (reading calls) after quiet text short
                # of the next recipient, token-stripped harmony or reasoning closer.
                if detect:
                    again, quiet_end = _NEXT[marker], size
                else:
                    again, quiet_end = _RUN[marker], min(recipient_at, stripped_at, closer_at)
                while len(calls) < limit and (event := again.match(masked, pos, quiet_end)):
                    pos = handler(s, masked, event.end(), closer_at, calls, limit)
            elif marker in _BLOCKS:
                # Each search is made again only once the scan has passed what it found:
                # a closer that is nowhere after pos is nowhere after any later pos.
                closer_text = _BLOCKS[marker]
                if block_close.get(closer_text, -1) < pos:
                    block_close[closer_text] = masked.find(closer_text, pos) % (size + 2)
                close = block_close[closer_text]
                if close > size:
                    if call_at < pos:
                        call = _CALL_START.search(masked, pos)
                        call_at = call.start() if call else never
                    if call_at >= size:
                        break
                    pos = call_at  # the call opener ends the unclosed block
                    continue
                pos = close + len(closer_text)
                continue
            elif marker in _CLOSERS:
                calls.clear()
                seen = False
                continue
            elif marker.startswith(_ANALYSIS):
                message, _ = _harmony_header(masked, pos)
                if message >= 0 and masked.find(RECIPIENT, pos, message) < 0:
                    pos = _skip_analysis(masked, message)
                    if pos < 0:
                        break
                continue
            elif marker[0] == "}":
                _bare_close(s, masked, start, event_at, calls)
            seen = True
        elif stripped is not None and stripped_at < recipient_at:
            pos = stripped.end()
            if stripped.group() == "assistantanalysis":
                opened = _STRIPPED_CLOSE.search(masked, pos)
                if opened is None:
                    break
                pos = opened.end()
            else:
                calls.clear()
                seen = False
            continue
        elif recipient_at < never:
            pos = recipient_at + len(RECIPIENT)
            message, _ = _harmony_header(masked, pos)  # a recipient makes a call on any channel
            if message >= 0:
                if closer_at < recipient_at:
                    closer = _NEXT_CLOSER.search(masked, recipient_at)
                    closer_at = closer.start() if closer else size
                pos = _harmony_call(s, masked, pos, message, closer_at, calls)
            # Without its tokens the call cannot be read, but it is there.
            seen = True
        else:
            break
        if (seen if detect else len(calls) >= limit) and pos > last_close:
            if last_close == -2:
                last_close = _last_close(masked)
            if pos > last_close:
                break
    return calls[:limit], seen


def find_text_tool_calls(s: str, tools: Any = None, *, limit: int = 33) -> list[TextToolCall]:
    """Tool calls written as text in `s`, in order of appearance, at most `limit`.

    `s` is a reply's content after `strip_reasoning`. Calls inside the other
    dialects' reasoning blocks (an unclosed one runs to the end; text before a
    closer with no opener is reasoning too) and inside markdown code are not
    calls. A call whose name can be read but whose arguments cannot comes back
    with `error` set and `arguments` ""; a fragment with no readable name is
    skipped. The default limit is one more than the loop runs in one reply.

    `tools` (rig_nb Tools or OpenAI tool dicts) types the parameter values of the
    XML-like dialects by each declared tool's schema; without it a value is JSON
    when it reads as a JSON number, bool, null, object or array, else a string.
    """
    if not isinstance(s, str) or not isinstance(limit, int) or limit <= 0:
        return []
    return scan(s, limit, detect=False, schemas=schemas_of(tools) if tools else None)[0]


def has_text_tool_calls(s: str) -> bool:
    """True when `s` holds a tool-call dialect (a marker of a TOOL_CALL_DIALECTS dialect,
    or a harmony commentary call).

    Markers inside code or inside reasoning blocks do not count, as in
    find_text_tool_calls; a marker with no readable call does.
    """
    if not isinstance(s, str):
        return False
    return scan(s, len(s) + 1, detect=True)[1]
