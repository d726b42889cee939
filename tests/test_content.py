"""Tests for rig_nb.content: the seed's reasoning rules and JSON extraction."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from rig_nb import content
from rig_nb.content import _SCAN_BUDGET, decode_json_object, reasoning_shape, strip_reasoning
from rig_nb.errors import InvalidJSONError, NotJSONError

MIB = 1 << 20


def _repeat(unit: str, size: int = MIB) -> str:
    return unit * (size // len(unit))


# kb's decodeJSONObject table, plus the Go encoding/json edges the port keeps.
DECODE_OK = [
    pytest.param(
        '<think>The user wants {"answer": n}.</think>\n{"answer": 42}',
        {"answer": 42},
        id="closed-think-block-before-json",
    ),
    pytest.param(
        'I should answer with an object {"answer": 1}.</think>\n{"answer": 42}',
        {"answer": 42},
        id="consumed-opening-tag",
    ),
    pytest.param(
        '<think>Schema: {"name": str, "tags": [...]}</think>'
        'Shape {"name": "x"} first.\n{"name": "rig", "tags": ["a", "b"]}',
        {"name": "rig", "tags": ["a", "b"]},
        id="schema-sketch-before-longer-reply",
    ),
    pytest.param(
        'The reply {"name": "rig", "tags": ["a"]} and a sketch {"name": "x"}',
        {"name": "rig", "tags": ["a"]},
        id="longest-wins-when-first",
    ),
    pytest.param('{"a": 1} then {"b": 2}', {"a": 1}, id="tie-keeps-first"),
    pytest.param(
        'Sure {here} it is, with {braces}: {"ok": true}',
        {"ok": True},
        id="braces-in-prose",
    ),
    pytest.param('```json\n{"a": [1, 2], "b": null}\n```', {"a": [1, 2], "b": None}, id="fenced"),
    pytest.param('{"a": 1, "b": {"c": "d"}}', {"a": 1, "b": {"c": "d"}}, id="plain"),
    pytest.param(" \t\r\n{}\n ", {}, id="empty-object-in-space"),
    pytest.param('<think>xxxxx</think>json{"x": 1.5}', {"x": 1.5}, id="think-then-json-prefix"),
    pytest.param("null", {}, id="null-is-nil-map"),
    pytest.param('[{"a": 1}, {"a": 1, "b": 2}]', {"a": 1, "b": 2}, id="array-scanned"),
    pytest.param('{"a": 1, "a": 2}', {"a": 2}, id="duplicate-key-last-wins"),
    pytest.param('{"a": 1e-400}', {"a": 0.0}, id="float-underflow-is-zero"),
    pytest.param(
        '{"a": "\\ud800x", "\\udc00": 1}', {"a": "\ufffdx", "\ufffd": 1}, id="lone-surrogate"
    ),
    pytest.param('{"a": ["\\ud83d\\ude00"]}', {"a": ["\U0001f600"]}, id="surrogate-pair"),
    pytest.param('{"a": [{"b": ["\\udfff"]}]}', {"a": [{"b": ["\ufffd"]}]}, id="nested-surrogate"),
    pytest.param(
        '{"k":"{"}":1, "more": 2}',
        {"k": "{"},
        id="resume-past-parsed-candidate",
    ),
    pytest.param('x {"a": NaN} {"b": 1}', {"b": 1}, id="rejected-candidate-skipped"),
]

DECODE_ERR = [
    pytest.param("", NotJSONError, id="empty"),
    pytest.param("no json here", NotJSONError, id="no-brace"),
    pytest.param('"just a string"', NotJSONError, id="json-string"),
    pytest.param("[1, 2, 3]", NotJSONError, id="json-array-no-brace"),
    pytest.param("{not json} and {neither", InvalidJSONError, id="braces-nothing-valid"),
    pytest.param('<think>{"a": 1}', NotJSONError, id="unclosed-think-holding-json"),
    pytest.param('{"a": NaN}', InvalidJSONError, id="nan"),
    pytest.param('{"a": Infinity}', InvalidJSONError, id="infinity"),
    pytest.param('{"a": -Infinity}', InvalidJSONError, id="minus-infinity"),
    pytest.param('{"a": 1e400}', InvalidJSONError, id="float-overflow"),
    pytest.param('{"a": 1' + "0" * 400 + "}", InvalidJSONError, id="int-overflow"),
    pytest.param('{"a": "\x01"}', InvalidJSONError, id="control-char-in-string"),
    pytest.param("{'a': 1}", InvalidJSONError, id="single-quotes"),
    pytest.param('{"a": 1,}', InvalidJSONError, id="trailing-comma"),
]


@pytest.mark.parametrize(("reply", "want"), DECODE_OK)
def test_decode_json_object(reply: str, want: dict[str, Any]) -> None:
    assert decode_json_object(reply) == want


@pytest.mark.parametrize(("reply", "err"), DECODE_ERR)
def test_decode_json_object_errors(reply: str, err: type[Exception]) -> None:
    with pytest.raises(err):
        decode_json_object(reply)


def test_decode_error_message_holds_no_reply_text() -> None:
    secret = "SECRET-REPLY-TEXT"
    for reply in (secret, "{" + secret):
        with pytest.raises((NotJSONError, InvalidJSONError)) as info:
            decode_json_object(reply)
        assert secret not in str(info.value)


def test_scan_budget_bounds_the_scan() -> None:
    # A candidate that runs past the budget before failing ends the scan.
    short = '{"k":"' + "x" * 100 + '{"ok": 1}'
    assert decode_json_object(short) == {"ok": 1}
    with pytest.raises(InvalidJSONError):
        decode_json_object('{"k":"' + "x" * _SCAN_BUDGET + '{"ok": 1}')


STRIP = [
    pytest.param("", "", "none", id="empty"),
    pytest.param("answer", "answer", "none", id="plain"),
    pytest.param("<think>r</think>answer", "answer", "closed", id="closed"),
    pytest.param("<think></think>", "", "closed", id="closed-empty"),
    pytest.param("<think>a</think>x<think>b</think>y", "xy", "closed", id="closed-several"),
    pytest.param("<think>a\nb\n</think>\n\nanswer\n", "answer", "closed", id="closed-multiline"),
    pytest.param("reasoning</think>answer", "answer", "unopened", id="unopened"),
    pytest.param("a</think>b</think>c", "c", "unopened", id="unopened-through-last"),
    pytest.param("answer<think>more", "answer", "unclosed", id="unclosed"),
    pytest.param("<think>reasoning", "", "unclosed", id="unclosed-at-start"),
    pytest.param("a<think>b<think>c", "a", "unclosed", id="unclosed-from-first"),
    pytest.param("r</think>a<think>b</think>c", "ac", "closed+unopened", id="closed+unopened"),
    pytest.param(
        "<think>a</think>answer<think>cut", "answer", "closed+unclosed", id="closed+unclosed"
    ),
    pytest.param(
        "r</think>answer<think>cut", "answer", "unopened+unclosed", id="unopened+unclosed"
    ),
    pytest.param(
        "x</think><think>a</think>answer<think>cut",
        "answer",
        "closed+unopened+unclosed",
        id="all-three",
    ),
    pytest.param("<think><think>a</think>b</think>c", "c", "closed+unopened", id="nested-looking"),
    pytest.param(
        "<think></think></think>answer", "answer", "closed+unopened", id="extra-closing-tag"
    ),
    pytest.param(
        "<thi<think>x</think>nk>answer", "", "closed+unclosed", id="tag-formed-by-removal"
    ),
    pytest.param("<THINK>r</THINK>answer", "<THINK>r</THINK>answer", "none", id="upper-case"),
    pytest.param("<Think>r</think>answer", "answer", "unopened", id="mixed-case-opening"),
    pytest.param(
        "<thinking>r</thinking>answer",
        "<thinking>r</thinking>answer",
        "none",
        id="other-tag-kept",
    ),
    pytest.param("<think >r</think >answer", "<think >r</think >answer", "none", id="spaced-tag"),
    pytest.param("  <think>r</think>\n\n answer \n", "answer", "closed", id="trim"),
    pytest.param("\x1c answer\x1f", "\x1c answer\x1f", "none", id="go-keeps-x1c-x1f"),
    pytest.param("\u00a0answer\u3000", "answer", "none", id="go-trims-nbsp-ideographic"),
    pytest.param("\u0085\u2028answer\u2029\u202f\u205f", "answer", "none", id="go-trims-nel-lsep"),
    pytest.param("\v\f\u1680\u2000answer\u200a", "answer", "none", id="go-trims-vt-ff-ogham"),
    pytest.param("\u200banswer\ufeff", "\u200banswer\ufeff", "none", id="go-keeps-zwsp-bom"),
]


@pytest.mark.parametrize(("reply", "want", "_shape"), STRIP)
def test_strip_reasoning(reply: str, want: str, _shape: str) -> None:
    assert strip_reasoning(reply) == want


@pytest.mark.parametrize(("reply", "_want", "shape"), STRIP)
def test_reasoning_shape(reply: str, _want: str, shape: str) -> None:
    assert reasoning_shape(reply) == shape


_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


def _reference(s: str) -> tuple[str, str]:
    """The seed's rules through Python's re; quadratic, for short inputs only."""
    s, count = re.subn(r"(?s)<think>.*?</think>", "", s)
    names = ["closed"] if count else []
    if "</think>" in s:
        s = s[s.rindex("</think>") + len("</think>") :]
        names.append("unopened")
    if "<think>" in s:
        s = s[: s.index("<think>")]
        names.append("unclosed")
    return s.strip(_GO_SPACE), "+".join(names) or "none"


def test_matches_regex_reference() -> None:
    pieces = ["<think>", "</think>", "<", "</", "think>", "a", " ", "\n", "\x1c", "\u3000"]
    rng = random.Random(0)
    for _ in range(3000):
        reply = "".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        assert (strip_reasoning(reply), reasoning_shape(reply)) == _reference(reply), reply


def _decode_outcome(reply: str) -> tuple[str, Any]:
    try:
        return "ok", decode_json_object(reply)
    except (NotJSONError, InvalidJSONError) as err:
        return "err", type(err)


def _reject_constant(name: str) -> None:
    raise ValueError(name)


def _reference_decode(reply: str) -> tuple[str, Any]:
    """The seed's scan without windows or budget: each '{' decoded against the whole tail."""
    s = strip_reasoning(reply)
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    try:
        value = decoder.decode(s)
    except ValueError:
        pass
    else:
        if value is None:
            return "ok", {}
        if isinstance(value, dict):
            return "ok", value
    if "{" not in s:
        return "err", NotJSONError
    best, best_len, start = None, 0, s.find("{")
    while start >= 0:
        try:
            value, end = decoder.raw_decode(s, start)
        except ValueError:
            start = s.find("{", start + 1)
            continue
        if end - start > best_len:
            best, best_len = value, end - start
        start = s.find("{", end)
    return ("err", InvalidJSONError) if best is None else ("ok", best)


_JSON_PIECES = [
    "{", "}", "[", "]", ":", ",", " ", "\n", '"', '"k"', '"v', "1", "-2.5e3", "1e", "true",
    "nul", "null", "NaN", "-Infinity", "\\", '\\"', "\\u00", "x", "<think>", "</think>",
    '{"a": 1}', '{"b": [1, {"c": "{"}]}', '{"d": {}}', '{"t": true, "f": false}',
    '"' + "s" * 40 + '"', '"' + "s" * 40, " " * 20, "12345678901234567890",
    '{"' + "k" * 40 + '": "' + "v" * 40 + '"}',
]  # fmt: skip


@pytest.mark.parametrize("window", [1, 5, 128], ids=["window-1", "window-5", "window-default"])
def test_decode_matches_reference(window: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content, "_FIRST_WINDOW", window)
    rng = random.Random(window)
    for _ in range(4000):
        reply = "".join(rng.choice(_JSON_PIECES) for _ in range(rng.randrange(16)))
        assert _decode_outcome(reply) == _reference_decode(reply), reply


# Each finishes in well under a second; the unbounded scan or a backtracking
# regex takes minutes on the same input.
HOSTILE_STRIP = [
    pytest.param(_repeat("<think>"), "", "unclosed", id="open-tags"),
    pytest.param(_repeat("</think>"), "", "unopened", id="close-tags"),
    pytest.param(_repeat("<think></think>"), "", "closed", id="closed-pairs"),
    pytest.param(_repeat("<think>") + "</think>ok", "ok", "closed", id="open-tags-one-close"),
    pytest.param(_repeat("</think>") + "ok", "ok", "unopened", id="close-tags-then-answer"),
    pytest.param(_repeat("<think></think>") + "<think>", "", "closed+unclosed", id="pairs-open"),
]


@pytest.mark.parametrize(("reply", "want", "shape"), HOSTILE_STRIP)
def test_hostile_strip(reply: str, want: str, shape: str) -> None:
    assert strip_reasoning(reply) == want
    assert reasoning_shape(reply) == shape


DEEP = 200_000

HOSTILE_DECODE_OK = [
    pytest.param(_repeat('{"a":1} '), {"a": 1}, id="repeated-objects"),
    pytest.param(_repeat("{") + '{"a": 1}', {"a": 1}, id="open-braces-then-object"),
]

HOSTILE_DECODE_ERR = [
    pytest.param(_repeat('{"a":'), InvalidJSONError, id="repeated-open-objects"),
    pytest.param('{"a":"' + _repeat("{"), InvalidJSONError, id="unterminated-string"),
    pytest.param(_repeat('{"'), InvalidJSONError, id="repeated-brace-quote"),
    pytest.param(_repeat('{"a":"\\'), InvalidJSONError, id="repeated-escapes"),
    pytest.param(_repeat('{"a":NaN,'), InvalidJSONError, id="repeated-nan"),
    pytest.param("[" * DEEP, NotJSONError, id="deep-brackets"),
    pytest.param("[" * DEEP + "]" * DEEP, NotJSONError, id="deep-brackets-closed"),
    pytest.param("{" * DEEP, InvalidJSONError, id="deep-braces"),
    pytest.param("[{" * DEEP, InvalidJSONError, id="deep-bracket-brace"),
    pytest.param('[{"a":' * DEEP, InvalidJSONError, id="deep-bracket-object"),
    pytest.param('{"a":[' * DEEP, InvalidJSONError, id="deep-object-bracket"),
    pytest.param('{"a":' * DEEP + "1" + "}" * DEEP, InvalidJSONError, id="deep-objects-closed"),
]


@pytest.mark.parametrize(("reply", "want"), HOSTILE_DECODE_OK)
def test_hostile_decode(reply: str, want: dict[str, Any]) -> None:
    assert decode_json_object(reply) == want


@pytest.mark.parametrize(("reply", "err"), HOSTILE_DECODE_ERR)
def test_hostile_decode_errors(reply: str, err: type[Exception]) -> None:
    # Only the two decode errors may escape; RecursionError must not.
    with pytest.raises((NotJSONError, InvalidJSONError)) as info:
        decode_json_object(reply)
    assert type(info.value) is err
