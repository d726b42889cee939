"""Text from JSON deltas: a UTF-16 surrogate pair split across two deltas is one character.

JSON may escape a character outside the BMP as two `\\uXXXX` halves, and a server may put
the halves in two deltas. Deltas are kept as decoded (halves and all) and joined first;
`whole` then pairs what belongs together and makes only a half left alone U+FFFD, as the
openai SDK's accumulators give.
"""

from __future__ import annotations

import re

__all__ = ["whole"]

_PAIR = re.compile("([\ud800-\udbff])([\udc00-\udfff])")
_HALF = re.compile("[\ud800-\udfff]")


def _joined(match: re.Match[str]) -> str:
    high, low = match.group(1), match.group(2)
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def whole(text: str) -> str:
    """`text` with each high+low surrogate pair as its character and lone halves as U+FFFD."""
    if not _HALF.search(text):
        return text
    return _HALF.sub("\ufffd", _PAIR.sub(_joined, text))
