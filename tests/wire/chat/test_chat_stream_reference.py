"""rig_nb reads generated chat streams as the openai SDK's ChatCompletionStreamState does.

A seeded generator writes chat.completion.chunk streams the way servers do and
worse: LF, CRLF and lone CR line ends mixed, chunk boundaries anywhere (mid-line,
mid UTF-8 sequence, between a CR and its LF), surrogate pairs split across deltas,
tool call fragments split anywhere, `: ping` comments, an event's JSON over several
`data:` lines, usage in its own chunk or in the finish chunk, with or without
`[DONE]`. The SDK (its own SSE decoder, then the accumulator) and rig_nb read the same
bytes from one loopback server and must agree on content, reasoning, tool calls
(ids, names, arguments) and finish_reason.

The SDK's accumulator joins strings as decoded, so a pair split across deltas is
two halves in one Python str; as UTF-16 (what JSON escapes stand for) they are one
character, and a half alone is U+FFFD. `as_utf16` reads the SDK's strings that way.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from openai import OpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState
from stream_reference import as_utf16, rig_read

from rig_nb import Client
from rig_nb.testing import Response, ScriptedServer
from rig_nb.wire import Request, StreamAssembler, Turn, read_stream

SEEDS = range(48)
WORDS = ["the", "tool", "r\u00e9sum\u00e9", "\u20ac5", "\U0001f600", "\u4e2d\u6587", "a\nb"]
WORDS += ["\U0001d11e", '"quoted"', "back\\slash", "\U0001f44d\U0001f3fd", "<b>x</b>"]
NAMES = ["get_weather", "search", "f\u00fc\u00df", "run_\U0001f680"]


def units(text: str) -> list[str]:
    """`text` as UTF-16 code units, each a one-character str (halves of pairs included)."""
    raw = text.encode("utf-16-le")
    return [raw[i : i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(raw), 2)]


def split_anywhere(rng: random.Random, text: str, most: int) -> list[str]:
    """`text` in 1..`most` pieces cut at any UTF-16 unit, so a pair may be cut in two."""
    u = units(text)
    if len(u) < 2:
        return [text]
    cuts = sorted(rng.sample(range(1, len(u)), min(len(u) - 1, rng.randint(0, most - 1))))
    bounds = [0, *cuts, len(u)]
    return ["".join(u[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def generated(seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(events, what they say): one seeded chat stream as decoded events."""
    rng = random.Random(seed)
    head = {"id": f"chatcmpl-{seed}", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    field = rng.choice(["reasoning_content", "reasoning"])
    reasoning = prose(rng, rng.randint(0, 12))
    content = prose(rng, rng.randint(0, 20))
    calls = [
        {
            "id": f"call_{seed}_{n}",
            "name": rng.choice(NAMES),
            "arguments": json.dumps(
                {"q": prose(rng, rng.randint(1, 6)), "n": n}, ensure_ascii=False
            ),
        }
        for n in range(rng.choice([0, 0, 1, 2, 3]))
    ]
    events = [event({"role": "assistant", "content": ""})]
    events += [event({field: p}) for p in split_anywhere(rng, reasoning, 8) if p]
    events += [event({"content": p}) for p in split_anywhere(rng, content, 12) if p]
    for n, call in enumerate(calls):
        fn = {"name": call["name"], "arguments": ""}
        events.append(
            event(
                {"tool_calls": [{"index": n, "id": call["id"], "type": "function", "function": fn}]}
            )
        )
        for p in split_anywhere(rng, call["arguments"], 6):
            events.append(event({"tool_calls": [{"index": n, "function": {"arguments": p}}]}))
    finish = "tool_calls" if calls else rng.choice(["stop", "length"])
    usage = {"prompt_tokens": seed, "completion_tokens": 7, "total_tokens": seed + 7}
    ending = rng.choice(["usage-chunk", "usage-in-finish", "no-usage"])
    last = event({}, finish)
    if ending == "usage-in-finish":
        last["usage"] = usage
    events.append(last)
    if ending == "usage-chunk":
        events.append({**head, "choices": [], "usage": usage})
    said = {"content": content, "reasoning": reasoning, "field": field, "calls": calls}
    return events, {**said, "finish": finish, "done": ending == "no-usage" or rng.random() < 0.7}


def event_text(rng: random.Random, event: dict[str, Any]) -> list[str]:
    """An event's JSON as the lines of its `data:` fields: one, or one per JSON line."""
    halves = any("\ud800" <= c <= "\udfff" for c in json.dumps(event, ensure_ascii=False))
    # A lone half cannot be UTF-8: such an event goes out with ASCII escapes.
    ascii_only = halves or rng.random() < 0.5
    if rng.random() < 0.3:
        return json.dumps(event, ensure_ascii=ascii_only, indent=1).split("\n")
    return [json.dumps(event, ensure_ascii=ascii_only)]


def wire_bytes(seed: int, events: list[dict[str, Any]], done: bool) -> bytes:
    """The events as SSE bytes, each line ended by LF, CRLF or CR, comments between."""
    rng = random.Random(seed + 1000)
    ends = ["\n", "\r\n", "\r"]
    style = rng.choice([*ends, "mixed"])

    last = [""]

    def end() -> str:
        if style != "mixed":
            return style
        # A CR then an LF is one line end, never two: after a CR comes a CR or a CRLF.
        last[0] = rng.choice(ends[1:] if last[0] == "\r" else ends)
        return last[0]

    out: list[str] = []
    if rng.random() < 0.5:
        out.append(f": ping{end()}{end()}")
    for e in [*events, "[DONE]"] if done else events:
        lines = [e] if isinstance(e, str) else event_text(rng, e)
        if rng.random() < 0.2:
            out.append(f": keep-alive{end()}")
        if rng.random() < 0.1:
            out.append(f"event: chunk{end()}id: {rng.randint(0, 99)}{end()}")
        out.extend(f"data: {line}{end()}" for line in lines)
        out.append(end())
    if rng.random() < 0.3:
        out.append(f": trailing{end()}")
    return "".join(out).encode("utf-8")


def chunked(seed: int, data: bytes) -> list[bytes]:
    """`data` cut at random bytes, so cuts fall mid-line, mid UTF-8 and between CR and LF."""
    rng = random.Random(seed + 2000)
    cuts = sorted(set(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 40)))))
    crlf = data.find(b"\r\n")
    if crlf >= 0:
        cuts = sorted({*cuts, crlf + 1})  # at least one cut between a CR and its LF
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def stream_response(pieces: list[bytes]) -> Response:
    return Response(iter(pieces), headers={"content-type": "text/event-stream"})


def sdk_read(base_url: str) -> dict[str, Any]:
    """What the SDK's stream and ChatCompletionStreamState make of one streamed reply."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    with OpenAI(base_url=base_url, api_key="k", max_retries=0) as sdk:
        stream = sdk.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for chunk in stream:
            state.handle_chunk(chunk)
    # The accumulated snapshot: get_final_completion refuses a reply cut by "length".
    choice = state.current_completion_snapshot.choices[0]
    message = choice.message
    extra = message.model_extra or {}
    return {
        "content": as_utf16(message.content),
        "reasoning": {k: as_utf16(v) for k, v in extra.items() if isinstance(v, str) and v},
        "calls": [
            (as_utf16(c.id), as_utf16(c.function.name), as_utf16(c.function.arguments))
            for c in message.tool_calls or []
        ],
        "finish": choice.finish_reason,
    }


def said(what: dict[str, Any]) -> dict[str, Any]:
    """What the generator meant, read as UTF-16 as both readers should."""
    return {
        "content": as_utf16(what["content"]),
        "reasoning": {what["field"]: as_utf16(what["reasoning"])} if what["reasoning"] else {},
        "calls": [(c["id"], c["name"], as_utf16(c["arguments"])) for c in what["calls"]],
        "finish": what["finish"],
    }


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed{seed}") for seed in SEEDS])
def test_rig_nb_and_the_sdk_read_the_same_stream_alike(seed: int, server: ScriptedServer) -> None:
    events, what = generated(seed)
    data = wire_bytes(seed, events, what["done"])
    pieces = chunked(seed, data)
    server.push(stream_response(pieces), stream_response(pieces))
    expected = said(what)
    assert sdk_read(server.base_url) == expected
    request = Request("m", (Turn("user", "hi"),), 64, stream=True)
    with Client(server.base_url) as client:
        reply = client.stream(request, client.reader())
    assert rig_read(reply) == expected
    assert reply.stream_faults == []
    # In process, the exact cuts (TCP may join what the server wrote apart).
    assert rig_read(read_stream(pieces, StreamAssembler())) == expected


def test_the_generator_covers_what_it_should() -> None:
    seen: set[str] = set()
    for seed in SEEDS:
        events, what = generated(seed)
        data = wire_bytes(seed, events, what["done"])
        pieces = chunked(seed, data)
        text = json.dumps(events)
        checks = {
            "cr": b"\r" in data.replace(b"\r\n", b""),
            "crlf": b"\r\n" in data,
            "lf": b"\n" in data.replace(b"\r\n", b""),
            "cut-between-cr-lf": any(
                a.endswith(b"\r") and b.startswith(b"\n")
                for a, b in zip(pieces, pieces[1:], strict=False)
            ),
            "cut-mid-utf8": any(p and 0x80 <= p[0] < 0xC0 for p in pieces),
            "split-pair": '\\ud83d"' in text,
            "multi-line-data": b'\ndata:   "' in data
            or b'\rdata:   "' in data
            or b'\ndata:  "' in data,
            "comment": b": ping" in data or b": keep-alive" in data,
            "usage-chunk": '"choices": [], "usage"' in text,
            "usage-in-finish": any(e.get("usage") and e["choices"] for e in events),
            "tool-calls": bool(what["calls"]),
            "no-done": not what["done"],
        }
        seen.update(k for k, v in checks.items() if v)
    assert seen == {
        "cr",
        "crlf",
        "lf",
        "cut-between-cr-lf",
        "cut-mid-utf8",
        "split-pair",
        "multi-line-data",
        "comment",
        "usage-chunk",
        "usage-in-finish",
        "tool-calls",
        "no-done",
    }
