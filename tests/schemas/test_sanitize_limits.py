"""sanitize on what is not a plain schema: not a JSON object, a schema that contains itself,
one 1 MB deep, $refs that would grow it without bound; and the anchoring rewrite, held to
re.search on a table of patterns and strings."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

import pytest

from rig_nb.schemas import sanitize
from rig_nb.schemas.patterns import anchored, is_anchored
from rig_nb.servers import SERVERS
from rig_nb.servers.base import ANY_CHAR


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param([{"type": "string"}], 'not a list (at JSON pointer "")', id="list"),
        pytest.param("string", 'not a str (at JSON pointer "")', id="str"),
        pytest.param(None, 'not a NoneType (at JSON pointer "")', id="none"),
        pytest.param(
            {"properties": {"a": {1: "x"}}}, 'at JSON pointer "/properties/a/1"', id="key"
        ),
        pytest.param(
            {"default": float("nan")}, 'nan is not JSON (at JSON pointer "/default")', id="nan"
        ),
        pytest.param({"enum": [{1, 2}]}, 'a set is not JSON (at JSON pointer "/enum/0")', id="set"),
    ],
)
def test_what_is_not_json_is_a_value_error_naming_the_pointer(schema: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        sanitize(schema)


def test_a_schema_that_contains_itself() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["me"] = schema
    with pytest.raises(
        ValueError, match=re.escape('contains itself (at JSON pointer "/properties/me")')
    ):
        sanitize(schema)
    shared = {"type": "string"}  # the same object twice is not a cycle
    assert sanitize({"properties": {"a": shared, "b": shared}})[1] == []


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def test_a_1_mb_deep_schema_answers_without_recursion() -> None:
    levels = 40_000  # '{"type": "array", "items": ' is 27 bytes: over 1 MB
    schema = _deep(levels)
    assert levels * 27 > 1_000_000 and levels > sys.getrecursionlimit()
    out, lines = sanitize(schema, server="llama.cpp")
    assert lines == []
    depth, node = 0, out
    while "items" in node:
        assert node is not schema
        node, depth = node["items"], depth + 1
    assert depth == levels and node == {"type": "string"}


def test_a_deep_problem_is_named_by_an_abbreviated_pointer() -> None:
    schema = _deep(5_000)
    node = schema
    for _ in range(5_000):
        node = node["items"]
    node["format"] = float("inf")
    with pytest.raises(ValueError) as info:
        sanitize(schema)
    assert "/items/items/" in str(info.value) and "/.../items/items/format (depth 5001)" in str(
        info.value
    )
    assert len(str(info.value)) < 300


def test_refs_that_would_grow_the_schema_without_bound_stop_with_a_value_error() -> None:
    defs = {
        f"D{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/D{i + 1}"}, "b": {"$ref": f"#/$defs/D{i + 1}"}},
        }
        for i in range(40)
    }
    defs["D40"] = {"type": "string"}
    schema = {"$ref": "#/$defs/D0", "$defs": defs}
    started = time.monotonic()
    with pytest.raises(
        ValueError, match=r"inlining \$refs grows the schema past \d+ values \(at JSON pointer"
    ):
        sanitize(schema)
    assert time.monotonic() - started < 30
    shared: dict[str, Any] = {"type": "string"}
    for _ in range(60):  # the same objects reused: 2**60 values as a tree
        shared = {"type": "object", "properties": {"a": shared, "b": shared}}
    with pytest.raises(ValueError, match="grows the schema past"):
        sanitize(shared)


def test_a_1_mb_schema_takes_linear_time() -> None:
    def wide(n: int) -> dict[str, Any]:
        props = {
            f"p{i}": {"type": ["string", "null"], "pattern": "a+b", "maxLength": 9}
            for i in range(n)
        }
        return {"type": "object", "properties": props, "required": list(props)}

    small, big = wide(3_200), wide(12_800)
    assert len(json.dumps(big)) > 1_000_000

    def took(schema: dict[str, Any]) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            sanitize(schema, server="llama.cpp")
            best = min(best, time.perf_counter() - started)
        return best

    t_small, t_big = took(small), took(big)
    assert t_big < 5.0  # benchmarks/schemas_bench.py holds the figure; this is the bound under load
    assert t_big < 8 * t_small  # four times the size: linear, with room for a noisy machine


PATTERNS = [
    "abc",
    "^abc",
    "abc$",
    "a|b",
    "^a|b$",
    "(a|b)c",
    "a(?=b)",
    "(?<=x)y",
    r"\d+",
    "[a-z]{2,3}",
    "a.c",
    "",
    "x*",
    r"\S",
    "colou?r",
    "(ab)+",
    r"\bword\b",
    "[^a]",
    r"\$",
    "[|]",
    r"a\|b",
    "\u00e9+",
]
STRINGS = [
    "",
    "abc",
    "xabcx",
    "ab",
    "a\nb",
    "b",
    "xy",
    "123",
    "ABC",
    "word",
    "sword",
    "a c",
    "\n",
    "colour",
    "color\n",
    "abab",
    "\U0001f600abc",
    "$",
    "|",
    "a|b",
    "\u00e9t\u00e9",
    "ac",
    "bc",
    "abc\n",
]


@pytest.mark.parametrize(
    "any_char",
    sorted({s.schema_dialect.anchor for s in SERVERS.values() if s.schema_dialect.anchor}),
)
def test_the_anchored_pattern_accepts_exactly_what_re_search_finds(any_char: str) -> None:
    for pattern in PATTERNS:
        wrapped = anchored(pattern, any_char)
        assert wrapped is not None, pattern
        assert is_anchored(wrapped)
        for text in STRINGS:
            want = re.search(pattern, text) is not None
            assert (re.search(wrapped, text) is not None) == want, (pattern, text)
            assert (re.fullmatch(wrapped, text) is not None) == want, (pattern, text)


def test_a_pattern_anchored_as_a_whole_stays() -> None:
    for pattern in ["^abc$", "^(a|b)$", "^[|]$", r"^a\|b$", "^$", "^[]a]$"]:
        assert is_anchored(pattern) and anchored(pattern, ANY_CHAR) is None, pattern
    for pattern in ["^a|b$", r"^abc\$", "abc$", "^abc", "a^b$"]:
        assert not is_anchored(pattern), pattern
    schema = {"type": "string", "pattern": "^[A-Z]+$"}
    assert sanitize(schema, server="llama.cpp") == (schema, [])
