"""Client: explicit credentials only, a capped response body, opaque backend errors, the probe."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import openai

from .content import reasoning_shape, strip_reasoning
from .errors import (
    BackendError,
    NoToolCallingError,
    OutputLimitError,
    ResponseTooLargeError,
    RigError,
)
from .trace import Iteration, Trace

if TYPE_CHECKING:
    import ssl

    import httpx

    from .loop import RunRequest, RunResult

__all__ = ["Client"]

PROBE_MAX_TOKENS = 256
_NO_KEY = "rig-nb-no-key"  # the SDK insists on a key; the transport never sends this one
_COMPLETION_TOKENS_MODEL = re.compile(r"^(o[1-9][0-9]*|gpt-5)([-.:_@].*)?$")
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Reply to a ping. Call this tool when asked to ping.",
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "any short text"}},
            "required": ["message"],
        },
    },
}
_PROBE_PROMPT = "Call the ping tool now with message 'hello'. Do not answer in text."

_ssl_lock = threading.Lock()
_ssl_context: ssl.SSLContext | None = None


def _shared_ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs 50-90 ms and holds the GIL: once per process.
    global _ssl_context
    with _ssl_lock:
        if _ssl_context is None:
            import httpx

            _ssl_context = httpx.create_ssl_context()
        return _ssl_context


def _normalize_base_url(base_url: str) -> str:
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError("base_url must be a non-empty http(s) URL")
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("base_url must be an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("base_url must not carry user:password; pass api_key instead")
    if parts.query or parts.fragment or base_url.strip().endswith(("?", "#")):
        raise ValueError("base_url must not carry a query or fragment")
    path = parts.path
    if path in ("", "/"):
        path = "/v1"
    return f"{parts.scheme}://{parts.netloc}{path.rstrip('/') or '/'}"


def uses_max_completion_tokens(model: str) -> bool:
    """o-series and gpt-5 models reject max_tokens and take max_completion_tokens."""
    return bool(_COMPLETION_TOKENS_MODEL.match(model.rsplit("/", 1)[-1].lower()))


@dataclass
class Reply:
    """The parts of a chat completion the loop acts on."""

    content: str = ""
    reasoning: str = ""
    finish_reason: str = ""
    tool_calls: list[Any] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "".join(
            p.get("text", "")
            for p in value
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def parse_reply(body: Any) -> Reply:
    """Choice 0 of a chat completion body; minimal replies (no id, model, usage) are fine."""
    if not isinstance(body, dict):
        raise BackendError("ai backend: reply is not a JSON object")
    if "error" in body and not body.get("choices"):
        err = body["error"]
        detail = err.get("message") if isinstance(err, dict) else err
        raise BackendError(
            f"ai backend: error in reply: {detail if isinstance(detail, str) else ''}"
        )
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError("ai backend: reply has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        message = {}
    reasoning = _text(message.get("reasoning_content")) or _text(message.get("reasoning"))
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        calls = [] if calls is None else [calls]
    fc = message.get("function_call")
    if not calls and isinstance(fc, dict):  # legacy single call
        calls = [{"id": "", "type": "function", "function": fc}]
    usage: dict[str, int] = {}
    raw_usage = body.get("usage")
    if isinstance(raw_usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            value = raw_usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                usage[key] = value
    finish = choice.get("finish_reason")
    return Reply(
        content=_text(message.get("content")),
        reasoning=reasoning,
        finish_reason=finish if isinstance(finish, str) else "",
        tool_calls=calls,
        usage=usage,
    )


def call_name(call: Any) -> str:
    """The function name of a tool call, or "" when the loop cannot execute it."""
    if not isinstance(call, dict) or call.get("type", "function") != "function":
        return ""
    fn = call.get("function")
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) else ""


class _Redactor:
    """Removes the key and the base URL (whole, origin, host, path) from endpoint text."""

    def __init__(self, api_key: str, base_url: str, given: str) -> None:
        secrets = {api_key, base_url, given.strip()}
        for url in (base_url, given.strip()):
            parts = urlsplit(url)
            secrets |= {f"{parts.scheme}://{parts.netloc}", parts.netloc, parts.hostname or ""}
            if len(parts.path.strip("/")) > 0:
                secrets.add(parts.path.rstrip("/"))
        self._secrets = sorted((s for s in secrets if len(s) > 1), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "[redacted]")
        return text


def _endpoint_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if isinstance(msg, str):
            return msg
    try:
        text = exc.response.text
    except Exception:
        return ""
    text = re.sub(r"<[^>]*>", " ", text)
    return " ".join(text.split())


def _backend_error(exc: Exception, redact: _Redactor) -> BackendError:
    """The one place foreign exceptions become BackendError; the cause is never chained."""
    if isinstance(exc, openai.APIStatusError):
        msg = redact(_endpoint_message(exc))[:300]
        status = exc.status_code
        text = f"ai backend: HTTP {status}" + (f": {msg}" if msg else "")
        return BackendError(text, status_code=status)
    if isinstance(exc, openai.APITimeoutError):
        return BackendError("ai backend: request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        kind = type(cause).__name__ if cause is not None else "connection error"
        return BackendError(f"ai backend: connection failed ({kind})")
    return BackendError(f"ai backend: {type(exc).__name__}")


class Client:
    """An OpenAI-compatible endpoint, with nothing ambient reaching the wire."""

    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        *,
        http_client: httpx.Client | None = None,
        max_response_bytes: int = 1 << 20,
        user_agent: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        # httpx is imported here, not at import time: openai itself runs on httpx2.
        import httpx

        from . import __version__
        from ._transport import GuardTransport

        if not isinstance(api_key, str):
            raise ValueError("api_key must be a string")
        if max_response_bytes <= 0:
            raise ValueError("max_response_bytes must be > 0")
        self._base_url = _normalize_base_url(base_url)
        self._api_key = api_key
        self._redact = _Redactor(api_key, self._base_url, base_url)
        parts = urlsplit(self._base_url)
        self.endpoint = parts.netloc
        guard = GuardTransport(
            http_client
            if http_client is not None
            else httpx.HTTPTransport(verify=_shared_ssl_context()),
            api_key=api_key,
            user_agent=user_agent or f"rig_nb/{__version__}",
            max_response_bytes=max_response_bytes,
        )
        # trust_env=False: no proxies, no netrc, no SSL_CERT_* from the environment.
        self._http = httpx.Client(
            transport=guard, trust_env=False, timeout=timeout, follow_redirects=False
        )
        self._sdk = openai.OpenAI(
            api_key=api_key or _NO_KEY,
            organization="",
            project="",
            webhook_secret="",
            base_url=self._base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_headers={"Authorization": "Bearer " + (api_key or _NO_KEY)},
            http_client=cast(Any, self._http),  # the SDK accepts a legacy httpx.Client
        )

    def __repr__(self) -> str:
        return f"Client(endpoint={self.endpoint!r})"

    def close(self) -> None:
        self._sdk.close()
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chat(self, params: dict[str, Any], *, retries: bool = True) -> Reply:
        """One chat.completions request; every failure is a RigError."""
        sdk = self._sdk if retries else self._sdk.with_options(max_retries=0)
        error: BackendError | None = None
        try:
            raw = sdk.chat.completions.with_raw_response.create(**params)
            content = raw.http_response.content
        except ResponseTooLargeError:
            raise
        except Exception as exc:
            error = _backend_error(exc, self._redact)
        if error is not None:
            raise error  # raised outside the except block: no chained cause
        try:
            body = json.loads(content)
        except (ValueError, RecursionError):
            body = None
        if body is None:
            raise BackendError("ai backend: reply is not valid JSON")
        try:
            return parse_reply(body)
        except BackendError as exc:
            raise BackendError(self._redact(exc.message)[:400]) from None

    def chat_params(
        self,
        model: str,
        messages: list[dict[str, Any]],
        max_tokens: int,
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = "auto",
        temperature: float = 0.0,
    ) -> dict[str, Any]:
        """The request body the loop and the probe send."""
        params: dict[str, Any] = {"model": model, "messages": messages}
        key = "max_completion_tokens" if uses_max_completion_tokens(model) else "max_tokens"
        params[key] = max_tokens
        if temperature != 0:
            params["temperature"] = temperature
        if tools:
            params["tools"] = tools
            if tool_choice is not None:
                params["tool_choice"] = tool_choice
        return params

    def round(self, params: dict[str, Any], iteration: Iteration, *, retries: bool = True) -> Reply:
        """One request, recorded into `iteration` (latency, raw and stripped text, usage)."""
        start = time.perf_counter()
        try:
            reply = self.chat(params, retries=retries)
        finally:
            iteration.latency_s = time.perf_counter() - start
        iteration.raw_content = reply.content
        iteration.reasoning_content = reply.reasoning
        iteration.reasoning_shape = reasoning_shape(reply.content)
        iteration.text = strip_reasoning(reply.content)
        iteration.finish_reason = reply.finish_reason
        iteration.usage = dict(reply.usage)
        return reply

    def probe_tool_calling(
        self, model: str, *, tool_choice: str | None = "auto", trace: Trace | None = None
    ) -> None:
        """One trivial single-tool request; None only if the reply holds a usable tool call.

        Sends what the loop sends (tool_choice included). Exactly one request, no
        retries. finish_reason "length" is OutputLimitError; an HTTP error is
        BackendError. No reply text is put in a raised error.
        """
        messages = [{"role": "user", "content": _PROBE_PROMPT}]
        params = self.chat_params(
            model, messages, PROBE_MAX_TOKENS, tools=[_PROBE_TOOL], tool_choice=tool_choice
        )
        if trace is None:
            trace = Trace()
        trace.model, trace.endpoint = model, self.endpoint
        trace.settings = {
            "kind": "probe",
            "max_tokens": PROBE_MAX_TOKENS,
            "tool_choice": tool_choice,
            "tools": ["ping"],
        }
        it = Iteration(index=0, messages=list(messages))
        trace.iterations.append(it)
        start = time.perf_counter()
        try:
            reply = self.round(params, it, retries=False)
            if reply.finish_reason == "length":
                raise OutputLimitError("probe reply hit the output token limit before a tool call")
            names = [call_name(c) for c in reply.tool_calls]
            if not names:
                raise NoToolCallingError("backend did not return a tool call: the reply had none")
            if not all(names):
                raise NoToolCallingError(
                    "backend did not return a tool call: the reply's tool calls have no "
                    "function name the loop can execute"
                )
            trace.outcome = "ok"
        except BaseException as exc:
            it.error = f"{type(exc).__name__}: {exc}"
            trace.outcome = type(exc).__name__
            if isinstance(exc, RigError):
                exc.trace = trace
            raise
        finally:
            trace.elapsed_s = time.perf_counter() - start
            trace.notify()

    def run(self, request: RunRequest, *, trace: Trace | None = None) -> RunResult:
        """Run the tool loop; see rig_nb.loop."""
        from .loop import run

        return run(self, request, trace=trace)
