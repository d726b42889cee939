"""Reasoning-leak handling: a port of kb's reasoning code (thinkBlockRe, decodeJSONObject).

`strip_reasoning` keeps the seed's rules to the letter: closed ``<think>`` blocks
go, a bare ``</think>`` drops everything through the last one, an unclosed
``<think>`` drops everything from it on, and the rest is trimmed like Go's
strings.TrimSpace. `reasoning_shape` names which of those rules applied.

Go's RE2 is linear; Python's ``re`` backtracks, and ``(?s)<think>.*?</think>`` is
quadratic on a reply of repeated ``<think>`` with no ``</think>`` after them.
The pattern is therefore only run on the text up to the last ``</think>``,
where it is linear; the other rules are single str.find / rfind scans.

`split_reasoning` also splits a gpt-oss harmony reply that starts with its analysis
channel and holds a final one, tokened (``<|channel|>analysis<|message|>...<|end|>
<|start|>assistant<|channel|>final<|message|>...``, sgl-project/sglang#10061) or
token-stripped (``analysisUser says...assistantfinalHello!``, the channel names glued
to the words, oobabooga/text-generation-webui#7374): the analysis is reasoning, the
final message the answer. `strip_reasoning` does not: it is the seed's, to the letter.

`decode_json_object` tries the whole reply, then every ``{`` offset, and keeps
the longest object that parses. The reply is chosen by the endpoint, so that
scan is bounded: it resumes past a candidate that parsed (an object nested in
it is shorter) and stops once `_SCAN_BUDGET` characters in all were handed to
the decoder. A megabyte of ``{"a":`` fits the response cap and is otherwise
quadratic. Each candidate is handed a window of the reply, not its whole tail:
json.JSONDecodeError counts the lines of the document before the error, so a
failed candidate would cost the whole reply and the scan would stay quadratic
under any budget. Values follow Go's encoding/json: NaN and Infinity are syntax
errors, a number out of float64 range fails the decode, and a lone UTF-16
surrogate becomes U+FFFD.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import InvalidJSONError, NotJSONError

__all__ = [
    "decode_json_object",
    "harmony_split",
    "reasoning_shape",
    "split_reasoning",
    "strip_reasoning",
    "strip_with_shape",
    "text_for_calls",
]

_OPEN = "<think>"
_CLOSE = "</think>"

# unicode.IsSpace as Go defines it (the White_Space property). Python's
# str.strip() also strips \x1c-\x1f, which Go keeps.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# Characters handed to the decoder over one scan. An honest reply within the
# 1 MiB response cap stays under it: windows cost an object about three times
# its length.
_SCAN_BUDGET = 4 << 20
# The first window handed to the decoder per candidate; it also bounds the
# number of decoder calls to _SCAN_BUDGET / _FIRST_WINDOW.
_FIRST_WINDOW = 128
# An error this close to a window's end may come from the cut ("-Infinity" is
# the longest token the scanner looks ahead over).
_CUT_MARGIN = 16
# Only a '{' whose next JSON token is a key or '}' can start an object.
_CANDIDATE = re.compile(r'\{[ \t\n\r]*["}]')

# A harmony reply that starts with its analysis channel, tokened or token-stripped. The
# stripped name is glued to the reasoning's first word: a reply that starts with the word
# "analysis" (then a space, or punctuation) is English.
_HARMONY_START = re.compile(
    r"[ \t\r\n]*(?:(?:<\|start\|>assistant)?<\|channel\|>analysis<\|message\|>"
    r"|analysis(?=[^\s'\u2019.,;:!?)\-]))"
)
_FINAL_TOKENED = "<|channel|>final<|message|>"
_FINAL_STRIPPED = "assistantfinal"
# The tokens that end a harmony message, and the header that opens an analysis one.
_HARMONY_ENDS = re.compile(r"<\|(?:end|return|call)\|>|<\|start\|>")
_ANALYSIS_TOKENED = "<|channel|>analysis<|message|>"
_ANALYSIS_STRIPPED = re.compile(r"assistantanalysis|assistantcommentary")

_SURROGATE = re.compile("[\ud800-\udfff]")
_CLOSED_BLOCK = re.compile(re.escape(_OPEN) + ".*?" + re.escape(_CLOSE), re.DOTALL)


def _strip(s: str) -> tuple[str, bool, bool, bool]:
    """The seed's rules in order; returns the text and which rules applied."""
    # Leftmost, non-greedy, non-overlapping, like RE2's ReplaceAllString. Only the
    # text up to the last </think> can hold a closed block, and there every
    # <think> has a </think> after it, so each match attempt ends at the first
    # </think> after its start and the substitution is linear (and runs in C).
    last = s.rfind(_CLOSE)
    closed = False
    if last >= 0:
        end = last + len(_CLOSE)
        head, count = _CLOSED_BLOCK.subn("", s[:end])
        if count:
            closed = True
            s = head + s[end:]

    last = s.rfind(_CLOSE)
    unopened = last >= 0
    if unopened:
        s = s[last + len(_CLOSE) :]

    first = s.find(_OPEN)
    unclosed = first >= 0
    if unclosed:
        s = s[:first]

    return s.strip(_GO_SPACE), closed, unopened, unclosed


def strip_reasoning(s: str) -> str:
    """Drop leaked reasoning from a reply and trim it, as the seed's StripReasoning."""
    return _strip(s)[0]


def reasoning_shape(s: str) -> str:
    """Name the rules `strip_reasoning` applies to s: closed, unopened, unclosed, or none."""
    return strip_with_shape(s)[1]


def strip_with_shape(s: str) -> tuple[str, str]:
    """(strip_reasoning(s), reasoning_shape(s)) in one scan."""
    text, closed, unopened, unclosed = _strip(s)
    names = [
        name
        for name, applied in (("closed", closed), ("unopened", unopened), ("unclosed", unclosed))
        if applied
    ]
    return text, "+".join(names) if names else "none"


def _closed(s: str, reasoning: list[str]) -> str:
    """strip_reasoning's first two rules `reasoning` gets what went."""
    last = s.rfind(_CLOSE)
    if last >= 0:
        end = last + len(_CLOSE)
        pieces: list[str] = []
        at = 0
        for block in _CLOSED_BLOCK.finditer(s, 0, end):
            pieces.append(s[at : block.start()])
            reasoning.append(block.group()[len(_OPEN) : -len(_CLOSE)].replace(_OPEN, ""))
            at = block.end()
        s = "".join(pieces) + s[at:]
    last = s.rfind(_CLOSE)
    if last >= 0:
        reasoning.append(s[:last].replace(_OPEN, "").replace(_CLOSE, ""))
        s = s[last + len(_CLOSE) :]
    return s


def split_reasoning(s: str) -> tuple[str, str]:
    """(reasoning, answer): what strip_reasoning removes, tags dropped, and what it keeps.

    The reasoning is the text of every closed block, then what came before the
    last bare closer, then what follows an unclosed opener, each trimmed and
    joined by a newline (the order strip_reasoning's rules apply in), then a harmony
    reply's analysis (`harmony_split`). The answer is strip_reasoning(s), or the final
    message of a harmony reply that strip_reasoning leaves whole.
    """
    if not isinstance(s, str):
        return "", ""
    parts: list[str] = []
    rest = _closed(s, parts)
    first = rest.find(_OPEN)
    if first >= 0:
        parts.append(rest[first + len(_OPEN) :])
    answer = strip_reasoning(s)
    harmony = harmony_split(answer)
    if harmony is not None:
        parts.append(harmony[0])
        answer = harmony[1]
    reasoning = "\n".join(p for p in (part.strip(_GO_SPACE) for part in parts) if p)
    return reasoning, answer


def harmony_split(s: str) -> tuple[str, str] | None:
    """(analysis, final) of a gpt-oss harmony reply, None when `s` is not one.

    `s` must start with the analysis channel, tokened or token-stripped, and hold a final
    channel (``<|channel|>final<|message|>`` or ``assistantfinal``): the answer is the
    text after the last final header, its end token dropped; the reasoning is the
    analysis messages before it, headers and tokens dropped, one per line
    (sgl-project/sglang#10061, oobabooga/text-generation-webui#7374).
    """
    start = _HARMONY_START.match(s)
    if start is None:
        return None
    tokened = start.group().lstrip(_GO_SPACE).startswith("<")
    header = _FINAL_TOKENED if tokened else _FINAL_STRIPPED
    final = s.rfind(header)
    if final < start.end():
        return None
    head, answer = s[start.end() : final], s[final + len(header) :]
    if tokened:
        end = _HARMONY_ENDS.search(answer)
        answer = answer[: end.start()] if end else answer
        pieces = []
        for n, message in enumerate(head.split(_ANALYSIS_TOKENED)):
            # The first piece follows the opening header; later ones follow another.
            end = _HARMONY_ENDS.search(message)
            text = message[: end.start()] if end else message
            if n == 0 or text:
                pieces.append(text)
    else:
        pieces = _ANALYSIS_STRIPPED.split(head)
    reasoning = "\n".join(p for p in (piece.strip(_GO_SPACE) for piece in pieces) if p)
    return reasoning, answer.strip(_GO_SPACE)


def text_for_calls(s: str) -> str:
    """The content in which the loop looks for calls written as text.

    strip_reasoning's rules but the unclosed one: an unclosed ``<think>`` stays,
    for the call scan to end it at a tool-call opener (Kimi-K2-Thinking and Qwen3
    open a call before closing their reasoning). Closed blocks and everything up
    to a bare closer go, as in strip_reasoning.
    """
    return _closed(s, []).strip(_GO_SPACE)


class _GoDecoder:
    """json.JSONDecoder with Go's value rules; `rejected` marks a value Go refuses."""

    def __init__(self) -> None:
        self.rejected = False
        self._decoder = json.JSONDecoder(
            parse_float=self._parse_float,
            parse_int=self._parse_int,
            parse_constant=self._parse_constant,
        )

    # The hooks flag instead of raising: an exception out of the C scanner
    # carries no position, and the scan budget needs one.
    def _parse_float(self, text: str) -> float:
        value = float(text)
        if math.isinf(value):
            self.rejected = True
        return value

    def _parse_int(self, text: str) -> int:
        # Go decodes every number as float64; past its range the decode fails.
        # Fewer than 309 digits stay under 1.8e308.
        if len(text) > 308 and math.isinf(float(text)):
            self.rejected = True
            return 0
        return int(text)

    def _parse_constant(self, text: str) -> None:
        self.rejected = True

    def whole(self, s: str) -> Any:
        self.rejected = False
        return self._decoder.decode(s)

    def at(self, s: str) -> tuple[Any, int]:
        self.rejected = False
        return self._decoder.raw_decode(s)


def _scrub(s: str) -> str:
    return _SURROGATE.sub("\ufffd", s) if _SURROGATE.search(s) else s


def _go_strings(root: dict[str, Any]) -> dict[str, Any]:
    """Replace lone surrogates as Go's decoder does, in place; iterative, any depth."""
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            items = list(node.items())
            if any(_SURROGATE.search(key) for key, _ in items):
                node.clear()
                for key, value in items:
                    node[_scrub(key)] = value
            for key, value in node.items():
                if isinstance(value, str):
                    node[key] = _scrub(value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                if isinstance(value, str):
                    node[index] = _scrub(value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
    return root


def _candidate(decoder: _GoDecoder, s: str, start: int) -> tuple[dict[str, Any] | None, int, int]:
    """Decode the object at s[start] as json.Decoder would; returns (object, end, charge).

    The window doubles while an error may come from its cut. An object that
    decodes inside a window decodes the same way in s, and an error away from
    the cut is the error s gives; the charge is every character handed over.
    """
    charge = 0
    width = _FIRST_WINDOW
    while True:
        stop = min(len(s), start + width)
        chunk = s[start:stop]
        charge += len(chunk)
        try:
            value, end = decoder.at(chunk)
        except json.JSONDecodeError as err:
            # "Unterminated string" names where the string began, not where it stopped.
            cut = err.pos >= len(chunk) - _CUT_MARGIN or err.msg.startswith("Unterminated string")
            if stop < len(s) and cut:
                width *= 2
                continue
            return None, 0, charge
        except (RecursionError, ValueError):
            # Nesting past the recursion limit fails the same way in s.
            return None, 0, charge
        if decoder.rejected or not isinstance(value, dict):
            return None, 0, charge
        return value, start + end, charge


def decode_json_object(s: str) -> dict[str, Any]:
    """Decode the JSON object in a reply, as the seed's DecodeJSONObject.

    Raises NotJSONError when the stripped reply holds no '{', InvalidJSONError
    when no candidate decodes to an object; nothing else escapes.
    """
    s = strip_reasoning(s)
    decoder = _GoDecoder()

    # RecursionError: Python's scanner nests on the C stack, Go's does not.
    try:
        value = decoder.whole(s)
    except (RecursionError, ValueError):
        pass
    else:
        if not decoder.rejected:
            # Go's json.Unmarshal leaves a map nil, with no error, for null.
            if value is None:
                return {}
            if isinstance(value, dict):
                return _go_strings(value)

    if "{" not in s:
        raise NotJSONError()

    best: dict[str, Any] | None = None
    best_len = 0
    budget = _SCAN_BUDGET
    found = _CANDIDATE.search(s)
    while found is not None and budget > 0:
        start = found.start()
        value, end, charge = _candidate(decoder, s, start)
        budget -= charge
        if value is None:
            found = _CANDIDATE.search(s, start + 1)
            continue
        if end - start > best_len:
            best, best_len = value, end - start
        found = _CANDIDATE.search(s, end)

    if best is None:
        raise InvalidJSONError()
    return _go_strings(best)
