"""Ollama's native wire from the server's side, for the local servers (demo, tests, benchmarks).

`chat_request` turns an `/api/chat` request into the chat body a chat-speaking persona
answers; `ollama_reply` and `ollama_lines` turn that chat.completion into the reply
object and the NDJSON lines Ollama sends for it (content and thinking in pieces, the
tool calls whole in one line, then the `done` line with the counts and durations);
`ndjson_body` frames lines. `rig_nb.wire.ollama` reads both back into the same Reply.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..text import REASONING_FIELDS, text_of

__all__ = ["chat_request", "error_body", "ndjson_body", "ollama_lines", "ollama_reply"]

_OLLAMA_ONLY = frozenset({"options", "think", "format", "keep_alive", "messages", "stream"})
# Synthetic durations for a reply that has none: per prompt token and per output token (ns).
_PROMPT_NS, _DECODE_NS, _LOAD_NS = 200_000, 20_000_000, 1_000_000


def _text(content: Any) -> str:
    return content if isinstance(content, str) else text_of(content)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {})


def _messages(raw: list[Any]) -> list[dict[str, Any]]:
    """Ollama's messages as chat messages: calls get ids (`call_N`), and each tool result
    the id of the earliest unanswered call of its `tool_name` (else the earliest one)."""
    messages: list[dict[str, Any]] = []
    waiting: list[tuple[str, str]] = []  # (id, name) of calls not answered yet
    count = 0
    for m in raw:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ValueError("each message must be an object with a 'role'")
        role = m["role"]
        out: dict[str, Any] = {"role": role, "content": _text(m.get("content"))}
        if role == "assistant":
            if isinstance(m.get("thinking"), str) and m["thinking"]:
                # Under both input names chat servers read (llama.cpp and DeepSeek, vLLM).
                out["reasoning_content"] = out["reasoning"] = m["thinking"]
            calls = m.get("tool_calls")
            if isinstance(calls, list) and calls:
                waiting = []
                out["tool_calls"] = []
                for call in calls:
                    fn = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(fn, dict):
                        raise ValueError("each tool call must be {'function': {...}}")
                    name = str(fn.get("name", ""))
                    call_id = f"call_{count}"
                    count += 1
                    waiting.append((call_id, name))
                    out["tool_calls"].append(
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": _arguments(fn.get("arguments")),
                            },
                        }
                    )
        elif role == "tool":
            answered = m.get("tool_name")
            match = next((w for w in waiting if w[1] == answered), waiting[0] if waiting else None)
            if match is not None:
                waiting.remove(match)
            out["tool_call_id"] = match[0] if match is not None else ""
        messages.append(out)
    return messages


def _switch(think: Any) -> dict[str, Any]:
    """`think` as the chat switches a persona reads (Ollama hands it to the template)."""
    if think is False:
        return {"chat_template_kwargs": {"enable_thinking": False}, "reasoning_effort": "none"}
    if think is True:
        return {"chat_template_kwargs": {"enable_thinking": True}}
    if isinstance(think, str):
        return {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": think}
    return {}


def _response_format(value: Any) -> dict[str, Any] | None:
    if value == "json":
        return {"type": "json_object"}
    if isinstance(value, dict):
        return {"type": "json_schema", "json_schema": {"name": "format", "schema": value}}
    return None


def chat_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat body for an `/api/chat` request: messages with ids made for the calls,
    `options.num_predict` as `max_tokens`, `options.stop` as `stop`, `think` as the chat
    switches, `format` as `response_format`, tools offered as `tool_choice: "auto"`;
    `options` kept as sent (what a persona reads num_ctx from).
    ValueError for what cannot be read. `stream` is true unless the request says false."""
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise ValueError("'messages' must be a list")
    chat: dict[str, Any] = {k: v for k, v in body.items() if k not in _OLLAMA_ONLY}
    chat["messages"] = _messages(raw)
    options = body.get("options")
    if options is not None and not isinstance(options, dict):
        raise ValueError("'options' must be an object")
    options = options or {}
    chat["options"] = options
    if "num_predict" in options and options["num_predict"] not in (None, -1, -2):
        chat["max_tokens"] = options["num_predict"]
    if isinstance(options.get("temperature"), int | float) and options["temperature"] != 0:
        chat["temperature"] = options["temperature"]
    if "stop" in options:
        chat["stop"] = options["stop"]
    if isinstance(chat.get("tools"), list) and chat["tools"]:
        chat["tool_choice"] = "auto"  # Ollama has no tool_choice: the model always may call
    chat.update(_switch(body.get("think")))
    formatted = _response_format(body.get("format"))
    if formatted is not None:
        chat["response_format"] = formatted
    stream = body.get("stream", True)
    if not isinstance(stream, bool):
        raise ValueError("'stream' must be a boolean")
    chat["stream"] = stream
    if stream:
        chat["stream_options"] = {"include_usage": True}
    return chat


def _calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for index, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {} if isinstance(call, dict) else {}
        args = fn.get("arguments")
        try:
            value = json.loads(args) if isinstance(args, str) and args.strip() else args
        except ValueError:
            value = args  # what the model wrote (Ollama's own types take only an object)
        if value in ("", None):
            value = {}
        out.append({"function": {"index": index, "name": fn.get("name"), "arguments": value}})
    return out


def _counts(chat: Mapping[str, Any], choice: Mapping[str, Any], calls: bool) -> dict[str, Any]:
    """The `done` line's fields for a chat.completion: reason, counts and durations."""
    finish = choice.get("finish_reason")
    reason = "stop" if finish in (None, "stop", "tool_calls") or calls else finish
    out: dict[str, Any] = {"done": True, "done_reason": reason}
    usage = chat.get("usage")
    if isinstance(usage, dict):
        prompt = usage.get("prompt_tokens")
        decode = usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(decode, int):
            prompt_ns, decode_ns = prompt * _PROMPT_NS, decode * _DECODE_NS
            out |= {
                "total_duration": _LOAD_NS + prompt_ns + decode_ns,
                "load_duration": _LOAD_NS,
                "prompt_eval_count": prompt,
                "prompt_eval_duration": prompt_ns,
                "eval_count": decode,
                "eval_duration": decode_ns,
            }
    return out


def _head(chat: Mapping[str, Any]) -> dict[str, Any]:
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(chat.get("created") or 0))
    return {"model": chat.get("model", ""), "created_at": created}


def _reasoning(message: Mapping[str, Any]) -> str:
    for name in REASONING_FIELDS:
        text = text_of(message.get(name))
        if text:
            return text
    return ""


def ollama_reply(chat: Mapping[str, Any]) -> dict[str, Any]:
    """The `/api/chat` reply (not streamed) for a chat.completion body (choice 0)."""
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    out: dict[str, Any] = {"role": "assistant", "content": text_of(message.get("content"))}
    thinking = _reasoning(message)
    if thinking:
        out["thinking"] = thinking
    calls = _calls(message)
    if calls:
        out["tool_calls"] = calls
    return {**_head(chat), "message": out, **_counts(chat, choice, bool(calls))}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def ollama_lines(chat: Mapping[str, Any], *, piece_chars: int = 16) -> list[dict[str, Any]]:
    """The NDJSON lines Ollama streams for a chat.completion body: thinking pieces, content
    pieces, the tool calls whole in one line, then the `done` line (empty message)."""
    head = _head(chat)
    choice = (chat.get("choices") or [{}])[0]
    message = choice.get("message") or {}

    def line(**fields: Any) -> dict[str, Any]:
        return {**head, "message": {"role": "assistant", "content": "", **fields}, "done": False}

    lines = [line(thinking=p) for p in _pieces(_reasoning(message), piece_chars)]
    lines += [line(content=p) for p in _pieces(text_of(message.get("content")), piece_chars)]
    calls = _calls(message)
    if calls:
        lines.append(line(tool_calls=calls))
    end = {**head, "message": {"role": "assistant", "content": ""}}
    lines.append({**end, **_counts(chat, choice, bool(calls))})
    return lines


def error_body(body: Any) -> dict[str, Any]:
    """An error body as Ollama shapes it: `{"error": "text"}`."""
    err = body.get("error") if isinstance(body, dict) else None
    detail = err.get("message") if isinstance(err, dict) else err
    return {"error": detail if isinstance(detail, str) else "error"}


def ndjson_body(
    lines: Iterable[Mapping[str, Any] | bytes],
    *,
    interval: float = 0.0,
    first_delay: float = 0.0,
) -> Iterator[bytes]:
    """Lines as NDJSON (a mapping as one JSON line, bytes as given), `first_delay` seconds
    before the first and `interval` before each later one."""
    first = True
    for item in lines:
        wait = first_delay if first else interval
        if wait:
            time.sleep(wait)
        first = False
        yield item if isinstance(item, bytes) else json.dumps(item).encode() + b"\n"
