"""Text from JSON deltas: a UTF-16 surrogate pair split across two deltas is one character.

JSON may escape a character outside the BMP as two `\\uXXXX` halves, and a server may put
the halves in two deltas. Deltas are kept as decoded (halves and all) and joined first;
`whole` then pairs what belongs together and makes only a half left alone U+FFFD, as the
openai SDK's accumulators give.
"""

from __future__ import annotations

import re

__all__ = ["TextDeltas", "whole"]

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


class TextDeltas:
    """The deltas of one text field, each pair of surrogate halves one character.

    A high half ending a delta is held back until the next delta says whether
    its low half follows, so the text read while streaming never holds a lone half.
    """

    __slots__ = ("_held", "_pieces")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._held = ""

    def add(self, raw: str) -> None:
        if self._held:
            raw = self._held + raw
            self._held = ""
        if raw and "\ud800" <= raw[-1] <= "\udbff":
            self._held = raw[-1]
            raw = raw[:-1]
        if raw:
            self._pieces.append(whole(raw))

    @property
    def live(self) -> str:
        """The text so far, a trailing high half held back."""
        # Joined lazily and kept joined: reading after every delta copies, never rescans.
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def final(self) -> str:
        """The whole text, a high half left alone at the end as U+FFFD."""
        return self.live + ("\ufffd" if self._held else "")
