"""An endless OpenAI-compatible benchmark server on loopback, run in its own process.

    python benchmarks/server.py [--delay SECONDS] [--count N]

Prints one base URL per line once listening, then serves until stdin closes.
Each reply is decided from the request alone, so any client's loop gets the
same work:
- no assistant turn yet and a tool named `add` offered: call `add(2, 2)`;
- otherwise the final answer: `final_answer(answer="4")` as a tool call when
  such a tool is offered (smolagents answers only through it), else text "4"
  (a JSON object when the first message asks for JSON).
A request whose tools include other names (compare scenarios) gets a call to
the first offered tool with arguments built from its schema's required keys.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rig_nb.testing import LoopbackServer, RecordedRequest, Reply, chat_reply  # noqa: E402

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

    def handle(self, request: RecordedRequest) -> Reply | Mapping[str, Any]:
        with self._lock:
            self.requests.clear()  # endless runs: keep memory flat
        body = json.loads(request.body or b"{}")
        messages = body.get("messages") or []
        tools = {
            t["function"]["name"]: t["function"].get("parameters") or {}
            for t in body.get("tools") or []
            if isinstance(t, dict) and "function" in t
        }
        answered = any(m.get("role") == "assistant" for m in messages if isinstance(m, dict))
        call_id = f"call_{next(self._ids)}"
        if not answered and "add" in tools:
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
        return Reply(reply, delay=self.delay) if self.delay else reply


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--count", type=int, default=1)
    opts = parser.parse_args()
    servers = [BenchServer(opts.delay).start() for _ in range(opts.count)]
    for server in servers:
        print(server.base_url, flush=True)
    sys.stdin.read()
    for server in servers:
        server.close()


if __name__ == "__main__":
    main()
