"""The compare command: endpoints from a TOML file, the run, the tables, the files it writes.

Output paths are checked before any request; the results are printed before any file is
written, and every file is tried whatever became of the one before.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BackendError
from ..wire import WIRES
from .budget import check_budget, most_requests, planned_requests
from .commands import NO_EXCHANGE, api_key
from .hints import CommandError, explain, install, url_problem
from .tables import compare_table_text, fit_columns, load_summary_rows, load_summary_text
from .text import (
    COMPARE_COLUMNS,
    Progress,
    compare_table_rows,
    plural,
    printable,
    terminal_width,
    wrap,
)

if TYPE_CHECKING:
    from ..compare import Endpoint

__all__ = ["cmd_compare", "read_endpoints"]


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
    from ..client import Client
    from ..compare import Endpoint

    tables = _load_toml(path).get("endpoint")
    if not isinstance(tables, list) or not tables:
        raise CommandError(f"{path}: no [[endpoint]] tables")
    endpoints: list[Endpoint] = []
    for n, table in enumerate(tables, 1):
        where = f"{path}: endpoint {n}"
        unknown = sorted(set(table) - {"name", "base_url", "model", "api_key_env", "api"})
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
                f"{where}: base_url: {url_problem(table['base_url'], exc)}"
            ) from None
        api = table.get("api", "chat")
        if not isinstance(api, str) or api not in WIRES:
            names = ", ".join(f'"{name}"' for name in WIRES)
            raise CommandError(f"{where}: 'api' must be one of {names}")
        endpoints.append(Endpoint(table["name"], table["base_url"], table["model"], key, api))
    return endpoints


# The files compare writes: option, attribute of args.
_OUTPUTS = (("--csv", "csv"), ("--html", "html"), ("--traces", "traces"))


def _check_outputs(args: Namespace) -> None:
    """Each output path names a file that can be written, and no two name the same one."""
    from ..report import check_path

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
    from ..client import Client

    per = len(frame) // len(endpoints)
    traces = frame.attrs["traces"]
    for n, endpoint in enumerate(endpoints):
        mine = range(n * per, (n + 1) * per)
        if (frame["outcome"][n * per : (n + 1) * per] == "ok").any():
            continue
        errors = [traces[i].exception for i in mine if i in traces]
        first = next((e for e in errors if isinstance(e, BackendError)), None)
        if first is None or not (first.kind in NO_EXCHANGE or first.status_code == 404):
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
                endpoint.base_url,
                endpoint.api_key,
                timeout=args.timeout,
                deadline=args.deadline,
                api=endpoint.api,
            ) as client:
                hint = explain(first, where, client)
        else:
            hint = explain(first, where, None)
        print(f"rig-nb: endpoint {endpoint.name!r}: {hint}", file=sys.stderr)


_LEGEND = (
    "summary: runs ok / runs (pass^k: all k repeats ok; flaky: some ok, some not), "
    "and the median latency, per scenario and endpoint"
)
_LOAD_LEGEND = (
    "summary per endpoint, scenario and load: runs ok of runs, p50 and p95 latency (s), "
    "p50 time to first token (s, streamed only), output tokens per second at that load"
)


def _summary_text(summary: Any, sweep: bool, width: int | None) -> str:
    """The summary within `width`: a sweep's one row per (endpoint, scenario, load), else
    the scenario x endpoint matrix, endpoints side by side as many as fit."""
    if sweep:
        records = summary.astype(object).where(summary.notna(), None).to_dict("records")
        return load_summary_text(load_summary_rows(records), width)
    names = [str(c) for c in summary.columns]
    rows = [
        {"scenario": str(scenario), **{n: str(v) for n, v in zip(names, values, strict=True)}}
        for scenario, values in zip(summary.index, summary.itertuples(index=False), strict=True)
    ]
    return fit_columns("scenario", names, rows, width)


def cmd_compare(args: Namespace) -> int:
    from .otlp import EXPORT_FAILED, check_otlp, send_otlp

    endpoints = read_endpoints(args.file, args.api_key_env)
    _check_outputs(args)
    check_otlp(args.otlp)
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise CommandError(f"compare needs pandas: {install('notebook')}", 1) from None
    from ..compare import DEFAULT_SCENARIOS, EVALUATION_SCENARIOS, summarize
    from ..load import is_sweep
    from ..report import save_html, save_traces

    # The same scenarios, each under the thinking switch and replay asked for.
    scenarios = [
        replace(s, thinking=args.thinking, reasoning_replay=args.reasoning_replay)
        for s in (EVALUATION_SCENARIOS if args.evaluation else DEFAULT_SCENARIOS)
    ]
    per_set = sum(most_requests(s) for s in scenarios)
    copies = sum(args.load)
    check_budget(
        "compare",
        planned_requests(len(endpoints), scenarios, repeats=args.repeats, levels=args.load),
        args.max_requests,
        f"{plural(len(scenarios), 'scenario')} sending up to {per_set} x "
        f"{plural(len(endpoints), 'endpoint')} x {plural(args.repeats, 'repeat')} x "
        f"{plural(copies, 'copy')} at load {','.join(map(str, args.load))}",
    )

    frame = run_compare(endpoints, scenarios, args, repeats=args.repeats, load=args.load)
    traces = [frame.attrs["traces"][n] for n in sorted(frame.attrs["traces"])]
    # The results first: a file that cannot be written must not hide them.
    if args.json:
        print(frame.to_json(orient="records", indent=2))
    else:
        width = terminal_width()
        rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
        sweep = is_sweep(args.load)
        print(wrap(_LOAD_LEGEND if sweep else _LEGEND, width))
        print(printable(_summary_text(summarize(frame), sweep, width)))
        print()
        table = compare_table_rows(rows)
        columns = COMPARE_COLUMNS
        if sweep:  # which level and copy each row ran as
            for cells, row in zip(table, rows, strict=True):
                cells.update(load=str(row["load"]), copy=str(row["copy"]))
            at = columns.index("repeat") + 1
            columns = [*columns[:at], "load", "copy", *columns[at:]]
        print(compare_table_text(table, columns, width))
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
    exported = send_otlp(traces, args.otlp) if args.otlp else True
    _endpoint_hints(args, endpoints, frame)
    failed = int((frame["outcome"] != "ok").sum())
    if failed:
        print(f"rig-nb: {failed} of {plural(len(frame), 'run')} not ok", file=sys.stderr)
    if not exported:  # its own status: the rows' 0/1 is not reused for it
        return EXPORT_FAILED
    return 1 if failed or not written else 0


def run_compare(endpoints: Any, scenarios: Any, args: Namespace, **more: Any) -> Any:
    """compare() as the CLI runs it (`compare` and `bfcl`): the command's stream, concurrency,
    timeout and deadline, a progress line on a terminal's stderr."""
    from ..compare import compare

    progress = Progress(sys.stderr) if sys.stderr.isatty() else None
    try:
        return compare(
            endpoints,
            scenarios=scenarios,
            stream=args.stream,
            concurrency=args.concurrency,
            progress=progress or False,
            timeout=args.timeout,
            deadline=args.deadline,
            **more,
        )
    finally:
        if progress is not None:
            progress.close()
