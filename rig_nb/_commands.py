"""The commands behind `python -m rig_nb`; `__main__` parses the arguments and calls them.

The client, compare, capabilities, demo and report modules are imported inside
each command, never at import time: `--help` and usage errors must not wait for
the openai SDK. A failure a user can fix is a `CommandError`: one line that
says what to change, with the host and port the user typed and never the key.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from argparse import Namespace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._text import (
    COMPARE_COLUMNS,
    DEMO_COLUMNS,
    DEMO_LEGEND,
    Progress,
    address,
    compare_table_rows,
    demo_table_rows,
    endpoint_hint,
    format_table,
    format_trace,
    plural,
    printable,
)
from .errors import BackendError, RigError
from .wire import TOOL_CHOICES

if TYPE_CHECKING:
    from .client import Client
    from .compare import Endpoint
    from .trace import Trace

__all__ = ["COMMANDS", "TOOL_CHOICES", "CommandError", "explain", "read_endpoints"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The demo's leaky run shown iteration by iteration after the table.
_LEAKY = "qwen3-no-parser"
# A failure of these kinds means no request reached a model: nothing to report on.
_NO_EXCHANGE = frozenset({"connect", "tls", "protocol", "timeout", "deadline"})
_DIAGNOSE_S = 5.0


class CommandError(Exception):
    """A failure reported as one line on stderr, with the exit status to end with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def api_key(var: str | None, where: str = "--api-key-env") -> str:
    """The key held by the environment variable named `var` ("" when no variable is named)."""
    if var is None:
        return ""
    if not _ENV_NAME.fullmatch(var):
        # Not echoed: a key pasted here by mistake must not reach the terminal or a log.
        raise CommandError(f"{where}: takes the name of an environment variable, not a key")
    value = os.environ.get(var, "")
    if not value:
        raise CommandError(f"{where}: environment variable {var!r} is not set or empty")
    return value


def _client(args: Namespace) -> Client:
    from .client import Client

    key = api_key(args.api_key_env)
    try:
        return Client(args.base_url, key, timeout=args.timeout, deadline=args.deadline)
    except ValueError as exc:
        raise CommandError(f"--base-url: {exc}") from None


# --- what to change, when an endpoint cannot be used -------------------------------------


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


# --- commands -------------------------------------------------------------------------------


def cmd_demo(args: Namespace) -> int:
    from .compare import Endpoint, Scenario, compare_rows
    from .demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools

    tools = demo_tools()
    scenarios = [
        Scenario("probe", kind="probe"),
        Scenario(
            "demo", prompt=DEMO_PROMPT, system=DEMO_SYSTEM, tools=tools, max_tokens=args.max_tokens
        ),
    ]
    with DemoServer() as server:
        where, models = server.base_url, server.models
        endpoints = [Endpoint(name, where, name) for name in models]
        rows, traces = compare_rows(endpoints, scenarios=scenarios, stream=args.stream)
    runs, run_traces = rows[1::2], traces[1::2]
    how = "streamed, " if args.stream else ""
    print(f"rig_nb demo: {plural(len(models), 'persona')} on the embedded endpoint {where}")
    print(f"prompt: {DEMO_PROMPT}")
    print(
        f"tools: {', '.join(t.name for t in tools)}; max_tokens {args.max_tokens}; {how}"
        "each persona is probed once, then runs the tool loop."
    )
    print()
    print(format_table(demo_table_rows(rows[0::2], runs, run_traces), DEMO_COLUMNS))
    print(DEMO_LEGEND)
    leaky = next(
        (n for n, r in enumerate(runs) if r["model"] == _LEAKY),
        next((n for n, r in enumerate(runs) if r["reasoning_shapes"] not in ("", "none")), None),
    )
    trace = run_traces[leaky] if leaky is not None else None
    if trace is not None:
        print()
        print(f"Per-iteration trace of {trace.model}: reasoning leaks into content, stripped.")
        print(format_trace(trace, limit=400))
    print()
    print(
        "Your endpoint: rig-nb models --base-url URL lists its model names; "
        "rig-nb probe|doctor --base-url URL --model MODEL [--api-key-env VAR] checks one."
    )
    return 0


def cmd_probe(args: Namespace) -> int:
    with _client(args) as client:
        choice = TOOL_CHOICES[args.tool_choice]
        trace = client.probe_trace(args.model, tool_choice=choice, stream=args.stream)
        if isinstance(trace.exception, BackendError):
            raise explain(trace.exception, args, client)
        where = client.endpoint
    if trace.outcome == "ok":
        how = ", streamed" if args.stream else ""
        print(f"tool calling: yes ({args.model} at {where}, tool_choice {args.tool_choice}{how})")
        return 0
    if trace.outcome in ("NoToolCallingError", "OutputLimitError"):
        print(printable(f"tool calling: no ({trace.error})"))
        return 1
    raise CommandError(trace.error, 1)


def _replied(trace: Trace) -> bool:
    return any(
        it.finish_reason or it.raw_content or it.reasoning_content for it in trace.iterations
    )


def cmd_run(args: Namespace) -> int:
    from .loop import RunRequest

    tools: tuple[Any, ...] = ()
    if args.demo_tools:
        from .demo import demo_tools

        tools = demo_tools()
    request = RunRequest(
        args.model,
        args.max_tokens,
        system=args.system,
        prompt=args.prompt,
        tools=tools,
        max_iterations=args.max_iterations,
        stream=args.stream,
        recover_text_tool_calls=args.recover_text_tool_calls,
        extra_body=args.extra_body,
    )
    failure: CommandError | None = None
    with _client(args) as client:
        trace = client.run_trace(request)
        if isinstance(trace.exception, BackendError):
            failure = explain(trace.exception, args, client)
        elif trace.exception is not None:
            failure = CommandError(trace.error, 1)
    # A trace with no reply in it (refused connection, 404) says nothing the error does not.
    if failure is None or _replied(trace):
        print(trace.to_json(indent=2) if args.json else format_trace(trace))
    if failure is not None:
        raise failure
    return 0


def _load_toml(path: str) -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib  # type: ignore[import-not-found]  # python < 3.11 only
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CommandError(f"{path}: invalid TOML: {exc}") from None


def read_endpoints(path: str, key_var: str | None = None) -> list[Endpoint]:
    """The `[[endpoint]]` tables of a compare file; `key_var` is the default `api_key_env`."""
    from .client import Client
    from .compare import Endpoint

    tables = _load_toml(path).get("endpoint")
    if not isinstance(tables, list) or not tables:
        raise CommandError(f"{path}: no [[endpoint]] tables")
    endpoints: list[Endpoint] = []
    for n, table in enumerate(tables, 1):
        where = f"{path}: endpoint {n}"
        unknown = sorted(set(table) - {"name", "base_url", "model", "api_key_env"})
        if unknown:
            hint = " (put the key in an environment variable, name it in api_key_env)"
            raise CommandError(
                f"{where}: unknown key {unknown[0]!r}" + (hint if "api_key" in unknown else "")
            )
        for key in ("name", "base_url", "model"):
            if not isinstance(table.get(key), str) or not table[key].strip():
                raise CommandError(f"{where}: {key!r} must be a non-empty string")
        if table["name"] in {e.name for e in endpoints}:
            raise CommandError(f"{where}: duplicate name {table['name']!r}")
        var = table.get("api_key_env", key_var)
        if var is not None and not isinstance(var, str):
            raise CommandError(f"{where}: 'api_key_env' must be a string")
        key = api_key(var, f"{where}: api_key_env" if "api_key_env" in table else "--api-key-env")
        try:
            Client(table["base_url"]).close()
        except ValueError as exc:
            raise CommandError(f"{where}: base_url: {exc}") from None
        endpoints.append(Endpoint(table["name"], table["base_url"], table["model"], key))
    return endpoints


def _write(what: str, path: str, save: Callable[[], None]) -> None:
    try:
        save()
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror or exc}", 1) from None
    print(f"wrote {what} to {path}", file=sys.stderr)


def cmd_compare(args: Namespace) -> int:
    endpoints = read_endpoints(args.file, args.api_key_env)
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise CommandError("compare needs pandas: pip install 'rig_nb[notebook]'", 1) from None
    from .compare import compare, summarize
    from .report import save_html, save_traces

    progress = Progress(sys.stderr) if sys.stderr.isatty() else None
    try:
        frame = compare(
            endpoints,
            repeats=args.repeats,
            stream=args.stream,
            concurrency=args.concurrency,
            progress=progress or False,
            timeout=args.timeout,
            deadline=args.deadline,
        )
    finally:
        if progress is not None:
            progress.close()
    traces = [frame.attrs["traces"][n] for n in sorted(frame.attrs["traces"])]
    if args.csv:
        _write(plural(len(frame), "row"), args.csv, lambda: frame.to_csv(args.csv, index=False))
    if args.html:
        _write("the report", args.html, lambda: save_html(frame, args.html))
    if args.traces:
        _write(plural(len(traces), "trace"), args.traces, lambda: save_traces(traces, args.traces))
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
        print("summary: runs ok / runs, and the median latency, per scenario and endpoint")
        print(printable(summarize(frame).to_string()))
        print()
        print(format_table(compare_table_rows(rows), COMPARE_COLUMNS))
    per = len(frame) // len(endpoints)
    for n, endpoint in enumerate(endpoints):
        # An endpoint no run got through to: say once what to change, as probe would.
        mine = range(n * per, (n + 1) * per)
        errors = [frame.attrs["traces"][i].exception for i in mine if i in frame.attrs["traces"]]
        passed = (frame["outcome"][n * per : (n + 1) * per] == "ok").any()
        first = None if passed else next(iter(errors), None)
        if isinstance(first, BackendError) and first.kind in _NO_EXCHANGE:
            where = Namespace(base_url=endpoint.base_url, timeout=args.timeout, api_key_env=None)
            where.deadline = args.deadline
            hint = explain(first, where, None)
            print(f"rig-nb: endpoint {endpoint.name!r}: {hint}", file=sys.stderr)
    failed = int((frame["outcome"] != "ok").sum())
    if failed:
        print(f"rig-nb: {failed} of {plural(len(frame), 'run')} not ok", file=sys.stderr)
    return 1 if failed else 0


def cmd_doctor(args: Namespace) -> int:
    from .capabilities import describe_report, endpoint_report

    with _client(args) as client:
        try:
            client.list_models()  # one quick request: an endpoint nobody can reach fails here
        except BackendError as exc:
            if exc.kind in _NO_EXCHANGE:
                raise explain(exc, args, client) from None
        report = endpoint_report(client, args.model, stream=not args.no_stream)
        trace = report.check("tool_choice_auto").trace
        error = trace.exception if trace is not None else None
        if isinstance(error, BackendError) and (
            error.kind in _NO_EXCHANGE or error.status_code == 404
        ):
            raise explain(error, args, client)
    print(
        json.dumps(report.to_dict(), indent=2) if args.json else printable(describe_report(report))
    )
    return 0


def cmd_models(args: Namespace) -> int:
    with _client(args) as client:
        try:
            models = client.list_models()
        except BackendError as exc:
            raise explain(exc, args, client, route="models") from None
    rows = [
        {"id": str(m.get("id", "")), "owned_by": str(m.get("owned_by", ""))} for m in models.items
    ]
    if not rows:
        print("rig-nb: the endpoint lists no models (its /models list is empty)", file=sys.stderr)
        return 0
    print(format_table(rows, ["id", "owned_by"]))
    return 0


COMMANDS: dict[str, Callable[[Namespace], int]] = {
    "demo": cmd_demo,
    "probe": cmd_probe,
    "run": cmd_run,
    "compare": cmd_compare,
    "doctor": cmd_doctor,
    "models": cmd_models,
}
