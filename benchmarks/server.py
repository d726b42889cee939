"""Endless OpenAI-compatible benchmark servers on loopback, run in their own process.

    python benchmarks/server.py [--kind bench|drip|silent|demo] [--delay SECONDS] [--count N]

Prints one base URL per line once listening, then serves until stdin closes.

`bench` (the default) decides each reply from the request alone, so any
client's loop gets the same work:
- no assistant turn yet and a tool named `add` offered: call `add(2, 2)`;
- otherwise the final answer: `final_answer(answer="4")` as a tool call when
  such a tool is offered (smolagents answers only through it), else text "4"
  (a JSON object when the first message asks for JSON).
A prompt holding `REASONING_MARK` gets `REASONING` in `reasoning_content` beside every
reply, so a loop that sends reasoning back has some to send.
A request whose tools include other names (compare scenarios) gets a call to
the first offered tool with arguments built from its schema's required keys.
A prompt `stream-bench chars=N piece=P write=event|block interval_us=U`
(`stream_prompt`) asks for a text reply of N characters of prose
(`reply_text(N)`). A request with `"stream": true` gets any reply as
server-sent events (`rig_nb.testing.streamed`), P characters per delta:
`write=event` writes each event as its own HTTP chunk, U microseconds apart,
as a server flushing per token does; `write=block` sends the same bytes, built
once and cached, in 64 KiB chunks, so that a stream of a million events costs
this process little and the client's parsing is what gets measured.

`drip` answers 200 at once, then one byte every 50 ms, forever (a space for a
JSON request; `: keep-alive` comments, byte by byte, for a streamed one).
`silent` accepts connections and never reads or answers.
`demo` is the demo endpoint (`rig_nb.demo.DemoServer`), streams unpaced.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rig_nb.demo import DemoServer  # noqa: E402
from rig_nb.testing import (  # noqa: E402
    LoopbackServer,
    RecordedRequest,
    Response,
    as_message,
    as_response,
    chat_reply,
    sse_body,
    streamed,
    wants_stream,
)
from rig_nb.wire.messages import serve as messages_serve  # noqa: E402
from rig_nb.wire.responses.serve import chat_request, response_events  # noqa: E402

DRIP_INTERVAL = 0.05
BLOCK = 64 << 10
REASONING_MARK = "(reasoning replay bench)"
REASONING = (
    "The user asks for two plus two. I have an add tool, so I call add with a=2 and b=2, "
    "then answer with the sum alone, as a single number, and nothing else."
)
PROSE = "The model kept reasoning about the question at length, step by step. "
_SPEC = re.compile(r"stream-bench chars=(\d+) piece=(\d+) write=(event|block) interval_us=(\d+)")
_SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache"}


def stream_prompt(chars: int, piece: int, write: str = "event", interval_us: int = 0) -> str:
    """The prompt that asks the bench server for a prose reply of `chars` characters."""
    return f"stream-bench chars={chars} piece={piece} write={write} interval_us={interval_us}"


def reply_text(chars: int) -> str:
    """The reply text a `stream_prompt(chars, ...)` request gets: prose, no tags.

    It ends in a full stop, not a space, so the loop's stripped text is all of it.
    """
    text = (PROSE * (chars // len(PROSE) + 1))[:chars]
    return text[:-1] + "." if text.endswith(" ") else text


def sse_bytes(body: Mapping[str, Any], piece: int) -> bytes:
    """What `streamed(body, piece_chars=piece)` sends for a text reply, byte for byte, fast.

    Built from `streamed` itself: its events for the same reply with a marker
    as the whole content give the role event, the content event's template
    and the closing events (finish, usage, `[DONE]`); checked in `_check_sse`.
    """
    message = body["choices"][0]["message"]
    text = message["content"]
    marker = "\u0000rig-nb-piece\u0000"
    probe = {**body, "choices": [{**body["choices"][0], "message": {**message, "content": marker}}]}
    events = b"".join(streamed(probe, piece_chars=len(marker)).body).split(b"\n\n")
    role, template, tail = events[0], events[1], events[2:]
    pre, post = template.split(json.dumps(marker).encode())
    post += b"\n\n"
    encoded: dict[str, bytes] = {}
    out = [role + b"\n\n"]
    for i in range(0, len(text), piece):
        p = text[i : i + piece]
        e = encoded.get(p)
        if e is None:
            e = json.dumps(p).encode()
            if piece == 1:
                encoded[p] = e
        out.append(pre + e + post)
    out.append(b"\n\n".join(tail))
    return b"".join(out)


def _check_sse() -> None:
    body = chat_reply(reply_text(100), model="bench")
    for piece in (1, 7, 100):
        want = b"".join(streamed(body, piece_chars=piece).body)
        if sse_bytes(body, piece) != want:
            raise AssertionError(f"sse_bytes differs from rig_nb.testing.streamed (piece {piece})")


def _blocks(data: bytes) -> Iterator[bytes]:
    view = memoryview(data)
    for i in range(0, len(data), BLOCK):
        yield bytes(view[i : i + BLOCK])


_SAMPLE = {"integer": 2, "number": 2, "boolean": True, "string": "x", "array": [], "object": {}}


def _arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for key in schema.get("required") or list(props)[:2]:
        kind = (props.get(key) or {}).get("type", "string")
        out[key] = _SAMPLE.get(kind if isinstance(kind, str) else "string", "x")
    return out


class BenchServer(LoopbackServer):
    """Answers every request at once (or after `delay`); records nothing it keeps."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay
        self._ids = itertools.count()
        self._cache: dict[tuple[int, int], bytes] = {}

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        with self._lock:
            self.requests.clear()  # endless runs: keep memory flat
        body = json.loads(request.body or b"{}")
        # The Responses wire: the same work, read as chat and answered as Responses.
        responses = request.path.rstrip("/").endswith("/responses")
        if responses:
            body = chat_request(body)
        # The Messages wire likewise (`messages` is a wire's own word only here).
        anthropic = request.path.rstrip("/").endswith("/messages")
        if anthropic:
            body = messages_serve.chat_request(body)
        messages = body.get("messages") or []
        tools = {
            t["function"]["name"]: t["function"].get("parameters") or {}
            for t in body.get("tools") or []
            if isinstance(t, dict) and "function" in t
        }
        answered = any(m.get("role") == "assistant" for m in messages if isinstance(m, dict))
        call_id = f"call_{next(self._ids)}"
        spec = _SPEC.search(json.dumps(messages[-1:]))
        if spec and wants_stream(request):
            return self._stream(
                int(spec[1]),
                int(spec[2]),
                spec[3],
                int(spec[4]) / 1e6,
                responses=responses,
                anthropic=anthropic,
            )
        if spec:
            reply = chat_reply(reply_text(int(spec[1])), model="bench")
        elif not answered and "add" in tools:
            reply = chat_reply(tool_calls=[_call(call_id, "add", {"a": 2, "b": 2})])
        elif "final_answer" in tools:
            reply = chat_reply(tool_calls=[_call(call_id, "final_answer", {"answer": "4"})])
        elif not answered and tools:
            name, schema = next(iter(tools.items()))
            reply = chat_reply(tool_calls=[_call(call_id, name, _arguments(schema))])
        elif "json" in json.dumps(messages[:1]).lower():
            reply = chat_reply('{"country": "France", "capital": "Paris"}')
        else:
            reply = chat_reply("4")
        if REASONING_MARK in json.dumps(messages[:2]):
            reply["choices"][0]["message"]["reasoning_content"] = REASONING
        if responses:
            return as_response(reply, stream=wants_stream(request))
        if anthropic:
            return as_message(reply, stream=wants_stream(request))
        if wants_stream(request):
            return streamed(reply)
        return Response(reply, delay=self.delay) if self.delay else reply

    def _stream(
        self,
        chars: int,
        piece: int,
        write: str,
        interval: float,
        *,
        responses: bool = False,
        anthropic: bool = False,
    ) -> Response:
        body = chat_reply(reply_text(chars), model="bench")
        if anthropic:  # each event its own HTTP chunk
            events = messages_serve.message_events(body, piece_chars=piece)
            framed = [messages_serve.sse_event(e) for e in events]
            return Response(sse_body(framed, done=False, interval=interval), headers=_SSE_HEADERS)
        if responses:  # each event its own HTTP chunk
            events = response_events(body, piece_chars=piece)
            return Response(sse_body(events, done=False, interval=interval), headers=_SSE_HEADERS)
        if write == "event":
            return streamed(body, piece_chars=piece, interval=interval)
        with self._lock:
            data = self._cache.get((chars, piece))
        if data is None:
            data = sse_bytes(body, piece)
            with self._lock:
                self._cache[(chars, piece)] = data
        return Response(_blocks(data), headers=_SSE_HEADERS)


class DripServer(LoopbackServer):
    """200 at once, then one byte every DRIP_INTERVAL seconds until the client hangs up."""

    def handle(self, request: RecordedRequest) -> Response:
        with self._lock:
            self.requests.clear()
        if wants_stream(request):
            return Response(_drip(b": keep-alive\n\n"), headers=_SSE_HEADERS)
        return Response(_drip(b" "), headers={"content-type": "application/json"})


def _drip(unit: bytes) -> Iterator[bytes]:
    for i in itertools.count():
        time.sleep(DRIP_INTERVAL)
        yield unit[i % len(unit) : i % len(unit) + 1]


class SilentServer:
    """Accepts connections on 127.0.0.1 and never reads or answers; holds them until closed."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def start(self) -> SilentServer:
        self._thread.start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._held.append(conn)

    def close(self) -> None:
        self._sock.close()
        for conn in self._held:
            conn.close()


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=("bench", "drip", "silent", "demo"), default="bench")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--count", type=int, default=1)
    opts = parser.parse_args()
    servers: list[Any]
    if opts.kind == "drip":
        servers = [DripServer().start() for _ in range(opts.count)]
    elif opts.kind == "silent":
        servers = [SilentServer().start() for _ in range(opts.count)]
    elif opts.kind == "demo":
        servers = [
            DemoServer(stream_first_delay=0, stream_interval=0).start() for _ in range(opts.count)
        ]
    else:
        _check_sse()
        servers = [BenchServer(opts.delay).start() for _ in range(opts.count)]
    for server in servers:
        print(server.base_url, flush=True)
    sys.stdin.read()
    for server in servers:
        server.close()


if __name__ == "__main__":
    main()
