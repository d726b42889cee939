"""The one place foreign exceptions (openai, httpx, ssl) become BackendError, and retry rules.

`backend_error` names the kind of each failure (`rig_nb.errors.KINDS`) and
keeps what a user needs to act: the HTTP status and the endpoint's own
message, redacted. The cause is never chained: it may quote the URL.
"""

from __future__ import annotations

import datetime
import email.utils
import html
import json
import math
import random
import re
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

import httpcore
import httpx
import openai

from .errors import BackendError
from .redact import Redactor
from .usage import MAX_TOKENS_SAID, stated_count
from .wire import HTTPStatusFailure

__all__ = [
    "MAX_TOKENS_SAID",
    "backend_error",
    "context_numbers",
    "page_text",
    "retry_delay",
    "retryable",
    "stated_count",
]

_RETRY_STATUS = frozenset({408, 409, 429})
_MAX_BACKOFF_S = 8.0
_MAX_MESSAGE = 300
# Endpoint text read for an error message: enough for the message, not a 1 MiB page.
_MAX_ERROR_SCAN = 4000
# A tag opens with a letter, "/" or "!": "5 < 6 and 7 > 3" in a plain message is not one.
_TAG = re.compile(r"<[A-Za-z/!?][^<>]*>")
# Elements whose content is not text a person reads (the scan is capped at _MAX_ERROR_SCAN).
_HIDDEN = re.compile(
    r"<(script|style|noscript|template)\b[^>]*>.*?(</\1\s*>|$)|<!--.*?(-->|$)",
    re.IGNORECASE | re.DOTALL,
)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        yield node
        node = node.__cause__ or node.__context__


def _status_response(exc: BaseException) -> Any:
    """The HTTP answer of a non-2xx failure, whichever sender got it (the SDK or a wire)."""
    if isinstance(exc, (openai.APIStatusError, HTTPStatusFailure)):
        return exc.response
    return None


def _json_body(response: Any) -> Any:
    """The error body as JSON, None when it is not JSON (or too big to be an error)."""
    try:
        content = response.content
        return json.loads(content) if len(content) <= 1 << 20 else None
    except Exception:
        return None


def _endpoint_message(response: Any, body: Any, redact: Redactor) -> str:
    """The endpoint's own words in an error body (`body`: its JSON, None when not JSON),
    whichever wire's shape it has (OpenAI's and Anthropic's `{"error": {"message"}}`,
    Ollama's `{"error": "..."}`, a `detail`, or a page), redacted before it is cut (a cut
    key is no longer found whole), and redacted again after an HTML page is reduced to its
    text."""
    try:
        text = response.text
    except Exception:
        return ""
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if isinstance(msg, str):
            return redact(msg)[:_MAX_ERROR_SCAN]
        detail = err.get("detail") if isinstance(err, dict) else None
        if isinstance(detail, str):
            return redact(detail)[:_MAX_ERROR_SCAN]
    return redact(page_text(redact(text)[:_MAX_ERROR_SCAN]))


# A prompt that does not fit, as each server says it; a 4xx alone, and "context" alone (a 400
# about chat_template_kwargs), say nothing of the kind.
_CONTEXT_TYPES = frozenset({"exceed_context_size_error", "context_length_exceeded"})
_CONTEXT_SAID = re.compile(
    r"maximum context length|exceeds? the (?:available )?context size|prompt is too long"
    r"|longer than the model's context length|context ?window ?exceeded"
    r"|greater than the context length|context length of only",
    re.IGNORECASE,
)
# A number as a message states a count: ASCII digits, not part of a decimal, an exponent or a
# grouped number ("1e30" is not 1, "8,192" is not 8, "2048." ending a sentence is 2048).
_N = r"([0-9]+)(?![0-9]|[.,][0-9]|[eE][+-]?[0-9])"
# (window, prompt tokens) out of the message's own words, first match wins for each.
_WINDOW_SAID = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"maximum context length is {_N}",
        rf"maximum context length of {_N}",
        rf"context length \({_N} tokens\)",
        rf"tokens > {_N} maximum",
        rf"context length of only {_N}",
    )
)
_PROMPT_SAID = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"\({_N} in the messages",
        rf"request has {_N} input tokens",
        rf"prompt contains (?:at least )?{_N} input tokens",
        rf"{_N} tokens from the input messages",
        rf"messages resulted in {_N} tokens",
        rf"you requested {_N} tokens",
        rf"prompt is too long: {_N} tokens",
        rf"input \({_N} tokens\)",
    )
)
# What says the output asked for is what does not fit (`max_tokens` too large).
_OUTPUT_SAID = re.compile(
    r"'?max_(?:completion_|new_)?tokens'? (?:is too large|=\s*[0-9]+ cannot be greater)"
    r"|request fewer output tokens",
    re.IGNORECASE,
)


def _said(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found and len(found.group(1)) <= 10:
            return stated_count(int(found.group(1)))
    return None


def context_numbers(
    status: int | None, body: Any, message: str
) -> tuple[int | None, int | None] | None:
    """(context window, prompt tokens) when a 4xx error says the prompt does not fit (each
    None when the server gave no number), else None.

    llama.cpp: type `exceed_context_size_error` with `n_ctx` and `n_prompt_tokens`; vLLM
    and OpenAI: "maximum context length is N tokens" (vLLM 0.32: "your prompt contains at
    least N input tokens", counted up to the window plus one); Ollama: "exceeds the model's
    maximum context length"; Anthropic: "prompt is too long: N tokens > M maximum"; SGLang: "is
    longer than the model's context length (M tokens)"; LM Studio: "context length of only N".
    Numbers are read only as whole decimal numbers. A prompt that fits, by the server's own
    numbers, or words that say `max_tokens` is too large, is not a context error: what did
    not fit is the output asked for (vLLM's "'max_tokens' is too large", "max_tokens=N
    cannot be greater than max_model_len=M"; SGLang's and vLLM's "You requested a total of
    T tokens: P tokens from the input messages and C tokens for the completion").
    """
    if status is None or not 400 <= status < 500:
        return None
    err = body.get("error", body) if isinstance(body, dict) else None
    kind = err.get("type") if isinstance(err, dict) else None
    code = err.get("code") if isinstance(err, dict) else None
    typed = kind in _CONTEXT_TYPES or code in _CONTEXT_TYPES
    text = message[:_MAX_ERROR_SCAN]
    if not typed and not _CONTEXT_SAID.search(text):
        return None
    window = stated_count(err.get("n_ctx")) if isinstance(err, dict) else None
    prompt = stated_count(err.get("n_prompt_tokens")) if isinstance(err, dict) else None
    window = window if window is not None else _said(_WINDOW_SAID, text)
    prompt = prompt if prompt is not None else _said(_PROMPT_SAID, text)
    if window is not None and prompt is not None and prompt < window:
        return None
    if _OUTPUT_SAID.search(text) and (window is None or prompt is None):
        return None
    return window, prompt


def page_text(text: str) -> str:
    """The words of an error body: an HTML page reduced to its text (no script, style or
    head but the title; entities decoded), whitespace collapsed."""
    if "<" in text:
        text = _HIDDEN.sub(" ", text)
        text = html.unescape(_TAG.sub(" ", text))
    return " ".join(text.split())


def backend_error(exc: BaseException, redact: Redactor, deadline: float | None) -> BackendError:
    """The one place foreign exceptions become BackendError; the cause is never chained."""
    from . import _transport

    if isinstance(exc, BackendError):
        message = redact(exc.message)
        numbers = None
        if exc.kind == "http":  # an error object with a status, inside a 200 (a stream)
            numbers = context_numbers(exc.status_code, None, message)
        window, prompt = numbers if numbers is not None else (None, None)
        return BackendError(
            message[:400],
            status_code=exc.status_code,
            kind="context" if numbers is not None else exc.kind,
            context_window=exc.context_window if numbers is None else window,
            prompt_tokens=exc.prompt_tokens if numbers is None else prompt,
        )
    response = _status_response(exc)
    if response is not None:
        body = _json_body(response)
        said = _endpoint_message(response, body, redact)
        msg = said[:_MAX_MESSAGE]
        status = response.status_code
        text = f"ai backend: HTTP {status}" + (f": {msg}" if msg else "")
        numbers = context_numbers(status, body, said)
        if numbers is not None:
            window, prompt = numbers
            return BackendError(
                text,
                status_code=status,
                kind="context",
                context_window=window,
                prompt_tokens=prompt,
            )
        return BackendError(text, status_code=status, kind="http")
    chain = list(_causes(exc))
    if deadline is not None and (
        any(isinstance(e, _transport.DeadlineExceeded) for e in chain)
        or _transport.deadline_passed()
    ):
        return BackendError(
            f"ai backend: request exceeded its deadline of {deadline:g} s", kind="deadline"
        )

    def caused_by(*kinds: type[BaseException]) -> bool:
        return any(isinstance(e, kinds) for e in chain)

    if caused_by(ssl.SSLError):
        text = " ".join(str(e) for e in chain).lower()
        if "certificate" in text:
            why = "the server's certificate is not trusted (self-signed, or for another name)"
        else:
            why = "the server does not speak TLS: an https:// URL for a plain http server?"
        return BackendError(f"ai backend: TLS handshake failed: {why}", kind="tls")
    if caused_by(httpx.ConnectTimeout, httpcore.ConnectTimeout):
        # Unreachable, like a refused connection: nothing answered the connection attempt.
        return BackendError(
            "ai backend: connection failed (no answer to the connection attempt: the host "
            "is down or drops packets)",
            kind="connect",
        )
    if caused_by(openai.APITimeoutError, httpx.TimeoutException, httpcore.TimeoutException):
        return BackendError("ai backend: request timed out waiting for data", kind="timeout")
    if caused_by(httpx.ConnectError, httpcore.ConnectError):
        text = " ".join(str(e) for e in chain).lower()
        if "name or service" in text or "nodename" in text or "resolution" in text:
            why = "the host name does not resolve"
        elif "refused" in text:
            why = "connection refused: nothing listens at that address"
        else:
            why = "the address cannot be reached"
        return BackendError(f"ai backend: connection failed ({why})", kind="connect")
    if caused_by(httpx.DecodingError):
        return BackendError(
            "ai backend: the reply's content-encoding cannot be decoded", kind="protocol"
        )
    if caused_by(
        openai.APIConnectionError,
        httpx.ProtocolError,
        httpx.ReadError,
        httpx.WriteError,
        httpcore.ProtocolError,
        httpcore.ReadError,
        httpcore.WriteError,
    ):
        return BackendError(
            "ai backend: connection broke mid-exchange (the server closed it or did not speak "
            "HTTP; an http:// URL for an https server?)",
            kind="protocol",
        )
    return BackendError(f"ai backend: {type(exc).__name__}", kind="protocol")


def _asked_delay(headers: Mapping[str, str]) -> float | None:
    """The wait the endpoint asks for: Retry-After-Ms, else Retry-After in seconds or as an
    HTTP date (RFC 9110); None when neither is there or readable."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        text = str(value).strip()
        try:
            seconds = float(text) / scale
        except ValueError:
            if name != "retry-after":
                continue
            try:
                when = email.utils.parsedate_to_datetime(text)
            except (TypeError, ValueError, IndexError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=datetime.timezone.utc)
            seconds = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        if not math.isnan(seconds):
            return max(0.0, seconds)
    return None


def retry_delay(attempt: int, headers: Mapping[str, str] | None) -> tuple[float, bool]:
    """Seconds before retry `attempt` (0-based), and whether the endpoint asked for them
    (Retry-After, Retry-After-Ms) rather than rig_nb's own backoff."""
    asked = _asked_delay(headers) if headers else None
    if asked is not None:
        return asked, True
    delay = min(0.5 * 2.0**attempt, _MAX_BACKOFF_S)
    return float(delay * (1 - 0.25 * random.random())), False


def retryable(exc: BaseException) -> tuple[bool, Mapping[str, str] | None]:
    chain = list(_causes(exc))
    if any(isinstance(e, (httpx.ConnectTimeout, httpcore.ConnectTimeout)) for e in chain):
        # Each try waits the whole timeout for a host that does not answer: not retried.
        return False, None
    if any(isinstance(e, httpx.DecodingError) for e in chain):
        # The same body comes back the same way (the SDK wraps it as a connection error).
        return False, None
    response = _status_response(exc)
    if response is not None:
        headers = response.headers
        hint = headers.get("x-should-retry")
        if hint in ("true", "false"):
            return hint == "true", headers
        status = response.status_code
        return status in _RETRY_STATUS or status >= 500, headers
    transient = (
        openai.APITimeoutError,
        openai.APIConnectionError,
        httpx.TimeoutException,
        httpx.NetworkError,
        httpx.RemoteProtocolError,
    )
    return isinstance(exc, transient), None
