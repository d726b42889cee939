"""Command line: `python -m rig_nb` (or `rig-nb`) demo | probe | run | compare | serve-demo.

A key is read only from the environment variable named with --api-key-env
(or `api_key_env` in a compare file), never from argv. A failure is one line
on stderr and a non-zero exit, never a traceback: 2 for input the command
cannot use (a bad URL or TOML file, an unset variable), 1 when the endpoint or
the run fails.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from . import __version__
from ._report import COLUMNS, demo_rows, format_table, format_trace, printable
from .client import Client
from .errors import BackendError, NoToolCallingError, OutputLimitError, RigError
from .loop import RunRequest
from .tool import Tool

__all__ = ["build_parser", "main"]

_TOOL_CHOICES: dict[str, str | None] = {
    "auto": "auto",
    "required": "required",
    "none": "none",
    "unset": None,
}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The demo's leaky run shown iteration by iteration after the table.
_LEAKY = "qwen3-no-parser"


class CommandError(Exception):
    """A failure reported as one line on stderr, with the exit status to end with."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _api_key(var: str | None, where: str = "--api-key-env") -> str:
    if var is None:
        return ""
    if not _ENV_NAME.fullmatch(var):
        # Not echoed: a key pasted here by mistake must not reach the terminal or a log.
        raise CommandError(f"{where}: takes the name of an environment variable, not a key")
    value = os.environ.get(var, "")
    if not value:
        raise CommandError(f"{where}: environment variable {var!r} is not set or empty")
    return value


def _client(args: argparse.Namespace) -> Client:
    key = _api_key(args.api_key_env)
    try:
        return Client(args.base_url, key, timeout=args.timeout)
    except ValueError as exc:
        raise CommandError(f"--base-url: {exc}") from None


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools

    tools = demo_tools()
    request = RunRequest("", args.max_tokens, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=tools)
    with DemoServer() as server, Client(server.base_url) as client:
        rows, traces = demo_rows(client, server.models, request)
        where = server.base_url
    print(f"rig_nb demo: {len(rows)} personas on the embedded endpoint {where}")
    print(f"prompt: {DEMO_PROMPT}")
    print(
        f"tools: {', '.join(t.name for t in tools)}; max_tokens {args.max_tokens}. "
        "Each persona is probed once, then runs the tool loop."
    )
    print()
    print(format_table(rows, COLUMNS))
    print()
    print(f"Per-iteration trace of {_LEAKY}: reasoning leaks into content, the loop strips it.")
    print(format_trace(traces[_LEAKY], limit=400))
    print()
    print("Your endpoint: python -m rig_nb probe --base-url URL --model MODEL [--api-key-env VAR]")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    with _client(args) as client:
        try:
            client.probe_tool_calling(args.model, tool_choice=_TOOL_CHOICES[args.tool_choice])
        except (NoToolCallingError, OutputLimitError) as exc:
            print(f"tool calling: no ({type(exc).__name__}: {exc.message})")
            return 1
        where = client.endpoint
    print(f"tool calling: yes ({args.model} at {where}, tool_choice {args.tool_choice})")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    tools: tuple[Tool, ...] = ()
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
    )
    error: RigError | None = None
    with _client(args) as client:
        try:
            trace = client.run(request).trace
        except RigError as exc:
            # A trace with no reply in it (refused connection, 404) says nothing the error does not.
            if exc.trace is None or not any(it.finish_reason for it in exc.trace.iterations):
                raise
            trace, error = exc.trace, exc
    print(trace.to_json(indent=2) if args.json else format_trace(trace))
    if error is not None:
        raise error
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


def read_endpoints(path: str) -> list[Any]:
    """The `[[endpoint]]` tables of a compare file as `rig_nb.compare.Endpoint`s."""
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
        var = table.get("api_key_env")
        if var is not None and not isinstance(var, str):
            raise CommandError(f"{where}: 'api_key_env' must be a string")
        key = _api_key(var, f"{where}: api_key_env")
        try:
            Client(table["base_url"]).close()
        except ValueError as exc:
            raise CommandError(f"{where}: base_url: {exc}") from None
        endpoints.append(Endpoint(table["name"], table["base_url"], table["model"], key))
    return endpoints


def cmd_compare(args: argparse.Namespace) -> int:
    endpoints = read_endpoints(args.file)
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise CommandError("compare needs pandas: pip install 'rig_nb[notebook]'", 1) from None
    from .compare import compare

    frame = compare(endpoints)
    if args.csv:
        try:
            frame.to_csv(args.csv, index=False)
        except OSError as exc:
            raise CommandError(f"--csv {args.csv}: {exc.strerror or exc}", 1) from None
        print(f"wrote {len(frame)} rows to {args.csv}", file=sys.stderr)
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        print(printable(frame.to_string(index=False)))
    return 0


class _Terminated(Exception):
    pass


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated


def cmd_serve_demo(args: argparse.Namespace) -> int:
    from .demo import DemoServer

    try:
        server = DemoServer(port=args.port)
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", 1) from None
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main else None
    try:
        with server:
            print(f"demo endpoint: {server.base_url}", flush=True)
            print(f"models: {', '.join(server.models)}", flush=True)
            print("serving until Ctrl-C", flush=True)
            try:
                threading.Event().wait()
            except (KeyboardInterrupt, _Terminated):
                pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    print("demo endpoint stopped", flush=True)
    return 0


class _Parser(argparse.ArgumentParser):
    """No abbreviations ("--api-key" must not mean "--api-key-env"); stray values not echoed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            # A key typed into argv by mistake must not be copied into a terminal or a log.
            words = message[len(prefix) :].split()
            options = [w.partition("=")[0] for w in words if w.startswith("-")]
            hidden = len(words) - len(options) + sum("=" in w for w in words if w.startswith("-"))
            message = (
                prefix
                + " ".join(options)
                + (f" (and {hidden} values, not shown)" if hidden else "")
            )
        super().error(message)


def _endpoint_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", required=True, help="e.g. http://localhost:8000/v1")
    p.add_argument("--model", required=True)
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="read the API key from this environment variable (never pass a key in argv)",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rig-nb",
        description="Probe, run and compare OpenAI-compatible endpoints serving reasoning models.",
    )
    parser.add_argument("--version", action="version", version=f"rig_nb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "demo",
        help="run every demo persona on the embedded endpoint and print the table",
        description="Start the embedded demo endpoint, probe every persona, run a small "
        "tool loop on each, and print the results and one leaky run's trace.",
    )
    p.add_argument("--max-tokens", type=_positive_int, default=512)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "probe",
        help="check that an endpoint really returns tool calls",
        description="Send one trivial single-tool request. Exit 0: a tool call came back; "
        "1: it did not (or the endpoint failed).",
    )
    _endpoint_args(p)
    p.add_argument("--tool-choice", choices=list(_TOOL_CHOICES), default="auto")
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser(
        "run",
        help="run the tool loop once and print the trace",
        description="Run the agent loop on one prompt and print its per-iteration trace.",
    )
    _endpoint_args(p)
    p.add_argument("--prompt", required=True)
    p.add_argument("--system", default="")
    p.add_argument("--max-tokens", type=_positive_int, default=1024)
    p.add_argument("--max-iterations", type=_positive_int, default=8)
    p.add_argument(
        "--demo-tools", action="store_true", help="offer the demo tools get_weather and add"
    )
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "compare",
        help="run the comparison scenarios on endpoints listed in a TOML file",
        description="Each [[endpoint]] table holds name, base_url, model and optionally "
        "api_key_env (the environment variable holding its key). Needs pandas.",
    )
    p.add_argument("file", metavar="ENDPOINTS.toml")
    p.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    p.add_argument("--json", action="store_true", help="print the table as JSON records")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "serve-demo",
        help="keep the demo endpoint up for notebooks and other clients",
        description="Serve the demo endpoint on 127.0.0.1 until Ctrl-C or SIGTERM.",
    )
    p.add_argument("--port", type=int, default=0, help="default: a free port")
    p.set_defaults(func=cmd_serve_demo)
    return parser


def _fail(message: str) -> None:
    print(f"rig-nb: {' '.join(printable(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except CommandError as exc:
        _fail(str(exc))
        return exc.status
    except BackendError as exc:
        _fail(exc.message)
        return 1
    except RigError as exc:
        _fail(f"{type(exc).__name__}: {exc.message}")
        return 1
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and let exit not flush into the pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        _fail(f"unexpected {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
