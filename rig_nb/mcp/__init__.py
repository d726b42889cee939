"""An MCP server's tools as rig_nb Tools: `McpTools`.

    with McpTools(["node", "server.js"]) as mcp:       # stdio: an argv list, never a shell line
        client.run(RunRequest(model, 512, prompt=..., tools=mcp.tools))
    with McpTools(url="http://127.0.0.1:8000/mcp") as mcp:   # streamable HTTP
        ...

The official `mcp` SDK is async (anyio) and rig_nb's loop is sync, and compare runs
loops in several threads at once. So McpTools owns one background thread that runs an
event loop (`anyio.from_thread.start_blocking_portal`); the session lives in that loop
and nowhere else. A Tool's `run` hands the call to the loop through the portal (thread
safe) and waits for its result, at most `timeout` seconds plus a grace. At most 32
calls are in flight at once; the pipes' message queues hold 16 messages; the server's
stderr is kept as its last 64 KiB. Every failure of a call (the server's `isError`, a
timeout, a closed session, a dead process) raises RigError, which the loop feeds back
to the model as `error: <message>`. Leaving the `with` block ends the server (terminate,
kill after 5 s), the loop and its thread, and every thread asyncio started for the child.

`import rig_nb.mcp` does not import the SDK: it is imported when a McpTools starts
(`pip install 'rig_nb[mcp]'`).
"""

from __future__ import annotations

import concurrent.futures
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import RigError
from ..redact import Redactor
from ..tool import Tool
from .names import matches, render_result, rig_names

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from .session import Connection
    from .stdio import StderrTail

__all__ = ["McpTools"]

MAX_IN_FLIGHT = 32
# Past a call's own timeout, how long the caller waits for the loop to answer at all.
_GRACE_S = 5.0
# Leaving the block: the server's end (terminate, kill after 5 s) and the loop's.
_CLOSE_S = 12.0
_THREAD = "rig_nb-mcp"
# Secrets in env or headers shorter than this are not masked: masking "1" garbles every line.
_SECRET_MIN = 6


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what a task group raised for."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _check_command(command: Sequence[str]) -> list[str]:
    if isinstance(command, (str, bytes)):
        raise ValueError(
            "command is an argv list such as ['node', 'server.js'], not a shell string "
            "(shlex.split makes one)"
        )
    argv = list(command)
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        raise ValueError("command must be a non-empty list of strings, the program first")
    return argv


def _check_url(url: str) -> str:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be the MCP endpoint's full http(s) URL")
    return url


def _check_strings(value: Mapping[str, str] | None, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{what} must map strings to strings")
    return dict(value)


class McpTools(AbstractContextManager["McpTools"]):
    """An MCP server's tools (stdio or streamable HTTP) as `.tools`, for RunRequest and Scenario.

    Exactly one of `command` (an argv list) and `url`. `env` and `cwd` are for a stdio
    server, `headers` for an HTTP one. `timeout` bounds the start (initialize and the
    tool list) and each call. `include`: names or glob patterns; only matching tools.
    """

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        include: Iterable[str] | str | None = None,
    ) -> None:
        if (command is None) == (url is None):
            raise ValueError("give exactly one of command (an argv list) and url")
        self._argv = _check_command(command) if command is not None else None
        self._url = _check_url(url) if url is not None else None
        if self._url is not None and (env is not None or cwd is not None):
            raise ValueError("env and cwd are for a server started over stdio (command)")
        if self._argv is not None and headers is not None:
            raise ValueError("headers are for a server reached over HTTP (url)")
        self._env = _check_strings(env, "env")
        self._headers = _check_strings(headers, "headers")
        self._cwd = None if cwd is None else str(cwd)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise ValueError(f"timeout must be a number of seconds, got {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        if isinstance(include, str):
            include = [include]
        self._include = None if include is None else [str(p) for p in include]
        secrets = [
            v for v in [*self._env.values(), *self._headers.values()] if len(v) >= _SECRET_MIN
        ]
        self._redactors = [Redactor(s) for s in secrets] + [Redactor(urls=[self._url or ""])]
        self._state = "new"
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._calls: set[concurrent.futures.Future[str]] = set()
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._main: concurrent.futures.Future[None] | None = None
        self._stop: Any = None
        self._conn: Connection | None = None
        self._tail: StderrTail | None = None
        self._pid: int | None = None
        self._server: Any = None
        self._threads: set[int] = set()
        self._tools: tuple[Tool, ...] = ()
        self._names: dict[str, str] = {}

    def __repr__(self) -> str:
        where = f"command={self._argv!r}" if self._argv is not None else f"url={self.server_name!r}"
        return f"McpTools({where}, state={self._state!r})"

    # --- what it gives ------------------------------------------------------------------

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The server's tools as rig_nb Tools (after `include`), in the server's order."""
        if self._state == "new":
            raise RuntimeError("McpTools has not started: use it as `with McpTools(...) as mcp:`")
        return self._tools

    @property
    def names(self) -> dict[str, str]:
        """Each rig_nb tool name -> the MCP name it calls."""
        return dict(self._names)

    @property
    def pid(self) -> int | None:
        """The stdio server's process id (None over HTTP or before the start)."""
        return self._pid

    @property
    def server_name(self) -> str:
        """What errors call the server: the command's first word, or the URL's host and port."""
        if self._argv is not None:
            return self._argv[0]
        parts = urlsplit(self._url or "")
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)

    # --- start and stop -----------------------------------------------------------------

    def __enter__(self) -> McpTools:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        """Start the server (or connect), initialize and list the tools; RigError on failure."""
        with self._lock:
            if self._state != "new":
                raise RuntimeError("a McpTools starts once")
            self._state = "starting"
        try:
            from anyio.from_thread import start_blocking_portal

            from .session import server_env
            from .stdio import StderrTail
        except ImportError as exc:
            self._state = "closed"
            raise ImportError(
                f"McpTools needs the mcp package ({exc.name} is missing): pip install 'rig_nb[mcp]'"
            ) from None
        self._threads = {t.ident for t in threading.enumerate() if t.ident is not None}
        self._tail = StderrTail()
        env = server_env(self._env) if self._argv is not None else {}
        self._portal_cm = start_blocking_portal(name=_THREAD)
        self._portal = self._portal_cm.__enter__()
        ready: concurrent.futures.Future[Connection] = concurrent.futures.Future()
        self._main = self._portal.start_task_soon(self._run, ready, env)
        try:
            conn = ready.result(timeout=self.timeout + _GRACE_S)
        except BaseException as exc:
            self._shutdown()
            self._state = "closed"
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise RigError(self._start_error(exc)) from None
        self._conn = conn
        self._tools, self._names = self._wrap(conn)
        self._state = "running"

    async def _run(self, ready: concurrent.futures.Future[Connection], env: dict[str, str]) -> None:
        """The loop's main task: hold the connection open until close() sets the stop event."""
        import anyio

        from .session import connect

        self._stop = anyio.Event()
        assert self._tail is not None

        def started(server: Any) -> None:
            self._pid, self._server = server.pid, server

        try:
            async with connect(
                argv=self._argv,
                url=self._url,
                env=env,
                cwd=self._cwd,
                headers=self._headers,
                timeout=self.timeout,
                tail=self._tail,
                on_server=started,
            ) as conn:
                ready.set_result(conn)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                leaf = _leaf(exc)
                ready.set_exception(leaf if isinstance(leaf, Exception) else RigError("cancelled"))
            if not isinstance(exc, Exception):
                raise

    def _start_error(self, exc: BaseException) -> str:
        from mcp.shared.exceptions import MCPError

        leaf = _leaf(exc)
        if isinstance(leaf, (TimeoutError, concurrent.futures.TimeoutError)):
            why = f"no answer to initialize and tools/list within {self.timeout:g} s"
        elif isinstance(leaf, OSError) and self._pid is None and self._argv is not None:
            why = f"cannot run it: {leaf.strerror or leaf}"
        elif isinstance(leaf, MCPError) and leaf.code == -32000:
            code = None if self._server is None else self._server.returncode
            why = "it closed the connection" if code is None else f"it exited with code {code}"
        elif isinstance(leaf, MCPError):
            why = f"MCP error {leaf.code}: {leaf}"
        elif isinstance(leaf, RigError):
            why = leaf.message
        else:
            why = f"{type(leaf).__name__}: {leaf}"
        line = self._tail.last_line() if self._tail is not None else ""
        said = f"; its last stderr line: {line}" if line else ""
        if self._argv is not None and self._pid is not None and not line:
            said = "; it wrote nothing to stderr"
        # The server's own words are redacted; its name is what the caller typed.
        return f"MCP server {self.server_name!r} failed to start: {self._redact(why + said)}"

    def close(self) -> None:
        """End the server (terminate, kill after 5 s), the event loop and its thread. Idempotent."""
        with self._lock:
            if self._state in ("new", "closed"):
                self._state = "closed"
                return
            self._state = "closed"
        self._shutdown()

    def _shutdown(self) -> None:
        portal, main = self._portal, self._main
        with self._lock:
            calls = list(self._calls)
        for future in calls:
            future.cancel()
        if portal is not None and self._stop is not None:
            try:
                portal.call(self._stop.set)
            except RuntimeError:
                pass
        if main is not None:
            try:
                main.result(timeout=_CLOSE_S)
            except BaseException:
                main.cancel()
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
        self._portal_cm = self._portal = None
        self._conn = None
        # asyncio's child watcher (Python <= 3.11) waits for the server in a thread of its own.
        for thread in threading.enumerate():
            if thread.ident not in self._threads and thread.name.startswith("waitpid-"):
                thread.join(timeout=2.0)

    # --- calls ----------------------------------------------------------------------------

    def _wrap(self, conn: Connection) -> tuple[tuple[Tool, ...], dict[str, str]]:
        listed = [t for t in conn.tools if self._include is None or matches(t.name, self._include)]
        names = rig_names([t.name for t in listed])
        tools = []
        for name, t in zip(names, listed, strict=True):
            description = (t.description or t.title or "").strip() or f"MCP tool {t.name}"
            schema = t.input_schema if isinstance(t.input_schema, dict) else {"type": "object"}
            tools.append(Tool(name, description, schema, self._runner(t.name)))
        return tuple(tools), {n: t.name for n, t in zip(names, listed, strict=True)}

    def _runner(self, mcp_name: str) -> Any:
        def run(args: dict[str, Any]) -> str:
            return self.call(mcp_name, args)

        return run

    def call(self, mcp_name: str, arguments: dict[str, Any]) -> str:
        """Call the MCP tool `mcp_name`: its result as text, or RigError (fed back by the loop)."""
        if self._state != "running" or self._portal is None:
            raise RigError(f"the MCP session with {self.server_name!r} is closed")
        code = self._conn.exit_code() if self._conn is not None else None
        if code is not None:
            line = self._tail.last_line() if self._tail is not None else ""
            said = f"; its last stderr line: {line}" if line else ""
            raise RigError(f"the MCP server exited with code {code}{self._redact(said)}")
        if not self._slots.acquire(timeout=self.timeout):
            raise RigError(
                f"{MAX_IN_FLIGHT} calls to the MCP server in flight for {self.timeout:g} s"
            )
        try:
            try:
                future: concurrent.futures.Future[str] = self._portal.start_task_soon(
                    self._acall, mcp_name, arguments
                )
            except RuntimeError:
                raise RigError(f"the MCP session with {self.server_name!r} is closed") from None
            with self._lock:
                self._calls.add(future)
            try:
                return future.result(timeout=self.timeout + _GRACE_S)
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise RigError(
                    f"MCP tool {mcp_name!r}: no answer within {self.timeout:g} s"
                ) from None
            except concurrent.futures.CancelledError:
                raise RigError(
                    f"MCP tool {mcp_name!r}: the session closed during the call"
                ) from None
            finally:
                with self._lock:
                    self._calls.discard(future)
        finally:
            self._slots.release()

    async def _acall(self, mcp_name: str, arguments: dict[str, Any]) -> str:
        conn = self._conn
        if conn is None:
            raise RigError(f"the MCP session with {self.server_name!r} is closed")
        try:
            result = await conn.call(mcp_name, arguments, self.timeout)
        except RigError as exc:
            raise RigError(self._redact(exc.message)) from None
        except Exception as exc:
            raise RigError(
                self._redact(f"MCP tool {mcp_name!r}: {type(exc).__name__}: {exc}")
            ) from None
        text = self._redact(render_result(result.content, result.structured_content))
        if result.is_error:
            raise RigError(text or f"MCP tool {mcp_name!r} failed")
        return text

    def _redact(self, text: str) -> str:
        for redactor in self._redactors:
            text = redactor(text)
        return text
