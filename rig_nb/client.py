"""Client: a hardened transport to one OpenAI-compatible endpoint.

It sends a request body and returns a parsed `Reply`, or raises a RigError;
recording and deciding belong to the loop (`rig_nb.loop`). Nothing ambient
reaches the wire: explicit credentials only, no OPENAI_* variables, no netrc.
Every request is bounded: a capped (decompressed) body, a per-read `timeout`,
and a `deadline` on the whole request, retries and streamed bodies included.
"""

from __future__ import annotations

import copy
import logging
import math
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import openai

from ._backend_errors import backend_error, retry_delay, retryable
from ._version import __version__
from .backend import Models
from .errors import BackendError, ResponseTooLargeError, RigError
from .redact import Redactor
from .wire import (
    Reply,
    StreamAssembler,
    parse_models,
    parse_reply_body,
    read_stream,
    sdk_arguments,
)
from .wire.responses import (
    RESPONSES_FIELDS,
    parse_response_body,
    read_response_stream,
    responses_body,
)
from .wire.thinking import SERVER_KINDS, applied_template

if TYPE_CHECKING:
    import httpx

    from .loop import RunRequest, RunResult
    from .trace import Trace

__all__ = ["Client", "Models", "check_timing"]

T = TypeVar("T")

_NO_KEY = "rig-nb-no-key"  # the SDK insists on a key; the transport never sends this one
APIS = ("chat", "responses")
_NO_RESPONSES_API = (
    " (this endpoint may have no Responses API: /responses answered 404; "
    'api="chat" uses /chat/completions)'
)
_HEADERS_KEPT = ("server", "x-powered-by", "via", "x-litellm-version", "x-litellm-model-id")

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


class _LogRedaction(logging.Filter):
    """Removes every live Client's secrets from what httpx logs (it logs each URL at INFO)."""

    def __init__(self) -> None:
        super().__init__()
        self.redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        redactors = list(self.redactors)
        if redactors:
            text = record.getMessage()
            for redact in redactors:
                text = redact(text)
            record.msg, record.args = text, None
        return True


_log_redaction = _LogRedaction()
logging.getLogger("httpx").addFilter(_log_redaction)


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
    try:
        parts.port  # noqa: B018  (raises on a port out of range)
    except ValueError:
        raise ValueError("base_url has a port out of range (1-65535)") from None
    path = parts.path
    if path in ("", "/"):
        path = "/v1"
    return f"{parts.scheme}://{parts.netloc}{path.rstrip('/') or '/'}"


def _positive(name: str, value: float | None, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a number of seconds > 0")
    return float(value)


def check_timing(timeout: float, deadline: float | None) -> tuple[float, float | None]:
    """The Client's timeout and deadline, checked: ValueError unless > 0 (deadline may be None)."""
    checked = _positive("timeout", timeout)
    assert checked is not None
    return checked, _positive("deadline", deadline, optional=True)


def _kept_headers(headers: Any) -> dict[str, str]:
    return {k: str(headers[k])[:200] for k in _HEADERS_KEPT if k in headers}


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
        deadline: float | None = 600.0,
        max_retries: int = 2,
        server: str = "auto",
        api: str = "chat",
    ) -> None:
        # httpx is imported here, not at import time: openai itself runs on httpx2.
        import httpx

        from ._transport import GuardTransport, pool_transport

        if not isinstance(api_key, str):
            raise ValueError("api_key must be a string")
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int):
            raise ValueError("max_response_bytes must be an int > 0")
        if max_response_bytes <= 0:
            raise ValueError("max_response_bytes must be > 0")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError("max_retries must be an int >= 0")
        if not isinstance(server, str) or (server != "auto" and server not in SERVER_KINDS):
            raise ValueError(f"server must be 'auto' or one of {', '.join(SERVER_KINDS)}")
        self._server_kind = None if server == "auto" else server
        self._kind_lock = threading.Lock()
        if api not in APIS:
            raise ValueError('api must be "chat" (/chat/completions) or "responses" (/responses)')
        # The wire every request goes over; the loop and the trace are the same on both.
        self.api = api
        self.timeout, self.deadline = check_timing(timeout, deadline)
        self.max_retries = max_retries
        self._base_url = _normalize_base_url(base_url)
        self._api_key = api_key
        self.redact = Redactor(api_key, [self._base_url, base_url])
        _log_redaction.redactors.add(self.redact)
        self.endpoint = urlsplit(self._base_url).netloc
        guard = GuardTransport(
            http_client if http_client is not None else pool_transport(_shared_ssl_context()),
            api_key=api_key,
            user_agent=user_agent or f"rig_nb/{__version__}",
            max_response_bytes=max_response_bytes,
        )
        # trust_env=False: no proxies, no netrc, no SSL_CERT_* from the environment.
        self._http = httpx.Client(
            transport=guard, trust_env=False, timeout=self.timeout, follow_redirects=False
        )
        # Retries are ours (`_attempts`): the SDK's would sleep past the deadline on Retry-After.
        self._sdk = openai.OpenAI(
            api_key=api_key or _NO_KEY,
            organization="",
            project="",
            webhook_secret="",
            base_url=self._base_url,
            timeout=self.timeout,
            max_retries=0,
            default_headers={"Authorization": "Bearer " + (api_key or _NO_KEY)},
            http_client=cast(Any, self._http),  # the SDK accepts a legacy httpx.Client
        )

    def __repr__(self) -> str:
        return f"Client(endpoint={self.endpoint!r})"

    def over(self, api: str) -> Client:
        """This endpoint over another wire ("chat" or "responses"): the same credentials,
        limits and connection pool. Close the original, not the copy."""
        if api not in APIS:
            raise ValueError('api must be "chat" (/chat/completions) or "responses" (/responses)')
        twin = copy.copy(self)
        twin.api = api
        return twin

    def close(self) -> None:
        self._sdk.close()
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attempts(self, send: Callable[[], T], retries: bool) -> T:
        """One request at its boundary (`rig_nb._boundary`: counted, and refused once the
        caller's work is cancelled), sent by `_retried`."""
        from ._boundary import request_boundary

        with request_boundary():
            return self._retried(send, retries)

    def _retried(self, send: Callable[[], T], retries: bool) -> T:
        """`send` under the deadline, retried on transient failures; every failure a RigError."""
        from ._transport import deadline_scope, remaining

        tries = self.max_retries if retries else 0
        error: BackendError | None = None
        with deadline_scope(self.deadline):
            for attempt in range(tries + 1):
                try:
                    return send()
                except ResponseTooLargeError:
                    raise
                except BackendError as exc:
                    error = backend_error(exc, self.redact, self.deadline)
                    break
                except RigError:
                    raise
                except Exception as exc:
                    error = backend_error(exc, self.redact, self.deadline)
                    retry, headers = retryable(exc)
                    if not retry or attempt == tries or error.kind == "deadline":
                        break
                    delay, asked = retry_delay(attempt, headers)
                    try:
                        left = remaining()
                    except Exception:
                        break
                    # A wait longer than the deadline allows, or than the caller's timeout
                    # (the silence they accept), is not waited: the error says whose wait it
                    # was, quoting the endpoint only when it sent Retry-After.
                    past_deadline = left is not None and delay >= left
                    if delay > self.timeout or past_deadline:
                        limit = (
                            "the time left before the deadline"
                            if past_deadline
                            else f"the timeout of {self.timeout:g} s"
                        )
                        note = (
                            f"the endpoint asks to retry after {delay:g} s"
                            if asked
                            else f"not retried: rig_nb's own backoff of {delay:.2g} s "
                            f"is longer than {limit}"
                        )
                        error = BackendError(
                            f"{error.message} ({note})",
                            status_code=error.status_code,
                            kind=error.kind,
                        )
                        break
                    time.sleep(delay)
        assert error is not None
        raise error  # raised outside the except block: no chained cause

    def chat(self, body: Mapping[str, Any], *, retries: bool = True) -> Reply:
        """One chat.completions request (not streamed); the parsed reply of choice 0.

        With `api="responses"` the same chat-shaped body goes to `/responses` and its
        reply is read into the same Reply.
        """
        if self.api == "responses":
            return self._responses(body, retries)
        params, extra = sdk_arguments(body)

        def send() -> Reply:
            raw = self._sdk.chat.completions.with_raw_response.create(**params, extra_body=extra)
            http = raw.http_response
            reply = parse_reply_body(http.content)
            reply.headers = _kept_headers(http.headers)
            return reply

        return self._attempts(send, retries)

    def stream(
        self,
        body: Mapping[str, Any],
        assembler: StreamAssembler,
        *,
        on_event: Callable[[bool], None] | None = None,
        retries: bool = True,
    ) -> Reply:
        """One streamed request; each `data:` event goes to `assembler`, then `on_event(grew)`.

        A retry happens only before the first event. The assembler keeps what
        arrived when the stream fails part way.
        """
        if self.api == "responses":
            return self._responses(body, retries, assembler, on_event)
        params, extra = sdk_arguments(body)
        params["stream"] = True

        def send() -> Reply:
            with self._sdk.chat.completions.with_streaming_response.create(
                **params, extra_body=extra
            ) as raw:
                http = raw.http_response
                # Failures past this point are httpx's or ours, never the SDK's: not retried.
                reply = read_stream(http.iter_bytes(), assembler, on_event)
                reply.headers = _kept_headers(http.headers)
                return reply

        try:
            return self._attempts(send, retries)
        except ResponseTooLargeError as exc:
            # The cap counts the event stream, about 100 to 200 bytes per delta.
            raise ResponseTooLargeError(
                f"{exc.message}; a stream sends 100-200 bytes per delta: raise "
                "max_response_bytes for long streamed replies"
            ) from None

    def _responses(
        self,
        body: Mapping[str, Any],
        retries: bool,
        assembler: StreamAssembler | None = None,
        on_event: Callable[[bool], None] | None = None,
    ) -> Reply:
        """One `/responses` request for a chat-shaped body, streamed when `assembler` is given."""
        request = responses_body({k: v for k, v in body.items() if k != "stream"})
        params = {k: v for k, v in request.items() if k in RESPONSES_FIELDS}
        extra = {k: v for k, v in request.items() if k not in RESPONSES_FIELDS}
        sdk = self._sdk.responses

        def send() -> Reply:
            if assembler is None:
                raw = sdk.with_raw_response.create(**params, extra_body=extra)
                reply = parse_response_body(raw.http_response.content)
                reply.headers = _kept_headers(raw.http_response.headers)
                return reply
            with sdk.with_streaming_response.create(
                **params, stream=True, extra_body=extra
            ) as streaming:
                http = streaming.http_response
                reply = read_response_stream(http.iter_bytes(), assembler, on_event)
                reply.headers = _kept_headers(http.headers)
                return reply

        try:
            return self._attempts(send, retries)
        except ResponseTooLargeError as exc:
            if assembler is None:
                raise
            raise ResponseTooLargeError(
                f"{exc.message}; a stream sends 100-300 bytes per delta: raise "
                "max_response_bytes for long streamed replies"
            ) from None
        except BackendError as exc:
            if exc.status_code != 404:
                raise
            hinted = BackendError(exc.message + _NO_RESPONSES_API, status_code=404, kind=exc.kind)
        raise hinted  # outside the except block: no chained context

    def list_models(self) -> Models:
        """GET /models, once: the model list (`id`, `owned_by`, ...), empty when not a list."""

        def send() -> Models:
            raw = self._sdk.models.with_raw_response.list()
            items = parse_models(raw.http_response.content)
            return Models(items, _kept_headers(raw.http_response.headers))

        return self._attempts(send, retries=False)

    @property
    def server_kind(self) -> str:
        """The server kind, detected on first use (the doctor's detection over one GET of the
        model list and its headers; `unknown` when that fails), then cached."""
        with self._kind_lock:
            if self._server_kind is None:
                from .capabilities import server_of_models

                try:
                    self._server_kind = server_of_models(self.list_models())
                except RigError:
                    self._server_kind = "unknown"
            return self._server_kind

    def apply_template(self, body: Mapping[str, Any]) -> str:
        """llama-server's `POST /apply-template` (at the server root): the prompt its chat
        template renders for a chat request `body`. One request, no retries."""
        root = self._base_url.removesuffix("/v1")

        def send() -> str:
            response = self._http.post(f"{root}/apply-template", json=dict(body))
            if response.status_code >= 400:
                raise BackendError(
                    f"ai backend: HTTP {response.status_code} from /apply-template",
                    status_code=response.status_code,
                )
            prompt = applied_template(response.content)
            if prompt is None:
                raise BackendError("ai backend: /apply-template sent no prompt", kind="reply")
            return prompt

        return self._attempts(send, retries=False)

    def server_json(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """A server's own metadata route at the server root (the base URL without `/v1`):
        `GET path`, or `POST path` with JSON `body`; the parsed JSON. One request, no
        retries, bounded by the timeout, the deadline and the response cap; BackendError
        when it fails or is not JSON."""
        from . import strict_json

        root = self._base_url.removesuffix("/v1")

        def send() -> Any:
            url = f"{root}{path}"
            response = (
                self._http.get(url) if body is None else self._http.post(url, json=dict(body))
            )
            if response.status_code >= 400:
                raise BackendError(
                    f"ai backend: HTTP {response.status_code} from {path.split('?')[0]}",
                    status_code=response.status_code,
                )
            try:
                return strict_json.loads(response.content)
            except ValueError:
                raise BackendError(
                    f"ai backend: {path.split('?')[0]} did not answer JSON", kind="reply"
                ) from None

        return self._attempts(send, retries=False)

    def probe_tool_calling(
        self,
        model: str,
        *,
        tool_choice: str | None = "auto",
        stream: bool = False,
        trace: Trace | None = None,
    ) -> None:
        """One trivial single-tool request; None only if the reply holds a usable tool call.

        See `rig_nb.probe`: exactly one request, no retries, no reply text in a
        raised error (which carries `.trace`).
        """
        from .probe import probe

        probe(self, model, tool_choice=tool_choice, stream=stream, trace=trace)

    def probe_trace(
        self,
        model: str,
        *,
        tool_choice: str | None = "auto",
        stream: bool = False,
        trace: Trace | None = None,
    ) -> Trace:
        """The probe's finished trace (outcome "ok" or the error class); never a RigError."""
        from .probe import probe_trace

        return probe_trace(self, model, tool_choice=tool_choice, stream=stream, trace=trace)

    def run(self, request: RunRequest, *, trace: Trace | None = None) -> RunResult:
        """Run the tool loop; see `rig_nb.loop.run`."""
        from .loop import run

        return run(self, request, trace=trace)

    def run_trace(self, request: RunRequest, *, trace: Trace | None = None) -> Trace:
        """Run the tool loop and return its finished trace, never raising a RigError."""
        from .loop import run_trace

        return run_trace(self, request, trace=trace)
