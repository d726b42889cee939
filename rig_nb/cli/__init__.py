"""Command line: `python -m rig_nb` (or `rig-nb`) demo | probe | run | compare | bfcl | doctor
| models | serve-demo.

A key is read only from the environment variable named with --api-key-env
(or `api_key_env` in a compare file), never from argv. A failure is one line
on stderr and a non-zero exit, never a traceback: 2 for input the command
cannot use (a bad option, URL or TOML file, an unset variable), 1 when the
endpoint or the run fails (a run without an answer, a compare row not ok), 3 when
the results were printed but the `--otlp` export failed. Every
failure line starts "rig-nb:"; help and hints name commands the way the user
started them ("rig-nb" or "python -m rig_nb"). Parsing imports nothing heavy:
`--help` and usage errors do not wait for the openai SDK; the commands import
the client when they run.

    parser.py          the arguments of every command
    commands.py        demo, probe, run, doctor, models
    compare_command.py compare: endpoint files, tables, output files
    bfcl_command.py    bfcl: BFCL's categories through compare, a table per category
    serve_demo.py      serve-demo and its signal handling
    hints.py           CommandError and the hints that say what to change
    budget.py          --max-requests: the model requests compare and bfcl would send
    otlp.py            --otlp: opentelemetry-proto checked first, the export, exit 3
    text.py            tables fitted to the terminal, a trace and a doctor report as text
    tables.py          the load summary, compare's rows and matrices fitted as the demo's
"""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from collections.abc import Callable, Sequence

from ..errors import RigError
from .bfcl_command import cmd_bfcl
from .commands import cmd_demo, cmd_doctor, cmd_models, cmd_probe, cmd_run
from .compare_command import cmd_compare
from .hints import CommandError
from .parser import build_parser
from .serve_demo import cmd_serve_demo
from .text import printable

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: dict[str, Callable[[Namespace], int]] = {
    "demo": cmd_demo,
    "probe": cmd_probe,
    "run": cmd_run,
    "compare": cmd_compare,
    "bfcl": cmd_bfcl,
    "doctor": cmd_doctor,
    "models": cmd_models,
    "serve-demo": cmd_serve_demo,
}


def _fail(message: str) -> None:
    print(f"rig-nb: {' '.join(printable(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return COMMANDS[args.command](args)
    except CommandError as exc:
        _fail(str(exc))
        return exc.status
    except RigError as exc:
        _fail(
            exc.message
            if exc.message.startswith("ai backend")
            else f"{type(exc).__name__}: {exc.message}"
        )
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
