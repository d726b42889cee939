"""The HTTP backend: one endpoint over one wire, through one guarded transport.

It renders a wire-neutral `Request` with its wire (`rig_nb.wire.WIRES`), sends it and
returns the parsed `Reply`, or raises a RigError; recording and deciding belong to
the loop. Nothing ambient reaches the wire: explicit credentials only, no OPENAI_*
variables, no netrc. Every request is bounded: a capped (decompressed) body, a
per-read `timeout`, and a `deadline` on the whole request, retries and streamed
bodies included. `rig_nb.client.Client` is this backend with the loop's entry points.
"""

from __future__ import annotations

import copy
import logging
import math
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import openai

from ._backend_errors import backend_error, retry_delay, retryable
from ._version import __version__
from .backend import Models
from .errors import BackendError, ResponseTooLargeError, RigError
from .redact import Redactor
from .servers import SERVER_KINDS, server_of_models
from .wire import WIRES, Reader, Reply, Request, Wire

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpBackend", "Models", "check_timing"]

T = TypeVar("T")

_NO_KEY = "rig-nb-no-key"  # the SDK insists on a key; the transport never sends this one
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


def _wire(api: Any) -> Wire:
    wire = WIRES.get(api) if isinstance(api, str) else None
    if wire is None:
        names = ", ".join(f'"{name}"' for name in WIRES)
        raise ValueError(f"api must be one of {names}, not {api!r}")
    return wire


class HttpBackend:
    """One endpoint over one wire (`api`), with nothing ambient reaching the wire.

    It implements `rig_nb.backend.Backend`; `over(api)` is the same endpoint over another
    wire, sharing the credentials, limits and connection pool.
    """

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
        from ._transport import pool_transport

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
        wire = _wire(api)
        self._server_kind = None if server == "auto" else server
        self._kind_lock = threading.Lock()
        self.timeout, self.deadline = check_timing(timeout, deadline)
        self.max_retries = max_retries
        self._base_url = _normalize_base_url(base_url)
        self._api_key = api_key
        self._cap = max_response_bytes
        self._user_agent = user_agent or f"rig_nb/{__version__}"
        self.redact = Redactor(api_key, [self._base_url, base_url])
        _log_redaction.redactors.add(self.redact)
        self.endpoint = urlsplit(self._base_url).netloc
        self._pool: Any = (
            http_client if http_client is not None else pool_transport(_shared_ssl_context())
        )
        self._bind(wire, owns_pool=True)

    def _bind(self, wire: Wire, *, owns_pool: bool) -> None:
        """Send over `wire`: its headers on a guarded transport around the shared pool."""
        import httpx

        from ._transport import GuardTransport

        self.wire = wire
        self._root = wire.root(self._base_url)
        guard = GuardTransport(
            self._pool,
            headers=wire.headers(self._api_key),
            user_agent=self._user_agent,
            max_response_bytes=self._cap,
            owns_inner=owns_pool,
        )
        # trust_env=False: no proxies, no netrc, no SSL_CERT_* from the environment.
        self._http = httpx.Client(
            transport=guard, trust_env=False, timeout=self.timeout, follow_redirects=False
        )
        # Retries are ours (`_attempts`): the SDK's would sleep past the deadline on Retry-After.
        # The transport drops every header the SDK sets from its key or the environment.
        self._sdk = openai.OpenAI(
            api_key=self._api_key or _NO_KEY,
            organization="",
            project="",
            webhook_secret="",
            base_url=self._root,
            timeout=self.timeout,
            max_retries=0,
            http_client=cast(Any, self._http),  # the SDK accepts a legacy httpx.Client
        )

    @property
    def api(self) -> str:
        """The wire's name (`chat`, `responses`, ...); the trace records it."""
        return self.wire.name

    # The Sender a wire sends through.
    @property
    def sdk(self) -> openai.OpenAI:
        return self._sdk

    @property
    def http(self) -> httpx.Client:
        return self._http

    def url(self, path: str) -> str:
        return self._root + path

    def __repr__(self) -> str:
        return f"{type(self).__name__}(endpoint={self.endpoint!r})"

    def over(self, api: str) -> HttpBackend:
        """This endpoint over another wire: the same credentials, limits and connection
        pool. Close the original, not the copy."""
        wire = _wire(api)
        twin = copy.copy(self)
        twin._bind(wire, owns_pool=False)
        return twin

    def close(self) -> None:
        self._sdk.close()
        self._http.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _attempts(
        self,
        send: Callable[[], T],
        retries: bool,
        fresh: Callable[[], bool] | None = None,
        *,
        model: bool = True,
    ) -> T:
        """One request at its boundary (`rig_nb._boundary`: counted, and refused once the
        caller's work is cancelled), sent by `_retried`; `model` False for a request that
        asks the model nothing (the model list, the server's own routes)."""
        from ._boundary import request_boundary

        with request_boundary(model=model):
            return self._retried(send, retries, fresh)

    def _routed(
        self, send: Callable[[], T], retries: bool, fresh: Callable[[], bool] | None = None
    ) -> T:
        """A request to the wire's route: a 404 says what the endpoint may lack."""
        try:
            return self._attempts(send, retries, fresh)
        except BackendError as exc:
            if exc.status_code != 404 or not self.wire.not_found:
                raise
            hinted = BackendError(
                f"{exc.message} ({self.wire.not_found})", status_code=404, kind=exc.kind
            )
        raise hinted  # outside the except block: no chained context

    def _retried(
        self, send: Callable[[], T], retries: bool, fresh: Callable[[], bool] | None = None
    ) -> T:
        """`send` under the deadline, retried on transient failures; every failure a RigError.

        `fresh()` False means the failed try already received part of its reply (a stream's
        first bytes): the endpoint did the work, so it is never sent again."""
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
                    if fresh is not None and not fresh():
                        break
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

    def chat(self, request: Request, *, retries: bool = True) -> Reply:
        """One request, not streamed: the wire's parsed reply."""
        wire = self.wire
        body = wire.sent_body(request)

        def send() -> Reply:
            http = wire.post(self, body)
            reply = wire.parse(http.content)
            reply.headers = _kept_headers(http.headers)
            return reply

        return self._routed(send, retries)

    def reader(self) -> Reader:
        """A fresh stream reader of this backend's wire."""
        return self.wire.reader()

    def stream(
        self,
        request: Request,
        reader: Reader,
        *,
        on_event: Callable[[bool], None] | None = None,
        retries: bool = True,
    ) -> Reply:
        """One streamed request; each event goes to `reader`, then `on_event(grew)`.

        A retry happens only before the first byte of the stream's body: once any arrived,
        a failure is this one request's (the reader keeps what arrived).
        """
        wire = self.wire
        body = wire.sent_body(request)
        received = False

        def chunks(http: Any) -> Iterator[bytes]:
            nonlocal received
            rest = iter(http.iter_bytes())
            for chunk in rest:
                received = True
                yield chunk
                yield from rest  # the flag is set: the others pass without a Python loop

        def send() -> Reply:
            with wire.send(self, body, True) as http:
                reply = wire.read_stream(chunks(http), reader, on_event)
                reply.headers = _kept_headers(http.headers)
                return reply

        try:
            return self._routed(send, retries, lambda: not received)
        except ResponseTooLargeError as exc:
            # The cap counts the event stream, about 100 to 300 bytes per delta.
            raise ResponseTooLargeError(
                f"{exc.message}; a stream sends 100-300 bytes per delta: raise "
                "max_response_bytes for long streamed replies"
            ) from None

    def list_models(self) -> Models:
        """The wire's model list, once: its entries (`id`, ...), empty when not a list."""

        def send() -> Models:
            http = self.wire.models(self)
            return Models(self.wire.parse_models(http.content), _kept_headers(http.headers))

        return self._attempts(send, retries=False, model=False)

    @property
    def server_kind(self) -> str:
        """The server kind, detected on first use (`rig_nb.servers` over one GET of the
        model list and its headers; `unknown` when that fails), then cached."""
        with self._kind_lock:
            if self._server_kind is None:
                try:
                    self._server_kind = server_of_models(self.list_models())
                except RigError:
                    self._server_kind = "unknown"
            return self._server_kind

    def server_route(self, path: str, body: Mapping[str, Any] | None = None) -> bytes:
        """A route of the server itself, at its root (`/apply-template`, `/props`, ...):
        POST `body` (GET when None); the body of a 2xx answer. One request, no retries."""
        root = self._base_url.removesuffix("/v1")

        def send() -> bytes:
            if body is None:
                response = self._http.get(f"{root}{path}")
            else:
                response = self._http.post(f"{root}{path}", json=dict(body))
            if response.status_code >= 300:
                raise BackendError(
                    f"ai backend: HTTP {response.status_code} from {path}",
                    status_code=response.status_code,
                )
            return response.content

        return self._attempts(send, retries=False, model=False)
