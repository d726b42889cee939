"""The arguments of every command (`build_parser`), and the value types that check them.

Parsing imports nothing heavy: `--help` and usage errors do not wait for the openai SDK.
A usage error is one line on stderr and exit 2 (see `rig_nb.cli`); a key is never an
argument, only the name of the environment variable that holds it.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, NoReturn

from .. import __version__
from ..clients import CLIENTS
from ..wire import TOOL_CHOICES, WIRES
from .budget import max_requests_arg
from .otlp import otlp_arg
from .text import invoked_as

__all__ = ["build_parser"]


def _model_names(prog: str) -> str:
    return (
        "Model names are the ids the endpoint lists at /v1/models "
        f"({prog} models --base-url URL lists them)."
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _levels(text: str) -> tuple[int, ...]:
    """`--load 1,4,16`: load levels, each a positive integer."""
    parts = [part.strip() for part in text.split(",")]
    try:
        values = tuple(int(part) for part in parts)
    except ValueError:
        values = ()
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected positive integers separated by commas (1,4,16), got {text!r}"
        )
    return values


def _checks(text: str) -> tuple[str, ...]:
    """`--checks a,b`: doctor check names, each one of rig_nb.capabilities.CHECKS."""
    from ..capabilities import CHECKS

    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [n for n in names if n not in CHECKS]
    if not names or unknown:
        said = f"unknown check {', '.join(unknown)}" if unknown else "no check named"
        raise argparse.ArgumentTypeError(f"{said}: the checks are {', '.join(CHECKS)}")
    return names


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value


def _thinking(text: str) -> bool | str | int:
    """--thinking: on | off | low | medium | high | a token budget."""
    from ..wire.thinking import THINKING_EFFORTS

    word = text.strip().lower()
    if word in ("on", "true"):
        return True
    if word in ("off", "false"):
        return False
    if word in THINKING_EFFORTS:
        return word
    if word.isdigit():
        return int(word)
    raise argparse.ArgumentTypeError(
        f"expected on, off, {', '.join(THINKING_EFFORTS)} or a token budget (an int >= 0), "
        f"got {text!r}"
    )


def _reasoning_args(p: argparse.ArgumentParser) -> None:
    from ..wire.thinking import REPLAY_MODES

    p.add_argument(
        "--thinking",
        type=_thinking,
        default=None,
        metavar="on|off|low|medium|high|N",
        help="the thinking switch, sent as the fields the server kind reads "
        "(reasoning_effort, chat_template_kwargs.enable_thinking, a budget of N tokens); "
        "a field also set in --extra-body wins (default: send none)",
    )
    p.add_argument(
        "--reasoning-replay",
        choices=REPLAY_MODES,
        default="tool_turns",
        help="send each assistant turn's reasoning back: none, on tool-call turns (DeepSeek "
        "and Kimi refuse tool turns without it), or all (default: tool_turns)",
    )


def _extra_body(text: str) -> dict[str, Any]:
    from .. import strict_json
    from ..wire import check_extra_body

    try:
        value = strict_json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "expected a JSON object, got text that is not JSON"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got a {type(value).__name__}")
    try:
        return check_extra_body(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _HelpFormatter(argparse.HelpFormatter):
    """Each option's help ends with its default, when it has one worth naming."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "%(default)" in text
            or "(default:" in text
            or not action.option_strings
            or action.required
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """No abbreviations ("--api-key" must not mean "--api-key-env"); stray values not echoed;
    a usage error is one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _HelpFormatter)
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
        # One line that says what to change; the usage block is one --help away.
        self.exit(2, f"rig-nb: {message} (see {self.prog} --help)\n")


def _timing_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=120.0,
        metavar="SECONDS",
        help="give up when no data arrives for this long (connect, and each read)",
    )
    p.add_argument(
        "--deadline",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="give up on one request after this long in all, retries and streaming included",
    )


def _key_arg(p: argparse.ArgumentParser, what: str = "") -> None:
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="read the API key from this environment variable (never pass a key in argv); "
        f"without it no key is sent{what}",
    )


def _api_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api",
        choices=tuple(WIRES),
        default="chat",
        help="the wire: "
        + ", ".join(f"{w.name} ({w.route})" for w in WIRES.values())
        + "; chat is the default",
    )


def _endpoint_args(p: argparse.ArgumentParser, prog: str, *, model: bool = True) -> None:
    p.add_argument(
        "--base-url",
        required=True,
        metavar="URL",
        help="the endpoint's base URL, ending at /v1: e.g. http://localhost:8000/v1 "
        "(a bare http://host:port gets /v1 added)",
    )
    if model:
        p.add_argument("--model", required=True, help=f"the model name, as listed by {prog} models")
        _api_arg(p)
    _key_arg(p)
    _timing_args(p)


def _sub(sub: Any, name: str, help: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=description)
    parser.set_defaults(command=name)
    return parser


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The parser; `prog` is how help and hints name the command line (by default as the
    user started it: "rig-nb" or "python -m rig_nb")."""
    prog = invoked_as(sys.argv[0] if sys.argv else "") if prog is None else prog
    model_names = _model_names(prog)
    parser = _Parser(
        prog=prog,
        description="Probe, run and compare OpenAI-compatible endpoints serving reasoning "
        "models. " + model_names + f" With no endpoint at hand, `{prog} demo` runs on an "
        "embedded one.",
    )
    parser.add_argument("--version", action="version", version=f"rig_nb {__version__}")
    parser.set_defaults(prog=prog)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = _sub(
        sub,
        "demo",
        "run every demo persona on the embedded endpoint and print the table",
        "Start the embedded demo endpoint (its models are personas that reproduce the failure "
        "modes of reasoning models), probe every persona, run a small tool loop on each, and "
        "print the table and one leaky run's trace. Needs no model server.",
    )
    p.add_argument(
        "--max-tokens", type=_positive_int, default=512, help="token budget of each reply"
    )
    p.add_argument("--stream", action="store_true", help="stream every reply")
    _api_arg(p)

    p = _sub(
        sub,
        "probe",
        "check that an endpoint really returns tool calls",
        "Send one trivial single-tool request. Exit 0: a tool call came back; 1: it did not "
        "(or the endpoint failed). " + model_names,
    )
    _endpoint_args(p, prog)
    p.add_argument(
        "--tool-choice",
        choices=list(TOOL_CHOICES),
        default="auto",
        help="the tool_choice sent (unset: the field is left out)",
    )
    p.add_argument("--stream", action="store_true", help="stream the reply")

    p = _sub(
        sub,
        "run",
        "run the tool loop once and print the trace",
        "Run the agent loop on one prompt and print its per-iteration trace. Exit 0: the run "
        "ended in an answer (outcome ok); 1: it did not; 2: usage error; 3: the --otlp export "
        "failed. " + model_names,
    )
    _endpoint_args(p, prog)
    p.add_argument("--prompt", required=True, help="the user message")
    p.add_argument("--system", default="", help="the system message (default: none)")
    p.add_argument(
        "--max-tokens", type=_positive_int, default=1024, help="token budget of each reply"
    )
    p.add_argument(
        "--max-iterations", type=_positive_int, default=8, help="rounds at most (held to 32)"
    )
    p.add_argument(
        "--demo-tools", action="store_true", help="offer the demo tools get_weather and add"
    )
    p.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="'CMD ARGS'",
        help="also offer the tools of the MCP server this command starts over stdio (split "
        "as a shell would, never run by one; may be given more than once). Needs the mcp extra",
    )
    p.add_argument("--stream", action="store_true", help="stream every reply")
    p.add_argument(
        "--recover-text-tool-calls",
        action="store_true",
        help="run tool calls the model wrote as text (<tool_call>, [TOOL_CALLS], ...)",
    )
    p.add_argument(
        "--extra-body",
        type=_extra_body,
        default={},
        metavar="JSON",
        help="a JSON object of extra request fields, e.g. "
        '\'{"chat_template_kwargs": {"enable_thinking": false}}\' or \'{"grammar": "..."}\'; '
        "it may not set what the loop owns (model, messages, tools, stream, ...) "
        "(default: none)",
    )
    _reasoning_args(p)
    p.add_argument(
        "--client",
        choices=list(CLIENTS),
        default=None,
        metavar="NAME",
        help="shape every request as this agent client sends it ("
        + ", ".join(f"{c.name}: --api {c.api}" for c in CLIENTS.values())
        + ") (default: rig_nb's own shape)",
    )
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    otlp_arg(p)

    p = _sub(
        sub,
        "compare",
        "run the comparison scenarios on endpoints listed in a TOML file",
        "Each [[endpoint]] table holds name, base_url, model and optionally api_key_env (the "
        "environment variable holding its key). " + model_names + " Prints the summary "
        "matrix, then one row per run. Exit 0: every run ok; 1: any run not ok; 2: usage "
        "error (a run of more requests than --max-requests allows included); 3: the --otlp "
        "export failed. Needs pandas.",
    )
    p.add_argument("file", metavar="ENDPOINTS.toml", help="the endpoints to compare")
    p.add_argument(
        "--repeats", type=_positive_int, default=1, help="runs of each scenario per endpoint"
    )
    p.add_argument(
        "--concurrency", type=_positive_int, default=4, help="runs in flight per endpoint"
    )
    p.add_argument(
        "--load",
        type=_levels,
        default=(1,),
        metavar="L1,L2,...",
        help="load levels (1,4,16): each run at every level L as L copies at once, level "
        "after level, alone on its endpoint; the summary is then per endpoint, scenario and load",
    )
    p.add_argument("--stream", action="store_true", help="stream every reply")
    p.add_argument(
        "--evaluation",
        action="store_true",
        help="also run the structured output (response_format) and agentic scenarios",
    )
    max_requests_arg(p)
    _reasoning_args(p)
    _key_arg(p, " to an endpoint whose table names no api_key_env")
    _timing_args(p)
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--traces", metavar="FILE", help="also write every trace as JSON Lines")
    p.add_argument("--json", action="store_true", help="print the rows as JSON records")
    otlp_arg(p)

    p = _sub(
        sub,
        "bfcl",
        "run BFCL v4's single-turn categories on endpoints, accuracy per category",
        "Send each Berkeley Function Calling Leaderboard case once (its messages and tools, "
        "tool_choice auto; nothing run) and judge the reply's calls with BFCL's AST check. "
        "Prints cases ok per category and endpoint, then the misses by cause. The data "
        "comes from --data-dir or an installed bfcl-eval (pip install --no-deps "
        "bfcl-eval==2026.3.23). Exit 0: every case ok; 1: any not ok; 2: usage error (more "
        "requests than --max-requests allows included). "
        "Needs pandas. " + model_names,
    )
    p.add_argument(
        "file", nargs="?", metavar="ENDPOINTS.toml", help="the endpoints, as compare takes them"
    )
    p.add_argument("--endpoints", metavar="FILE", help="the endpoints file (as the positional)")
    p.add_argument("--base-url", metavar="URL", help="one endpoint's base URL, instead of a file")
    p.add_argument("--model", help=f"that endpoint's model, as listed by {prog} models")
    p.add_argument("--name", help="that endpoint's name in the table (default: the model)")
    _api_arg(p)
    p.add_argument(
        "--categories",
        metavar="A,B,...",
        help="BFCL categories, comma-separated (default: the ten single-turn ones)",
    )
    p.add_argument(
        "--limit", type=_positive_int, default=None, help="the first N cases of each category"
    )
    p.add_argument("--data-dir", metavar="DIR", help="a folder of BFCL_v4_*.json files")
    p.add_argument(
        "--max-tokens", type=_positive_int, default=1024, help="token budget of each reply"
    )
    p.add_argument(
        "--concurrency", type=_positive_int, default=4, help="requests in flight per endpoint"
    )
    max_requests_arg(p)
    p.add_argument("--stream", action="store_true", help="stream every reply")
    _key_arg(p, " (with a file: to an endpoint whose table names no api_key_env)")
    _timing_args(p)
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--traces", metavar="FILE", help="also write every trace as JSON Lines")
    p.add_argument("--json", action="store_true", help="print the rows as JSON records")

    p = _sub(
        sub,
        "doctor",
        "say what an endpoint really does, and what to change on the server",
        "Run a bounded set of probes (tool_choice matrix, where reasoning goes, leaks, text "
        "tool calls, streamed vs not, usage) and print each verdict with its evidence and the "
        "server-side fix when one is known. Exit 0 when no check's verdict is bad news, 1 "
        "when one is (or the address does not serve an OpenAI-compatible API), 2 on a usage "
        "error. " + model_names,
    )
    _endpoint_args(p, prog)
    p.add_argument(
        "--no-stream", action="store_true", help="skip the streamed requests (stream parity)"
    )
    p.add_argument(
        "--checks",
        type=_checks,
        metavar="A,B",
        help="only these checks (and the requests they need); default: every check",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = _sub(
        sub,
        "models",
        "list the model names an endpoint serves (/v1/models)",
        "Print the ids (and owned_by) the endpoint lists at /v1/models: the names --model takes.",
    )
    _endpoint_args(p, prog, model=False)

    p = _sub(
        sub,
        "serve-demo",
        "keep the demo endpoint up for notebooks and other clients",
        "Serve the demo endpoint on 127.0.0.1 until Ctrl-C, SIGINT or SIGTERM "
        "(also when run in the background).",
    )
    p.add_argument("--port", type=_port, default=0, help="port to listen on, 0 for a free one")
    return parser
