"""What the command line says when something fails: `CommandError`, and the hints that say
what to change (the address, the scheme, the route, the key, the install command).

A hint names the host and port the user typed, never the path (gateways put tokens
there) and never the key. Facts about the address (does it resolve, does it speak TLS,
is there a model list) are looked up only when a hint needs them.
"""

from __future__ import annotations

import socket
from argparse import Namespace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ..errors import BackendError, RigError

if TYPE_CHECKING:
    from ..client import Client

__all__ = [
    "CommandError",
    "Facts",
    "address",
    "endpoint_hint",
    "explain",
    "install",
    "install_hint",
    "models_hint",
    "scheme_hint",
    "url_problem",
]

_DIAGNOSE_S = 5.0


class CommandError(Exception):
    """A failure reported as one line on stderr, with the exit status to end with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def install_hint(extra: str, package_dir: Path, cwd: Path) -> str:
    """The pip command that installs `extra`: editable from a source checkout (a
    pyproject.toml beside the package directory), from the index otherwise."""
    root = package_dir.parent
    if (root / "pyproject.toml").is_file():
        where = "." if cwd.resolve() == root.resolve() else str(root)
        return f"pip install -e '{where}[{extra}]'"
    return f"pip install 'rig_nb[{extra}]'"


def scheme_hint(base_url: str) -> str | None:
    """The base URL with http:// in front when it lacks a scheme and reads as host[:port][/path]
    (`localhost:8000/v1`), else None. The path is shown only when it is /v1 or empty."""
    text = base_url.strip()
    if not text or "://" in text:
        return None
    parts = urlsplit("http://" + text)
    try:
        parts.port  # noqa: B018  (raises on a port out of range)
    except ValueError:
        return None
    if not parts.hostname or parts.query or parts.fragment or parts.username:
        return None
    path = parts.path.rstrip("/")
    shown = path if path in ("", "/v1") else "/..."
    return f"http://{parts.netloc}{shown}"


def url_problem(base_url: str, exc: ValueError) -> str:
    fixed = scheme_hint(base_url)
    return f"add a scheme: {fixed}" if fixed else str(exc)


def install(extra: str) -> str:
    return install_hint(extra, Path(__file__).resolve().parents[1], Path.cwd())


class Facts(Protocol):
    """What a hint may ask about the address the user typed (looked up on demand)."""

    def resolves(self) -> bool: ...
    def speaks_tls(self) -> bool: ...
    def route_missing(self) -> bool: ...


def address(base_url: str) -> tuple[str, str, int]:
    """Scheme, host and port of a base URL the Client accepted (default port by scheme)."""
    parts = urlsplit(base_url.strip())
    return (
        parts.scheme,
        parts.hostname or "",
        parts.port or (443 if parts.scheme == "https" else 80),
    )


def models_hint(prog: str) -> str:
    """The hint after a model-not-found error: how to list the names an endpoint knows."""
    return f"{prog} models --base-url ... lists the model names the endpoint knows"


def endpoint_hint(exc: BackendError, facts: Facts, args: Any, route: str) -> str:
    """One line that says what to change about a failed request; its own message otherwise.

    `args` holds the command's base_url, timeout, deadline, api_key_env and prog (and
    max_tokens when it has a budget). The line names the host and port the user typed,
    never the path (gateways put tokens there).
    """
    base_url, timeout, deadline = args.base_url, args.timeout, args.deadline
    scheme, host, port = address(base_url)
    at = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    message = exc.message
    if exc.kind == "connect":
        if not facts.resolves():
            return f"the host name {host!r} does not resolve: check the host in --base-url"
        return (
            f"nothing answers at {at}: check that the server is running and listens "
            "on that host and port"
        )
    if exc.kind == "tls":
        if facts.speaks_tls():
            return (
                f"the TLS handshake with {at} failed: its certificate is not trusted here "
                "(self-signed, or issued for another name); serve one from a trusted CA"
            )
        return f"{at} speaks plain http, not https: use http:// in --base-url"
    if exc.kind == "context":
        window = f" of {exc.context_window} tokens" if exc.context_window else ""
        sent = f" ({exc.prompt_tokens} tokens sent)" if exc.prompt_tokens else ""
        return (
            f"the prompt does not fit the server's context window{window}{sent}: raise the "
            f"window on the server ({args.prog} doctor names the flag) or send less"
        )
    if (exc.kind == "protocol" and scheme == "http" and facts.speaks_tls()) or (
        exc.status_code == 400 and "https port" in message.lower()
    ):
        return f"{at} speaks https, not plain http: use https:// in --base-url"
    if exc.status_code == 404 and (route == "models" or facts.route_missing()):
        example = f"{scheme}://{at}/v1"
        path = urlsplit(base_url.strip()).path.rstrip("/")
        if path.endswith("/chat/completions"):
            return (
                f"--base-url ends in /chat/completions: end it at /v1 (e.g. {example}); "
                "rig_nb adds /chat/completions itself"
            )
        if path in ("", "/v1"):
            # The user gave the usual root already (a bare host:port gets /v1): no URL to offer.
            return (
                f"HTTP 404 from {at}: no {route} route under /v1, where OpenAI-compatible "
                "servers serve it: check that this host and port are the API server's (one "
                "that serves the API under another path names that path in its docs)"
            )
        return (
            f"HTTP 404 from {at}: no {route} route under that base URL; "
            f"it should end at /v1 (e.g. {example})"
        )
    if exc.status_code == 404:
        return f"{message}; {models_hint(args.prog)}"
    if exc.status_code in (401, 403):
        fix = (
            "check the key in" if args.api_key_env else "put the key in a variable and name it with"
        )
        return f"{message} ({fix} --api-key-env)"
    if exc.kind == "timeout":
        return (
            f"no data from {at} for {timeout:g} s (--timeout): check that the server answers, "
            "or raise --timeout if it is slow (still loading a model?)"
        )
    if exc.kind == "deadline":
        lower = ", or lower --max-tokens" if "max_tokens" in args else ""
        return (
            f"the request to {at} ran past its deadline of {deadline:g} s (--deadline): "
            f"raise --deadline{lower}"
        )
    return message


class _Facts:
    """What a hint needs to know about the address, each looked up only when asked."""

    def __init__(self, args: Namespace, client: Client | None) -> None:
        self.args, self.client = args, client
        self.host, self.port = address(args.base_url)[1:]

    def resolves(self) -> bool:
        try:
            socket.getaddrinfo(self.host, None)
        except (OSError, UnicodeError):
            return False
        return True

    def speaks_tls(self) -> bool:
        """Whether host:port completes a TLS handshake (certificate not checked, nothing sent)."""
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        wait = min(self.args.timeout, _DIAGNOSE_S)
        try:
            with socket.create_connection((self.host, self.port), timeout=wait) as sock:
                with context.wrap_socket(sock, server_hostname=self.host):
                    return True
        except (OSError, ValueError):
            return False

    def route_missing(self) -> bool:
        """True when the base URL has no model list either: the path, not the model, is wrong."""
        if self.client is None:
            return True
        try:
            self.client.list_models()
        except RigError as exc:
            return isinstance(exc, BackendError) and exc.status_code == 404
        return False


def explain(
    exc: BackendError, args: Namespace, client: Client | None, route: str = "chat completions"
) -> CommandError:
    """The one line (exit 1) that says what to change about a failed request, if anything."""
    return CommandError(endpoint_hint(exc, _Facts(args, client), args, route), 1)
