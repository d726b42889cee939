"""The bfcl command: BFCL v4's single-turn categories through compare, printed per category.

The endpoints come from a compare file (the positional file or `--endpoints`) or from
`--base-url`/`--model` for one. The cases are loaded and every input checked before any
request; the table is printed before any file is written. `planned_requests` is the
count the request budget (`--max-requests`, as compare's: `rig_nb.cli.budget`) is held
to: one request per case and endpoint.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import budget
from .commands import api_key
from .compare_command import read_endpoints
from .hints import CommandError, install, url_problem
from .tables import fit_columns
from .text import plural, printable, terminal_width

if TYPE_CHECKING:
    from ..compare import Endpoint
    from ..scenarios import Scenario

__all__ = ["cmd_bfcl", "planned_requests"]

_LEGEND = (
    "BFCL v4 per category: cases ok / cases (share, rounded down); a miss is wrong_call "
    "(BFCL's error type) or how the reply ended when it made no call BFCL reads"
)
_WHY = "misses by cause (wrong_call by BFCL's error type):"


def planned_requests(endpoints: Sequence[Endpoint], scenarios: Sequence[Scenario]) -> int:
    """Model requests the run will send at most: one per case and endpoint (each case is
    a judged call, `budget.most_requests`)."""
    return budget.planned_requests(len(endpoints), scenarios)


def _endpoints(args: Namespace) -> list[Endpoint]:
    from ..client import Client
    from ..compare import Endpoint

    files = [f for f in (args.file, args.endpoints) if f]
    single = args.base_url is not None or args.model is not None
    if len(files) > 1 or (files and single):
        raise CommandError("give the endpoints once: a file, --endpoints FILE, or --base-url")
    if files:
        return read_endpoints(files[0], args.api_key_env)
    if args.base_url is None or args.model is None:
        raise CommandError(
            "no endpoint: give --base-url URL --model NAME, or a compare file of [[endpoint]]s"
        )
    try:
        Client(args.base_url).close()
    except ValueError as exc:
        raise CommandError(f"--base-url: {url_problem(args.base_url, exc)}") from None
    key = api_key(args.api_key_env, "--api-key-env")
    return [Endpoint(args.name or args.model, args.base_url, args.model, key, args.api)]


def _scenarios(args: Namespace) -> list[Scenario]:
    from ..evals import BFCL_CATEGORIES, bfcl_scenarios

    categories = list(BFCL_CATEGORIES)
    if args.categories is not None:
        categories = [c.strip() for c in args.categories.split(",") if c.strip()]
        unknown = [c for c in categories if c not in BFCL_CATEGORIES]
        if unknown or not categories:
            raise CommandError(
                f"--categories: unknown {', '.join(map(repr, unknown)) or 'none given'}; "
                f"the categories are {','.join(BFCL_CATEGORIES)}"
            )
    try:
        scenarios = bfcl_scenarios(categories, data_dir=args.data_dir, limit=args.limit)
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    return [replace(s, max_tokens=args.max_tokens) for s in scenarios]


def _causes(frame: Any) -> tuple[list[str], list[dict[str, str]]]:
    """Rows of miss counts per endpoint: each outcome but ok, wrong_call by error type."""
    causes: dict[str, dict[str, int]] = {}
    for endpoint, outcome, error in zip(
        frame["endpoint"], frame["outcome"], frame["error"], strict=True
    ):
        if outcome == "ok":
            continue
        cause = f"wrong_call {str(error).split(': ', 1)[0]}" if outcome == "wrong_call" else outcome
        counts = causes.setdefault(cause, {})
        counts[endpoint] = counts.get(endpoint, 0) + 1
    names = list(dict.fromkeys(str(e) for e in frame["endpoint"]))
    rows = [
        {"cause": cause, **{n: str(counts.get(n, 0)) for n in names}}
        for cause, counts in sorted(causes.items(), key=lambda kv: -sum(kv[1].values()))
    ]
    return names, rows


def cmd_bfcl(args: Namespace) -> int:
    endpoints = _endpoints(args)
    from .compare_command import _check_outputs, _write, run_compare

    _check_outputs(args)
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise CommandError(f"bfcl needs pandas: {install('notebook')}", 1) from None
    from ..compare import summarize
    from ..report import save_html, save_traces

    scenarios = _scenarios(args)
    if not scenarios:
        raise CommandError("no BFCL case to run (--limit 0?)")
    planned = planned_requests(endpoints, scenarios)
    made_of = f"{plural(len(scenarios), 'case')} x {plural(len(endpoints), 'endpoint')}"
    budget.check_budget("bfcl", planned, args.max_requests, made_of)
    print(f"{made_of}: {planned} requests", file=sys.stderr)
    frame = run_compare(endpoints, scenarios, args)
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        width = terminal_width()
        table = summarize(frame, by="group")
        names = [str(c) for c in table.columns]
        rows = [
            {"category": str(group), **{n: str(v) for n, v in zip(names, values, strict=True)}}
            for group, values in zip(table.index, table.itertuples(index=False), strict=True)
        ]
        print(_LEGEND if width is None else "\n".join(_wrap_words(_LEGEND, width)))
        print(printable(fit_columns("category", names, rows, width)))
        names, causes = _causes(frame)
        if causes:
            print()
            print(_WHY)
            print(printable(fit_columns("cause", names, causes, width)))
    sys.stdout.flush()
    written = True
    if args.csv:
        rows_n = plural(len(frame), "row")
        written &= _write("--csv", rows_n, args.csv, lambda: frame.to_csv(args.csv, index=False))
    if args.html:
        written &= _write("--html", "the report", args.html, lambda: save_html(frame, args.html))
    if args.traces:
        traces = [frame.attrs["traces"][n] for n in sorted(frame.attrs["traces"])]
        written &= _write(
            "--traces",
            plural(len(traces), "trace"),
            args.traces,
            lambda: save_traces(traces, args.traces),
        )
    failed = int((frame["outcome"] != "ok").sum())
    if failed:
        print(f"rig-nb: {failed} of {plural(len(frame), 'case run')} not ok", file=sys.stderr)
    return 1 if failed or not written else 0


def _wrap_words(text: str, width: int) -> list[str]:
    lines: list[str] = [""]
    for word in text.split():
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width:
            lines.append("")
        lines[-1] = f"{lines[-1]} {word}".strip()
    return lines
