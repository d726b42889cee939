"""Demo personas for the long conversation: a context window cut silently, one refused
clearly, and a template that breaks the prefix cache; and the servers' metadata routes.

Tokens are words, as everywhere in the demo (`rig_nb.demo.wording`). Each docstring says
how the demo run (`RunRequest(model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT,
tools=demo_tools())`) ends on it, and what the long-conversation run of the notebooks
(`long_tools()`, `LONG_PROMPT`: four chapters of 1,200 words each) shows.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..testing import RecordedRequest, Response
from ..tool import Tool
from .kit import Heard, Persona, Said, Stream, count_words

__all__ = [
    "DEMO_LLAMA_BUILD",
    "DEMO_OLLAMA_VERSION",
    "LLAMA_DEMO_CTX",
    "LONG_PROMPT",
    "OLLAMA_DEMO_CTX",
    "PAGE_WORDS",
    "CacheBreakingTemplate",
    "LlamaContextError",
    "OllamaTruncatesSilently",
    "context_personas",
    "long_tools",
    "metadata_route",
]

OLLAMA_DEMO_CTX = 4096
LLAMA_DEMO_CTX = 2048
DEMO_LLAMA_BUILD = "b0000-rignbdemo"
DEMO_OLLAMA_VERSION = "0.40.3-rignb-demo"
PAGE_WORDS = 1200
_CHAPTERS = ("alpha", "beta", "gamma", "delta")
LONG_PROMPT = (
    "read every chapter of the handbook, then tell me the launch code that chapter 1 gives."
)


def long_tools() -> tuple[Tool, ...]:
    """Four tools, one handbook chapter each, every result PAGE_WORDS words long; the
    demo's diligent personas call one per round, in order."""

    def chapter(number: int, name: str) -> Tool:
        head = f"Chapter {number} ({name}). The launch code is {name.upper()}-{number}{number}."

        def run(args: dict[str, Any]) -> str:
            return head + " lorem" * (PAGE_WORDS - count_words(head))

        schema = {"type": "object", "properties": {}}
        return Tool(
            f"read_chapter_{number}", f"Read chapter {number} of the handbook.", schema, run
        )

    return tuple(chapter(n, name) for n, name in enumerate(_CHAPTERS, start=1))


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _words(message: Mapping[str, Any]) -> int:
    return count_words(_text(message))


def _tools_words(request: Mapping[str, Any]) -> int:
    return count_words(json.dumps(request.get("tools") or []))


def _diligent(turn: Heard) -> Said:
    plan = turn.plan()
    return Said(None, plan) if plan else Said(turn.answer())


class OllamaTruncatesSilently(Persona):
    """Ollama behind its /v1 route: a prompt over num_ctx loses its oldest messages, silently.

    Ollama keeps the system message and the newest messages that fit within num_ctx
    (4096 tokens by default, which /v1 cannot change; `options.num_ctx` on the native
    route) and drops the oldest, with no error and prompt_tokens reporting only what was
    kept (measured on Ollama 0.40.x by LLMxRay; ollama#18107, #17778, #14259). A newest
    message that alone does not fit keeps only its end.

    Demo run: ends `answer` after two tool rounds, outcome ok (it fits). The long
    conversation: the fourth chapter pushes the question out; prompt tokens fall, the
    iteration is marked context_cut and the run ends `context_truncated`.
    """

    name = "ollama-truncates-silently"
    owned_by = "library"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        window = OLLAMA_DEMO_CTX
        options = request.get("options")
        asked = options.get("num_ctx") if isinstance(options, dict) else None
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            window = asked
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        room = window - _tools_words(request)
        system = [m for m in messages if m.get("role") == "system"]
        room -= sum(_words(m) for m in system)
        kept: list[dict[str, Any]] = []
        for m in reversed([m for m in messages if m.get("role") != "system"]):
            n = _words(m)
            if n > room:
                if not kept:  # the newest alone does not fit: its end is kept
                    words = _text(m).split()
                    kept.append({**m, "content": " ".join(words[len(words) - max(room, 0) :])})
                break
            kept.append(m)
            room -= n
        kept = [*system, *reversed(kept)]
        used = sum(_words(m) for m in kept) + _tools_words(request)
        trimmed = {**request, "messages": kept}
        if not any(m.get("role") == "user" for m in kept):
            trimmed["messages"] = [*kept, {"role": "user", "content": ""}]
        turn = Heard.parse(trimmed)
        turn.prompt_tokens = used
        if not turn.prompt.strip():
            said = Said("I have the text above, but I do not see a question about it.")
        else:
            said = _diligent(turn)
        return self.finish(turn, said)


class LlamaContextError(Persona):
    """llama-server past its per-slot window: HTTP 400 `exceed_context_size_error`.

    llama-server splits `-c` across its `-np` slots and refuses a prompt longer than
    one slot's window with `{"error": {"code": 400, "type": "exceed_context_size_error",
    "n_prompt_tokens": N, "n_ctx": M}}` (seen on this build, tests/real/FINDINGS.md).
    Here the window is 2048 tokens (`/props` says so); replies carry llama.cpp's
    `timings` with `cache_n`, the prompt shared with the previous request.

    Demo run: ends `answer` after two tool rounds, outcome ok. The long conversation:
    the second chapter pushes the prompt past 2048 and the run fails with BackendError
    kind `context`.
    """

    name = "llama-context-error"
    owned_by = "llamacpp"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        if turn.prompt_tokens > LLAMA_DEMO_CTX:
            return Response(
                {
                    "error": {
                        "code": 400,
                        "message": "the request exceeds the available context size, try "
                        "increasing it",
                        "type": "exceed_context_size_error",
                        "n_prompt_tokens": turn.prompt_tokens,
                        "n_ctx": LLAMA_DEMO_CTX,
                    }
                },
                400,
            )
        body = self.finish(turn, _diligent(turn))
        # Every request before the last turn's is a prefix of this one: cached but the newest.
        messages = request.get("messages") or []
        newest = _words(messages[-1]) if messages and isinstance(messages[-1], dict) else 0
        continued = any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)
        cached = max(0, turn.prompt_tokens - newest) if continued else 0
        completion = body["usage"]["completion_tokens"]
        body["timings"] = {
            "cache_n": cached,
            "prompt_n": turn.prompt_tokens - cached,
            "prompt_ms": 0.05 * (turn.prompt_tokens - cached),
            "predicted_n": completion,
            "predicted_ms": 20.0 * completion,
        }
        body["system_fingerprint"] = DEMO_LLAMA_BUILD
        return body


class CacheBreakingTemplate(Persona):
    """A template that re-renders earlier reasoning away: the prefix cache stops at the first
    assistant turn.

    Qwen3-style templates drop or re-render the reasoning of earlier assistant turns, so
    the prompt a server renders no longer extends what it cached after the first
    assistant turn, and every turn re-processes the history (QwenLM/Qwen3#1826,
    vllm-project/vllm#21732). Reasoning arrives in `reasoning`; `cached_tokens`
    (`prompt_tokens_details`) counts only what precedes the first assistant turn.

    Demo run: ends `answer` after two tool rounds, outcome ok; `Trace.prefix_reuse` is
    1.0 at the second iteration and falls at the third.
    """

    name = "cache-breaking-template"
    owned_by = "vllm"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        plan = turn.plan()
        thinking = turn.thinking(plan)
        said = (
            Said(None, plan, reasoning=thinking)
            if plan
            else Said(turn.answer(), [], None, thinking)
        )
        body = self.finish(turn, said)
        messages: Sequence[Any] = request.get("messages") or []
        first = next(
            (
                i
                for i, m in enumerate(messages)
                if isinstance(m, dict) and m.get("role") == "assistant"
            ),
            None,
        )
        cached = 0
        if first is not None:
            cached = sum(_words(m) for m in messages[:first] if isinstance(m, dict))
            cached += _tools_words(request)
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        return body


def _prompt_words(request: Mapping[str, Any]) -> list[str]:
    """The request as a server's prompt, word by word: the tools, the system prompt (the
    Messages wire's `system` too, blocks or text) and every message in order."""
    words = json.dumps(request.get("tools") or [], sort_keys=True).split()
    system = request.get("system")
    if isinstance(system, list):
        system = " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    words += str(system or "").split()
    for m in request.get("messages") or []:
        if isinstance(m, dict):
            words += [f"<{m.get('role')}>", *_text(m).split()]
            words += json.dumps(m.get("tool_calls") or [], sort_keys=True).split()
    return words


class PrefixKeyedCache(Persona):
    """A server whose prefix cache reuses earlier prompts word for word, as vLLM's automatic
    prefix caching and SGLang's radix cache do: `cached_tokens` is the most words this
    prompt shares from its start with an earlier prompt of the same conversation (keyed
    by its first user message). A system prompt that changes every request (Claude Code's
    attribution nonce, anthropics/claude-code#68900) leaves only what precedes the change
    cached. A prompt seen before is answered as the first time (the demo's replies are
    deterministic).

    Demo run: ends `answer` after two tool rounds, outcome ok; `Trace.prefix_reuse` is
    1.0 from the second iteration while the requests only grow.
    """

    name = "prefix-keyed-cache"
    owned_by = "vllm"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, dict[tuple[str, ...], int]] = {}

    def _cached(self, key: str, words: tuple[str, ...]) -> int:
        with self._lock:
            prompts = self._seen.setdefault(key, {})
            if words not in prompts:
                prompts[words] = max((_shared(words, p) for p in prompts), default=0)
                if len(prompts) > _PROMPTS_KEPT:  # the oldest prompt goes
                    prompts.pop(next(iter(prompts)))
            if len(self._seen) > _CONVERSATIONS_KEPT:
                self._seen.pop(next(iter(self._seen)))
            return prompts[words]

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = Heard.parse(request)
        body = self.finish(turn, _diligent(turn))
        words = tuple(_prompt_words(request))
        messages = request.get("messages") or []
        users = [_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        body["usage"]["prompt_tokens"] = len(words)
        body["usage"]["total_tokens"] = len(words) + body["usage"]["completion_tokens"]
        cached = self._cached(users[0] if users else "", words)
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        return body


def _shared(one: tuple[str, ...], two: tuple[str, ...]) -> int:
    """How many words `one` and `two` share from their start."""
    n = 0
    for a, b in zip(one, two, strict=False):
        if a != b:
            break
        n += 1
    return n


# What `prefix-keyed-cache` remembers: conversations, and prompts in each, oldest first.
_CONVERSATIONS_KEPT = 64
_PROMPTS_KEPT = 32


def context_personas() -> list[Persona]:
    """The long-conversation personas, in the order the demo lists them."""
    return [
        OllamaTruncatesSilently(),
        LlamaContextError(),
        CacheBreakingTemplate(),
        PrefixKeyedCache(),
    ]


def metadata_route(
    personas: Mapping[str, Persona], request: RecordedRequest
) -> Mapping[str, Any] | Response | None:
    """The servers' own metadata routes the doctor reads, for the personas that play those
    servers: llama.cpp `GET /props?model=NAME` (Ollama's are `ollama_route.OLLAMA_ROUTES`).
    None when `request` is for none of them."""
    parts = urlsplit(request.path)
    path = parts.path.rstrip("/")
    if path == "/props" and request.method == "GET":
        name = (parse_qs(parts.query).get("model") or [""])[0]
        persona = personas.get(name)
        if persona is None or persona.owned_by != "llamacpp":
            return Response({"error": {"code": 404, "message": "model not found"}}, 404)
        return {
            "build_info": DEMO_LLAMA_BUILD,
            "total_slots": 2,
            "default_generation_settings": {"n_ctx": LLAMA_DEMO_CTX},
        }
    return None
