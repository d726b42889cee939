"""Strict JSON: the one way rig_nb reads JSON it did not write (tool arguments, trace files,
command-line values, span attributes).

Python's `json` accepts NaN, Infinity and -Infinity, which are not JSON, reads 1e400 as
an infinite float, and raises RecursionError on deep nesting. Here each of those is a
ValueError, so a caller handles one exception for every input that is not JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["DECODER", "TOO_DEEP", "loads"]

TOO_DEEP = "nested too deeply"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range for a JSON number")
    return value


# For raw_decode (a JSON value at a position of a longer text); it raises RecursionError on
# deep nesting, which callers of raw_decode turn into their own error.
DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def loads(text: str | bytes) -> Any:
    """The JSON value of `text`; ValueError (json.JSONDecodeError where the syntax is wrong)
    for anything that is not strict JSON, including deep nesting."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
