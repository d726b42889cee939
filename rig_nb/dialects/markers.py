"""The markup of each leak dialect, and the search behind leak_dialects and text_before_calls.

The markers are literals, searched for by one regex factored by shared prefixes.
The harmony recipient, the harmony remains without their tokens and Qwen3-Coder's
`<function=NAME>` are patterns the call scan (`scan.py`) looks for too.
"""

from __future__ import annotations

import re
from functools import cache

from .code import has_indented, mask_code

__all__ = [
    "DIALECTS",
    "FUNCTION_TAG",
    "RECIPIENT",
    "STRIPPED",
    "STRIPPED_START",
    "TOOL_CALL_DIALECTS",
    "leak_dialects",
    "text_before_calls",
]

FUNCTION_TAG = r"<function=[^\s<>\x00]{1,256}>"  # NUL: masked code ends a name
# gpt-oss with its special tokens stripped: analysis...assistantfinal...
STRIPPED = re.compile(r"assistant(?:final|commentary|analysis)")
STRIPPED_START = re.compile(r"[ \t\r\n]*analysis(?=[A-Z])")
RECIPIENT = "to=functions."  # a harmony call's recipient, with or without the tokens

DIALECTS: tuple[str, ...] = (
    "harmony",
    "tool-call-tag",
    "function-tag",
    "mistral-tool-calls",
    "kimi-tool-calls",
    "think-brackets",
    "seed-think",
    "thought-tag",
    "gemma-channel",
    "dsml",
    "minimax-tool-calls",
    "gemma-tool-call",
    "deepseek-tool-calls",
    "cohere-markers",
    "lfm-tool-calls",
    "minimax-think",
    "kimi-think",
    "kimi-k3-markers",
    "minicpm-function",
    "gigachat-markers",
    "nemotron-toolcall",
    "apriel-markers",
    "apertus-tool-calls",
)
# The dialects whose markers always mean tool calls. A harmony reply holds one
# only when it has a `to=functions.NAME` message: has_text_tool_calls decides.
TOOL_CALL_DIALECTS: frozenset[str] = frozenset(
    (
        "tool-call-tag",
        "function-tag",
        "mistral-tool-calls",
        "kimi-tool-calls",
        "dsml",
        "minimax-tool-calls",
        "gemma-tool-call",
        "deepseek-tool-calls",
        "lfm-tool-calls",
        "minicpm-function",
        "nemotron-toolcall",
        "apertus-tool-calls",
    )
)

# The literal markers of each dialect; every one starts with '<', '[', ']' or
# U+25C1, which keeps re's search fast on prose. `<|channel>` (Gemma) is not
# `<|channel|>`.
_MARKERS: dict[str, tuple[str, ...]] = {
    "harmony": (
        "<|channel|>",
        "<|message|>",
        "<|start|>",
        "<|end|>",
        "<|call|>",
        "<|return|>",
        "<|constrain|>",
    ),
    "tool-call-tag": ("<tool_call>", "</tool_call>", "<arg_key>"),
    "function-tag": ("<seed:tool_call>",),
    "mistral-tool-calls": ("[TOOL_CALLS]",),
    "kimi-tool-calls": (
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
    ),
    "think-brackets": ("[THINK]", "[/THINK]"),
    "seed-think": ("<seed:think>", "</seed:think>"),
    "thought-tag": ("<thought>", "</thought>"),
    "gemma-channel": ("<|channel>", "<channel|>"),
    "dsml": ("<\uff5cDSML\uff5c", "</\uff5cDSML\uff5c"),
    "minimax-tool-calls": (
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        "]<]minimax[>[",
        "[TOOL_CALL]",
        "[/TOOL_CALL]",
    ),
    "gemma-tool-call": ("<|tool_call>", "<tool_call|>", '<|"|>'),
    "deepseek-tool-calls": tuple(
        f"<{bar}tool\u2581{word}{bar2}>"
        for word in (
            "calls\u2581begin",
            "calls\u2581end",
            "call\u2581begin",
            "call\u2581end",
            "sep",
        )
        for bar, bar2 in (("\uff5c", "\uff5c"), ("|", "|"))
    ),
    "cohere-markers": tuple(
        f"<|{edge}_{part}|>"
        for part in ("THINKING", "ACTION", "RESPONSE", "TEXT")
        for edge in ("START", "END")
    )
    + ("<|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>"),
    "lfm-tool-calls": ("<|tool_call_start|>",),
    "minimax-think": ("<mm:think>", "</mm:think>"),
    "kimi-think": ("\u25c1think\u25b7", "\u25c1/think\u25b7"),
    "kimi-k3-markers": ("<|open|>", "<|close|>", "<|sep|>"),
    "minicpm-function": ('<function name="', "<param name="),
    "gigachat-markers": ("<|message_sep|>", "<|role_sep|>", "<|function_call|>"),
    "nemotron-toolcall": ("<TOOLCALL>", "</TOOLCALL>"),
    "apriel-markers": (
        "<tool_calls>",
        "</tool_calls>",
        "[BEGIN FINAL RESPONSE]",
        "[END FINAL RESPONSE]",
    ),
    "apertus-tool-calls": ("<|tools_prefix|>", "<|tools_suffix|>"),
}
_DIALECT_OF = {marker: name for name, markers in _MARKERS.items() for marker in markers}


def _trie(branches: list[tuple[str, str]]) -> str:
    """One regex for (literal, then pattern) branches, factored by shared prefixes.

    A flat alternation of two dozen markers that all start with '<' or '[' makes
    re try each of them at every '<' of a reply; factored, each character is
    looked at once per branch point, so a reply full of other tags stays cheap.
    """
    groups: dict[str, list[tuple[str, str]]] = {}
    ends: list[str] = []
    for literal, tail in branches:
        if literal:
            groups.setdefault(literal[0], []).append((literal[1:], tail))
        else:
            ends.append(tail)
    alternatives = [re.escape(c) + _trie(rest) for c, rest in groups.items()] + ends
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"


@cache
def _markers_of(names: frozenset[str]) -> re.Pattern[str]:
    """One search for the markers of every dialect in names."""
    branches = [(m, "") for name in DIALECTS if name in names for m in _MARKERS[name]]
    if "function-tag" in names:
        branches.append(("<function=", FUNCTION_TAG.removeprefix("<function=")))
    return re.compile(_trie(branches))


def leak_dialects(s: str) -> tuple[str, ...]:
    """Names of the leak dialects present in a reply's content, in DIALECTS order, each once."""
    if not isinstance(s, str):
        return ()
    found = _dialects_in(s)
    if found and ("`" in s or "~~~" in s or has_indented(s)):
        # Masking code only hides markers: it is needed only when some were found,
        # so a reply dense with fences and free of markers is not walked fence by fence.
        found = _dialects_in(mask_code(s))
    return tuple(name for name in DIALECTS if name in found)


def _dialects_in(masked: str) -> set[str]:
    """The dialects whose markers `masked` holds, read as it is (code already masked or not)."""
    # <think> tags are the commonest markup in a reply and no marker holds one: they go
    # first, each replaced by a NUL (which no marker holds either, so nothing new forms),
    # so that the search below stops at few '<'.
    masked = masked.replace("<think>", "\0").replace("</think>", "\0")
    found: set[str] = set()
    if STRIPPED_START.match(masked) or STRIPPED.search(masked) or RECIPIENT in masked:
        found.add("harmony")
    # A search per dialect found, each resuming where the last stopped: at most
    # len(DIALECTS) passes over any stretch, and one over a reply with none.
    pos = 0
    while len(found) < len(DIALECTS):
        m = _markers_of(frozenset(DIALECTS) - found).search(masked, pos)
        if m is None:
            break
        found.add(_DIALECT_OF.get(m.group(), "function-tag"))
        pos = m.start() + 1
    return found


# Where a call written as text can begin, in any recoverable dialect.
_CALL_OPENERS = re.compile(
    r"<tool_call>|<function=|\[TOOL_CALLS\]|<\|tool_calls_section_begin\|>|<\|tool_call_begin\|>"
    r"|<\|start\|>|<\|channel\|>|to=functions\.|<minimax:tool_call>|\]<\]minimax\[>\[|<\|tool_call>"
    r"|<[\uff5c|]tool\u2581calls?\u2581begin[\uff5c|]>|<seed:tool_call>"
    r"|<\uff5cDSML\uff5c(?:function|tool)_calls>"
)


def text_before_calls(s: str) -> str:
    """The prose before the first tool call written as text, trimmed; "" when it holds markup.

    What a tool parser would return as the content beside the calls it parsed.
    """
    found = _CALL_OPENERS.search(s)
    head = (s[: found.start()] if found else s).strip()
    return "" if leak_dialects(head) else head
