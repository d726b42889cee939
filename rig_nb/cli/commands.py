"""The commands behind `python -m rig_nb`; `cli.parser` parses the arguments, `cli.main` calls them.

The client, compare, capabilities, demo and report modules are imported inside
each command, never at import time: `--help` and usage errors must not wait for
the openai SDK. A failure a user can fix is a `CommandError`: one line that
says what to change, with the host and port the user typed and never the key.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import textwrap
from argparse import Namespace
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from ..clients import client_for
from ..dialects import TOOL_CALL_DIALECTS
from ..errors import BackendError, RigError
from ..wire import TOOL_CHOICES
from .hints import CommandError, explain, install, url_problem
from .text import (
    demo_table_rows,
    demo_table_text,
    fit_report,
    format_table,
    format_trace,
    plural,
    printable,
    terminal_width,
)

if TYPE_CHECKING:
    from ..client import Client
    from ..trace import Trace

__all__ = [
    "NO_EXCHANGE",
    "api_key",
    "cmd_demo",
    "cmd_doctor",
    "cmd_models",
    "cmd_probe",
    "cmd_run",
]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The demo's leaky run shown iteration by iteration after the table.
_LEAKY = "qwen3-no-parser"
# A failure of these kinds means no request reached a model: nothing to report on.
NO_EXCHANGE = frozenset({"connect", "tls", "protocol", "timeout", "deadline"})
# What a run that ended without an answer means, for the line `run` exits 1 with.
_ENDINGS = {
    "text_tool_calls": "the model wrote its tool calls as text",
    "reasoning_only": "the reply held reasoning but no answer",
    "tool_calls_in_reasoning": "the model wrote its tool calls inside its reasoning",
    "empty": "the reply was empty",
    "leaked": "the answer still holds reasoning or call markup the server's parsers left in it",
    "content_filter": "the server's content filter stopped the reply",
    "context_truncated": "the server dropped part of the conversation (prompt tokens fell "
    "below an earlier turn's; raise its context window)",
}


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
    from ..client import Client

    key = api_key(args.api_key_env)
    try:
        return Client(
            args.base_url,
            key,
            timeout=args.timeout,
            deadline=args.deadline,
            api=getattr(args, "api", "chat"),
        )
    except ValueError as exc:
        raise CommandError(f"--base-url: {url_problem(args.base_url, exc)}") from None


def _wrap(text: str, width: int | None) -> str:
    return textwrap.fill(text, width) if width else text


# --- commands -------------------------------------------------------------------------------


def cmd_demo(args: Namespace) -> int:
    from ..compare import Endpoint, Scenario, compare_rows
    from ..demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools

    tools = demo_tools()
    scenarios = [
        Scenario("probe", kind="probe"),
        # Judged as compare's `tool round trip`: an answer made without the tools is not ok.
        Scenario(
            "demo",
            prompt=DEMO_PROMPT,
            system=DEMO_SYSTEM,
            tools=tools,
            max_tokens=args.max_tokens,
            require_tool_call=True,
        ),
    ]
    width = terminal_width()
    with DemoServer() as server:
        where, models = server.base_url, server.models
        endpoints = [Endpoint(name, where, name, api=args.api) for name in models]
        rows, traces = compare_rows(endpoints, scenarios=scenarios, stream=args.stream)
    runs, run_traces = rows[1::2], traces[1::2]
    how = f"{'streamed, ' if args.stream else ''}over {args.api}, "
    print(
        _wrap(
            f"rig_nb demo: {plural(len(models), 'persona')} on the embedded endpoint {where}", width
        )
    )
    print(_wrap(f"prompt: {DEMO_PROMPT}", width))
    print(
        _wrap(
            f"tools: {', '.join(t.name for t in tools)}; max_tokens {args.max_tokens}; {how}"
            f"each persona is probed once, then runs the tool loop (the {args.api} wire).",
            width,
        )
    )
    print()
    table = demo_table_rows(rows[0::2], runs, run_traces)
    print(demo_table_text(table, width))
    leaky = next(
        (n for n, r in enumerate(runs) if r["model"] == _LEAKY),
        next((n for n, r in enumerate(runs) if r["reasoning_shapes"] not in ("", "none")), None),
    )
    trace = run_traces[leaky] if leaky is not None else None
    if trace is not None:
        print()
        print(
            _wrap(
                f"Per-iteration trace of {trace.model}: reasoning leaks into content, stripped.",
                width,
            )
        )
        print(format_trace(trace, limit=400, width=width))
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
    width = terminal_width()
    if trace.outcome == "ok":
        how = ", streamed" if args.stream else ""
        said = f"tool calling: yes ({args.model} at {where}, tool_choice {args.tool_choice}{how})"
        print(_wrap(printable(said), width))
        return 0
    written = _text_calls(trace)
    if trace.outcome == "NoToolCallingError" and written is not None:
        said = (
            f"tool calling: no (NoToolCallingError: the reply wrote a tool call as text "
            f"({written}), not as a tool_calls entry)"
        )
        print(_wrap(said, width))
        print(
            _wrap(
                f"{args.prog} doctor (same --base-url and --model) names the server-side fix; "
                f"{args.prog} run --recover-text-tool-calls runs calls written as text",
                width,
            )
        )
        return 1
    if trace.outcome in ("NoToolCallingError", "OutputLimitError"):
        print(_wrap(printable(f"tool calling: no ({trace.error})"), width))
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


def _mcp_tools(commands: list[str], stack: ExitStack, taken: set[str]) -> tuple[Any, ...]:
    """The tools of each `--mcp` server, started in `stack`; one line and exit 1 if one fails."""
    argvs = []
    for command in commands:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise CommandError(f"--mcp: cannot split {command!r}: {exc}") from None
        if not argv:
            raise CommandError("--mcp: takes a command, e.g. --mcp 'node server.js'")
        argvs.append(argv)
    try:
        from ..mcp import McpTools
    except ImportError:  # pragma: no cover (rig_nb.mcp imports no SDK at import time)
        raise CommandError(f"--mcp needs the mcp package: {install('mcp')}") from None
    tools: list[Any] = []
    for argv in argvs:
        try:
            server = stack.enter_context(McpTools(argv))
        except ImportError:
            raise CommandError(f"--mcp needs the mcp package: {install('mcp')}") from None
        except RigError as exc:
            raise CommandError(f"--mcp: {exc.message}", 1) from None
        for tool in server.tools:
            if tool.name in taken:
                raise CommandError(f"--mcp: two sources offer a tool named {tool.name!r}")
            taken.add(tool.name)
            tools.append(tool)
    return tuple(tools)


def cmd_run(args: Namespace) -> int:
    with ExitStack() as stack:
        return _run(args, stack)


def _run(args: Namespace, stack: ExitStack) -> int:
    from ..loop import RunRequest
    from .otlp import EXPORT_FAILED, check_otlp, send_otlp

    check_otlp(getattr(args, "otlp", None))

    tools: tuple[Any, ...] = ()
    if args.demo_tools:
        from ..demo import demo_tools

        tools = demo_tools()
    if getattr(args, "mcp", None):
        tools += _mcp_tools(args.mcp, stack, {t.name for t in tools})
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
        thinking=args.thinking,
        reasoning_replay=args.reasoning_replay,
        client=args.client,
    )
    try:
        client_for(args.client, getattr(args, "api", "chat"))
    except ValueError as exc:
        raise CommandError(f"--client: {exc}", 2) from None
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
        if args.json:
            print(trace.to_json(indent=2))
        else:
            print(format_trace(trace, redact=redact, width=terminal_width()))
    if getattr(args, "otlp", None):
        sys.stdout.flush()
        if not send_otlp([trace], args.otlp):
            # The run's own failure is still said; the exit status is the export's.
            if failure is not None:
                raise CommandError(str(failure), EXPORT_FAILED)
            return EXPORT_FAILED
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


def cmd_doctor(args: Namespace) -> int:
    from ..capabilities import NOT_OPENAI_COMPATIBLE, describe_report, endpoint_report

    with _client(args) as client:
        try:
            client.list_models()  # one quick request: an endpoint nobody can reach fails here
        except BackendError as exc:
            if exc.kind in NO_EXCHANGE:
                raise explain(exc, args, client) from None
        report = endpoint_report(client, args.model, stream=not args.no_stream, checks=args.checks)
        foreign = NOT_OPENAI_COMPATIBLE in {c.name for c in report.checks}
        # The first check that sent a request says whether anything answered at all.
        trace = next((c.trace for c in report.checks if c.trace is not None), None)
        error = trace.exception if trace is not None else None
        if isinstance(error, BackendError) and (
            error.kind in NO_EXCHANGE or error.status_code == 404
        ):
            raise explain(error, args, client)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(fit_report(printable(describe_report(report)), terminal_width()))
    return 1 if foreign or not report.ok else 0


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
    # An id is what --model takes: never cut; owned_by is cut, or left out when it has
    # no room (only an id longer than the terminal overflows it).
    width = terminal_width()
    whole = max(len(r["id"]) for r in rows)
    columns = ["id", "owned_by"]
    if width is not None and whole + 2 + 5 > width:
        columns = ["id"]
    print(format_table(rows, columns, width=width, cut_first=["owned_by"], floors={"id": whole}))
    return 0
