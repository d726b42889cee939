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
import textwrap
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
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
    install_hint,
    plural,
    printable,
    scheme_hint,
    terminal_width,
)
from .dialects import TOOL_CALL_DIALECTS
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
# What a run that ended without an answer means, for the line `run` exits 1 with.
_ENDINGS = {
    "text_tool_calls": "the model wrote its tool calls as text",
    "reasoning_only": "the reply held reasoning but no answer",
    "tool_calls_in_reasoning": "the model wrote its tool calls inside its reasoning",
    "empty": "the reply was empty",
}


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


def _url_problem(base_url: str, exc: ValueError) -> str:
    fixed = scheme_hint(base_url)
    return f"add a scheme: {fixed}" if fixed else str(exc)


def _client(args: Namespace) -> Client:
    from .client import Client

    key = api_key(args.api_key_env)
    try:
        return Client(args.base_url, key, timeout=args.timeout, deadline=args.deadline)
    except ValueError as exc:
        raise CommandError(f"--base-url: {_url_problem(args.base_url, exc)}") from None


def _install(extra: str) -> str:
    return install_hint(extra, Path(__file__).resolve().parent, Path.cwd())


def _wrap(text: str, width: int | None) -> str:
    return textwrap.fill(text, width) if width else text


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
    width = terminal_width()
    print(f"rig_nb demo: {plural(len(models), 'persona')} on the embedded endpoint {where}")
    print(_wrap(f"prompt: {DEMO_PROMPT}", width))
    print(
        _wrap(
            f"tools: {', '.join(t.name for t in tools)}; max_tokens {args.max_tokens}; {how}"
            "each persona is probed once, then runs the tool loop.",
            width,
        )
    )
    print()
    table = demo_table_rows(rows[0::2], runs, run_traces)
    print(format_table(table, DEMO_COLUMNS, width=width, cut_first=["answer"]))
    print(_wrap(DEMO_LEGEND, width))
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
        _wrap(
            f"Your endpoint: {args.prog} models --base-url URL lists its model names; "
            f"{args.prog} probe|doctor --base-url URL --model MODEL [--api-key-env VAR] "
            "checks one.",
            width,
        )
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
    written = _text_calls(trace)
    if trace.outcome == "NoToolCallingError" and written is not None:
        print(
            f"tool calling: no (NoToolCallingError: the reply wrote a tool call as text "
            f"({written}), not as a tool_calls entry)"
        )
        print(
            f"{args.prog} doctor (same --base-url and --model) names the server-side fix; "
            f"{args.prog} run --recover-text-tool-calls runs calls written as text"
        )
        return 1
    if trace.outcome in ("NoToolCallingError", "OutputLimitError"):
        print(printable(f"tool calling: no ({trace.error})"))
        return 1
    raise CommandError(trace.error, 1)


def _text_calls(trace: Trace) -> str | None:
    """The tool-call dialects the reply wrote as text, None when it wrote no tool call."""
    if not trace.iterations or trace.iterations[-1].ending != "text_tool_calls":
        return None
    leaks = trace.iterations[-1].leaks
    names = [d for d in leaks if d in TOOL_CALL_DIALECTS or d == "harmony"]
    return ",".join(names) or "a tool-call markup"


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
        if failure is None and trace.outcome != "ok":
            failure = CommandError(_not_ok(trace, args.prog), 1)
        redact = client.redact
    # A trace with no reply in it (refused connection, 404) says nothing the error does not.
    if failure is None or _replied(trace):
        print(trace.to_json(indent=2) if args.json else format_trace(trace, redact=redact))
    if failure is not None:
        raise failure
    return 0


def _not_ok(trace: Trace, prog: str) -> str:
    """The line a run that returned without an answer exits 1 with."""
    what = _ENDINGS.get(trace.outcome, "the run ended without an answer")
    line = f"outcome {trace.outcome}: {what}"
    if trace.outcome == "text_tool_calls":
        line += (
            f"; --recover-text-tool-calls runs such calls, and {prog} doctor names the "
            "server-side fix"
        )
    return line


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
            raise CommandError(
                f"{where}: base_url: {_url_problem(table['base_url'], exc)}"
            ) from None
        endpoints.append(Endpoint(table["name"], table["base_url"], table["model"], key))
    return endpoints


# The files compare writes: option, attribute of args.
_OUTPUTS = (("--csv", "csv"), ("--html", "html"), ("--traces", "traces"))


def _check_outputs(args: Namespace) -> None:
    """Each output path names a file that can be written, and no two name the same one."""
    from .report import check_path

    seen: dict[Path, str] = {}
    for option, attr in _OUTPUTS:
        path = getattr(args, attr)
        if not path:
            continue
        try:
            target = check_path(path, write=True).resolve()
        except ValueError as exc:
            raise CommandError(f"{option}: {exc}") from None
        if target in seen:
            raise CommandError(f"{option}: {path} is also the {seen[target]} file")
        seen[target] = option


def _write(option: str, what: str, path: str, save: Callable[[], None]) -> bool:
    """Write one output file; a failure is one line on stderr, and False."""
    try:
        save()
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if str(Path(path)) not in reason:
            reason = f"{path}: {reason}"
        print(f"rig-nb: {option}: {reason}", file=sys.stderr)
        return False
    print(f"wrote {what} to {path}", file=sys.stderr)
    return True


def _endpoint_hints(args: Namespace, endpoints: list[Endpoint], frame: Any) -> None:
    """For an endpoint no run got through to, say once what to change, as probe would."""
    from .client import Client

    per = len(frame) // len(endpoints)
    traces = frame.attrs["traces"]
    for n, endpoint in enumerate(endpoints):
        mine = range(n * per, (n + 1) * per)
        if (frame["outcome"][n * per : (n + 1) * per] == "ok").any():
            continue
        errors = [traces[i].exception for i in mine if i in traces]
        first = next((e for e in errors if isinstance(e, BackendError)), None)
        if first is None or not (first.kind in _NO_EXCHANGE or first.status_code == 404):
            continue
        where = Namespace(
            base_url=endpoint.base_url,
            timeout=args.timeout,
            deadline=args.deadline,
            api_key_env=None,
            prog=args.prog,
        )
        if first.status_code == 404:
            # A wrong path or a misspelled model: the model list tells which (one request).
            with Client(
                endpoint.base_url, endpoint.api_key, timeout=args.timeout, deadline=args.deadline
            ) as client:
                hint = explain(first, where, client)
        else:
            hint = explain(first, where, None)
        print(f"rig-nb: endpoint {endpoint.name!r}: {hint}", file=sys.stderr)


def cmd_compare(args: Namespace) -> int:
    endpoints = read_endpoints(args.file, args.api_key_env)
    _check_outputs(args)
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise CommandError(f"compare needs pandas: {_install('notebook')}", 1) from None
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
    # The results first: a file that cannot be written must not hide them.
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        width = terminal_width()
        rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
        print("summary: runs ok / runs, and the median latency, per scenario and endpoint")
        print(printable(summarize(frame).to_string(line_width=width)))
        print()
        table = compare_table_rows(rows)
        print(format_table(table, COMPARE_COLUMNS, width=width, cut_first=["error"]))
    sys.stdout.flush()
    written = True  # each file is tried, whatever became of the one before
    if args.csv:
        rows_n = plural(len(frame), "row")
        written &= _write("--csv", rows_n, args.csv, lambda: frame.to_csv(args.csv, index=False))
    if args.html:
        written &= _write("--html", "the report", args.html, lambda: save_html(frame, args.html))
    if args.traces:
        traces_n = plural(len(traces), "trace")
        written &= _write(
            "--traces", traces_n, args.traces, lambda: save_traces(traces, args.traces)
        )
    _endpoint_hints(args, endpoints, frame)
    failed = int((frame["outcome"] != "ok").sum())
    if failed:
        print(f"rig-nb: {failed} of {plural(len(frame), 'run')} not ok", file=sys.stderr)
    return 1 if failed or not written else 0


def cmd_doctor(args: Namespace) -> int:
    from .capabilities import NOT_OPENAI_COMPATIBLE, describe_report, endpoint_report

    with _client(args) as client:
        try:
            client.list_models()  # one quick request: an endpoint nobody can reach fails here
        except BackendError as exc:
            if exc.kind in _NO_EXCHANGE:
                raise explain(exc, args, client) from None
        report = endpoint_report(client, args.model, stream=not args.no_stream)
        foreign = NOT_OPENAI_COMPATIBLE in {c.name for c in report.checks}
        trace = report.check(NOT_OPENAI_COMPATIBLE if foreign else "tool_choice_auto").trace
        error = trace.exception if trace is not None else None
        if isinstance(error, BackendError) and (
            error.kind in _NO_EXCHANGE or error.status_code == 404
        ):
            raise explain(error, args, client)
    print(
        json.dumps(report.to_dict(), indent=2) if args.json else printable(describe_report(report))
    )
    return 1 if foreign else 0


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
