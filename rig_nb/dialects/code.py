"""Markdown code in a reply: the regions a real answer quotes rather than says.

`mask_code` blanks closed fenced blocks (``` or ~~~, CommonMark's length and
info-string rules), indented code blocks (four spaces or a tab, after a blank
line or at the start) and inline code spans (a run of N backticks closed by the
next run of exactly N, within one paragraph) with NUL characters, keeping every
other character at its offset. A fence with no closing line hides nothing. Every
step is a C-level scan or a walk over the runs it found: linear on any input. The
walk is Python, so a reply holding more than MASK_BUDGET backticks and tildes is
not masked at all (its markers count wherever they stand): real answers quote
code with far fewer, and a reply of nothing but fences costs a scan, not a walk.
"""

from __future__ import annotations

import re
from bisect import bisect_left

__all__ = ["FILL", "MASK_BUDGET", "has_indented", "mask_code"]

# No marker contains NUL, so no marker can span a blanked region, and NUL is
# not whitespace to the lookaheads that scan past blanks.
FILL = "\x00"
MASK_BUDGET = 10_000

_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
_TICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


# An indented code block: lines indented by four spaces or a tab, after a blank
# line or at the start of the reply (CommonMark: it cannot interrupt a paragraph).
# Each line is matched once: the run of lines is a greedy repeat of "line, newline".
_INDENTED = re.compile(r"(?:\A|\n[ \t]*\n)((?:(?: {4}|\t)[^\n]*(?:\n|\Z))+)")


def has_indented(s: str) -> bool:
    """Whether s may hold an indented code block (a cheap test before masking)."""
    return s.startswith(("    ", "\t")) or "\n    " in s or "\n\t" in s


def mask_code(s: str) -> str:
    """s with its code regions replaced by FILL, same length."""
    masked = _mask_marked(s)
    if not has_indented(masked):
        return masked
    parts: list[str] = []
    prev = 0
    for block in _INDENTED.finditer(masked):
        start, end = block.span(1)
        parts.append(masked[prev:start])
        parts.append(FILL * (end - start))
        prev = end
    if not parts:
        return masked
    parts.append(masked[prev:])
    return "".join(parts)


def _mask_marked(s: str) -> str:
    """s with its fenced blocks and inline spans replaced by FILL, same length."""
    if "`" not in s and "~~~" not in s:
        return s
    if s.count("`") + s.count("~") > MASK_BUDGET:
        return s
    regions: list[tuple[int, int]] = []
    prev = 0
    for start, end in _fences(s):
        _inline_spans(s, prev, start, regions)
        regions.append((start, end))
        prev = end
    _inline_spans(s, prev, len(s), regions)
    if not regions:
        return s
    parts: list[str] = []
    prev = 0
    for start, end in regions:
        parts.append(s[prev:start])
        parts.append(FILL * (end - start))
        prev = end
    parts.append(s[prev:])
    return "".join(parts)


def _fences(s: str) -> list[tuple[int, int]]:
    """Closed fenced blocks, each from its opening line's start to its closing line's end."""
    # (line start, line end, fence char, run length, may open, may close)
    lines: list[tuple[int, int, str, int, bool, bool]] = []
    for m in _FENCE_RUN.finditer(s):
        start = m.start()
        # At most three spaces of indent: look back four characters, no further,
        # so a long line of runs costs no more than its length.
        line = s.rfind("\n", max(0, start - 4), start) + 1
        if (line == 0 and start > 3) or s[line:start].strip(" "):
            continue
        end = s.find("\n", m.end())
        end = len(s) if end < 0 else end
        info = s[m.end() : end]
        char = s[start]
        opens = char == "~" or "`" not in info  # a backtick fence's info string has none
        lines.append((line, end, char, m.end() - start, opens, not info.strip()))
    # Longest closing fence of each char at or after each line: an opener longer
    # than that is unclosed and is skipped in O(1), not by rescanning the tail.
    longest = {"`": [0] * (len(lines) + 1), "~": [0] * (len(lines) + 1)}
    for i in range(len(lines) - 1, -1, -1):
        for table in longest.values():
            table[i] = table[i + 1]
        _, _, char, length, _, closes = lines[i]
        if closes and length > longest[char][i]:
            longest[char][i] = length
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        line, _, char, length, opens, _ = lines[i]
        if not opens or longest[char][i + 1] < length:
            i += 1
            continue
        j = i + 1
        while not (lines[j][2] == char and lines[j][5] and lines[j][3] >= length):
            j += 1
        found.append((line, lines[j][1]))
        i = j + 1
    return found


def _inline_spans(s: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    """Append the code spans of s[start:end] to out, in order."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(s, start, end)]
    if len(runs) < 2:
        return
    blanks = [m.start() for m in _BLANK_LINE.finditer(s, runs[0][1], runs[-1][0])]
    # The next run of the same length after each run, found right to left.
    following = [-1] * len(runs)
    last: dict[int, int] = {}
    for k in range(len(runs) - 1, -1, -1):
        width = runs[k][1] - runs[k][0]
        following[k] = last.get(width, -1)
        last[width] = k
    i = 0
    while i < len(runs):
        j = following[i]
        if j < 0:
            i += 1
            continue
        # A span does not cross a blank line: a stray backtick must not hide
        # the paragraphs after it.
        b = bisect_left(blanks, runs[i][1])
        if b < len(blanks) and blanks[b] < runs[j][0]:
            i += 1
            continue
        out.append((runs[i][0], runs[j][1]))
        i = j + 1
