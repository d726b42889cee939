"""JSON in a call's text, read strictly: what calls.py and scan.py both read it with.

NaN, Infinity and numbers beyond a float's range are refused, so arguments read
here are JSON any client can read back. `decode_at` reads the value that starts
at an offset and says where it ends; `decode` reads text that holds one value.
Their errors are worded for a TextToolCall's `error`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

__all__ = ["NAME_IN_JSON", "WS", "decode", "decode_at", "scan_once", "why"]

# The whitespace JSON allows between tokens, as str.strip takes it.
WS = " \t\n\r"
# A call's name in JSON text that does not decode: the error record still names the call.
NAME_IN_JSON = re.compile(r'"name"[ \t\r\n]*:[ \t\r\n]*"([^"\\\n]{1,256})"')


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is out of range")
    return value


# Python's decoder takes NaN and Infinity and turns 1e999 into inf; arguments
# must be JSON that any client can read back.
_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_reject_constant)
# raw_decode without its wrapper: StopIteration when no value starts at the index.
scan_once: Callable[[str, int], tuple[Any, int]] = vars(_DECODER)["scan_once"]


def why(err: Exception) -> str:
    """The error for arguments the decoder refused."""
    if isinstance(err, StopIteration):
        return "arguments are not valid JSON (Expecting value)"
    reason = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
    return f"arguments are not valid JSON ({reason})"


def decode_at(text: str, start: int) -> tuple[Any, int, str]:
    """The JSON value at text[start:] and where it ends, or (None, -1, why not)."""
    try:
        value, end = scan_once(text, start)
    except (StopIteration, ValueError, RecursionError) as err:
        return None, -1, why(err)
    return value, end, ""


def decode(text: str) -> tuple[Any, str]:
    """The one JSON value text holds (whitespace around it allowed), or (None, why not)."""
    text = text.strip(WS)
    value, end, error = decode_at(text, 0)
    if not error and end != len(text):
        return None, "arguments are not valid JSON (text after the value)"
    return value, error
