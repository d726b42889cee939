"""A `pattern`: is it anchored as a whole, and its anchored form.

JSON Schema matches a pattern anywhere in the string (ECMA-262 `RegExp.test`, Python's
`re.search`); grammar engines match it against the whole string. `P` anchored as
`^ANY*(?:P)ANY*$` accepts exactly the strings `P` matches somewhere: the group keeps
P's own alternatives together, and P's own `^`, `$` and lookarounds see the same
neighbours as before.
"""

from __future__ import annotations

__all__ = ["anchored", "is_anchored"]


def _escaped(pattern: str, at: int) -> bool:
    """True when the character at `at` is escaped (an odd run of backslashes before it)."""
    run = 0
    while at - 1 - run >= 0 and pattern[at - 1 - run] == "\\":
        run += 1
    return run % 2 == 1


def is_anchored(pattern: str) -> bool:
    """`^...$` as a whole: a leading `^`, a trailing unescaped `$`, no `|` at the top level."""
    if len(pattern) < 2 or pattern[0] != "^" or pattern[-1] != "$":
        return False
    if _escaped(pattern, len(pattern) - 1):
        return False
    depth, i, n = 0, 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith("^", i + 1):
                i += 1
            if pattern.startswith("]", i + 1):  # a ] first in a class is a literal
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == "|" and depth == 0:
            return False
        i += 1
    return True


def anchored(pattern: str, any_char: str) -> str | None:
    """`pattern` anchored with `any_char` as "any character"; None when it is anchored
    already, or ends in a lone backslash (wrapping would escape the closing parenthesis)."""
    if is_anchored(pattern) or (pattern.endswith("\\") and _escaped(pattern + "x", len(pattern))):
        return None
    return f"^{any_char}*(?:{pattern}){any_char}*$"
