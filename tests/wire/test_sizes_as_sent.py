"""Size limits count the bytes as sent (UTF-8, as the openai SDK and httpx encode a body)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from runs import LoopRunner

from rig_nb.testing import ScriptedServer, chat_reply
from rig_nb.wire import check_response_format
from rig_nb.wire.request_fields import MAX_RESPONSE_FORMAT_BYTES


def schema_with(description: str) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object", "description": description}},
    }


def as_sent(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def sized(total: int, letter: str) -> dict[str, Any]:
    """A schema whose compact UTF-8 JSON is `total` bytes, padded with `letter` (and ASCII)."""
    base = len(as_sent(schema_with("")))
    width = len(letter.encode())
    fill, odd = divmod(total - base, width)
    return schema_with(letter * fill + "x" * odd)


@pytest.mark.parametrize(
    "letter",
    [
        pytest.param("\u00e9", id="latin-2-bytes"),
        pytest.param("\u6c34", id="cjk-3-bytes"),
        pytest.param("\U0001f600", id="emoji-4-bytes"),
    ],
)
def test_sixty_kb_of_non_ascii_is_sent(
    server: ScriptedServer, run_loop: LoopRunner, letter: str
) -> None:
    fmt = sized(60 * 1024, letter)
    assert len(as_sent(fmt)) == 60 * 1024
    assert len(json.dumps(fmt).encode()) > MAX_RESPONSE_FORMAT_BYTES  # escaped, it would not fit
    assert check_response_format(fmt) == fmt
    reply = chat_reply('{"answer": 1}')
    trace = run_loop.trace(reply, max_retries=2, prompt="one?", response_format=fmt)
    body = server.requests[0].body
    assert trace.outcome == "ok"
    assert as_sent(fmt) in body  # the bytes the limit counted are the bytes on the wire
    assert json.loads(body)["response_format"] == fmt


@pytest.mark.parametrize("letter", ["x", "\u00e9", "\u6c34"])
def test_the_limit_is_exact_in_utf8_bytes(letter: str) -> None:
    at = sized(MAX_RESPONSE_FORMAT_BYTES, letter)
    assert len(as_sent(at)) == MAX_RESPONSE_FORMAT_BYTES
    assert check_response_format(at) == at
    over = sized(MAX_RESPONSE_FORMAT_BYTES + 1, letter)
    with pytest.raises(ValueError) as caught:
        check_response_format(over)
    assert f"is {MAX_RESPONSE_FORMAT_BYTES + 1} bytes of JSON as sent (UTF-8)" in str(caught.value)


def test_lone_surrogates_count_as_the_replacement_character_sent() -> None:
    fmt = schema_with("\ud800" * 20_000)  # sent as U+FFFD: 3 bytes each, 60,000 in all
    checked = check_response_format(fmt)
    assert checked is not None
    assert checked["json_schema"]["schema"]["description"] == "\ufffd" * 20_000
    assert len(as_sent(checked)) < MAX_RESPONSE_FORMAT_BYTES


def test_an_oversized_format_is_refused_before_any_request(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    fmt = sized(MAX_RESPONSE_FORMAT_BYTES + 3, "\u6c34")
    with pytest.raises(ValueError, match="64 KB"):
        run_loop.trace(chat_reply("never sent"), max_retries=2, prompt="one?", response_format=fmt)
    assert server.requests == []
