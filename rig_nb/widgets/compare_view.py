"""CompareView: a `compare()` DataFrame as the summary matrix first, then the rows on demand.

The matrix (scenario x endpoint, "k/n ok" and the median latency, coloured by
pass rate) fits an 800 px output area: long names are cut with the full text
on hover. A load sweep shows its load table instead (`rig_nb.load`: one row per
endpoint, scenario and load). The row table below it may scroll sideways.
Every cell is escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._html import esc, table_html
from ..compare import has_groups, summarize
from ..load import load_table_html
from ..report.charts import charts_html

if TYPE_CHECKING:
    import pandas as pd
from ._tree import close_tree

__all__ = ["EXPLANATIONS", "CompareView", "matrix_html"]

EXPLANATIONS: dict[str, str] = {
    "NoToolCallingError": (
        "The endpoint answered without a tool call. Its chat template or server flags may not "
        'enable tool calling, or it needs tool_choice "auto" (a llama.cpp server answers in text '
        "when tool_choice is left out)."
    ),
    "OutputLimitError": (
        'finish_reason was "length": the budget ran out, often inside the reasoning (shape '
        '"unclosed"), so there is no answer. Raise max_tokens or lower the reasoning effort.'
    ),
    "IterationLimitError": (
        "The model kept calling tools until the iteration cap, or sent more than 32 tool calls "
        "in one reply."
    ),
    "ResponseTooLargeError": "The reply body was larger than the response cap (1 MiB by default).",
    "NotJSONError": "The answer held no '{' at all: no JSON object to decode.",
    "InvalidJSONError": (
        "The answer held '{' but no candidate parsed as a JSON object (a truncated object, or "
        "reasoning forced into the JSON grammar)."
    ),
    "BackendError": (
        "Transport or HTTP failure: the endpoint could not be reached or rejected the request. "
        "The error column keeps the HTTP status and the endpoint's own message."
    ),
    "reasoning_only": (
        "The run ended with no answer: the reply held only reasoning (in a reasoning field, or "
        "stripped from the content). The answer may sit inside the reasoning."
    ),
    "json_in_reasoning": (
        "The run ended with no answer and a JSON object in the reasoning: a server asked for "
        "structured output with reasoning on put the JSON there and left content empty."
    ),
    "empty": "The run ended with an empty reply: no content, no reasoning, no tool call.",
    "wrong_call": (
        "The reply's calls are not what BFCL counts correct: the error column holds BFCL's "
        "error type (wrong function name, a missing or unexpected parameter, a wrong type or "
        "value, the wrong number of calls, a call where none was wanted) and a short reason."
    ),
    "tool_calls_in_reasoning": (
        "The reply made no call and no answer, but a tool call is written in its reasoning: "
        "the server's parsers left it there (a reasoning parser that swallows the call)."
    ),
    "wrong_answer": (
        "The run ended in an answer that does not name what the scenario's last step "
        "returned (the agentic scenario: the tracking number): a step was skipped or guessed."
    ),
    "text_tool_calls": (
        "The model wrote its tool calls as text in the content instead of making them: the "
        "server's tool-call parser is off or does not know the model's format. "
        "recover_text_tool_calls=True runs them."
    ),
    "leaked": (
        "The run ended in an answer that still holds a leak dialect's reasoning or call markup "
        "after strip_reasoning and split_reasoning (harmony channels, [THINK], <tool_call> ...): "
        "the server's reasoning or tool parser is off or does not know the model's format."
    ),
    "ValueError": "The base URL or the scenario was not usable.",
    "crossed_stream": (
        "Under load, this copy's reply carried another copy's nonce: the server mixed the "
        "streams of requests running at the same time (a tool-call parser with state shared "
        "across requests). Update the server, or serve one request at a time."
    ),
}
_OK = "background:#d9f2d9"
_PART = "background:#fff1c9"
_WARN = "background:#ffe8c2"
_FAIL = "background:#f8d0d0"
_WARNINGS = {"OutputLimitError", "NoToolCallingError", "NotJSONError", "InvalidJSONError"}
_CUT = "overflow:hidden;text-overflow:ellipsis;white-space:nowrap"
# Row cells stay on one line (the row table scrolls sideways); long ones are cut, full on hover.
_ROW_CELL = "white-space:nowrap;max-width:24em;overflow:hidden;text-overflow:ellipsis"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    try:
        import pandas as pd

        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _outcome_style(outcome: str) -> str:
    if outcome == "ok":
        return _OK
    return _WARN if outcome in _WARNINGS else _FAIL


def _rate_style(cell: str) -> str:
    ok, _, rest = cell.partition("/")
    total = rest.split(" ", 1)[0]
    if not ok.isdigit() or not total.isdigit() or int(total) == 0:
        return ""
    if int(ok) == int(total):
        return _OK
    return _PART if int(ok) else _FAIL


def _two_lines(cell: str) -> str:
    """ "3/3 ok, pass^3, 0.05 s" as two escaped lines: the pass rate with its mark
    (`pass^k`, `flaky`), then the median latency."""
    rate, _, latency = cell.rpartition(", ")
    if not rate:
        rate, latency = latency, ""
    return esc(rate) + (f"<br>{esc(latency)}" if latency else "")


def matrix_html(summary: pd.DataFrame) -> str:
    """The summary matrix (or `summarize(df, by="group")`'s table) as an escaped HTML
    table, cells coloured by pass rate.

    Fixed layout at the output area's width: long names are cut (full on hover),
    and each cell holds its two figures on two lines, so a dozen endpoints fit.
    """
    th = "padding:2px 6px;border-bottom:1px solid #999;text-align:left;" + _CUT
    label = esc(summary.index.name or "scenario")
    head = f'<th style="{th}">{label}</th>' + "".join(
        f'<th style="{th}" title="{esc(c)}">{esc(c)}</th>' for c in summary.columns
    )
    rows = []
    for scenario, values in summary.iterrows():
        tds = "".join(
            f'<td style="padding:2px 6px;{_rate_style(str(v))};{_CUT}" title="{esc(v)}">'
            f"{_two_lines(str(v))}</td>"
            for v in values
        )
        rows.append(
            f'<tr><td style="padding:2px 6px;{_CUT}" title="{esc(scenario)}">{esc(scenario)}'
            f"</td>{tds}</tr>"
        )
    return (
        '<table style="border-collapse:collapse;font-size:12px;line-height:1.4;'
        'table-layout:fixed;width:100%">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


class CompareView(widgets.VBox):  # type: ignore[misc]
    """The summary matrix, what each failure means, and the rows (every cell escaped)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df
        has_matrix = {"endpoint", "scenario", "outcome", "latency_s"} <= set(df.columns)
        # A frame with groups (BFCL's categories): the per-group table first, and the
        # scenario matrix only for rows outside any group.
        grouped = has_matrix and has_groups(df)
        self.group_frame = summarize(df, by="group") if grouped else None
        plain = df[df["group"].astype(str) == ""] if grouped else df
        self.summary_frame = summarize(plain) if has_matrix and not plain.empty else None
        # A load sweep's summary is one row per (endpoint, scenario, load), not a matrix.
        self.sweep = self.summary_frame is not None and "load" in self.summary_frame.columns
        html = ""
        if self.group_frame is not None:
            html = '<div style="overflow-x:auto;max-width:100%">'
            html += matrix_html(self.group_frame) + "</div>"
        if self.summary_frame is not None:
            shown = load_table_html if self.sweep else matrix_html
            html += '<div style="overflow-x:auto;max-width:100%">' + shown(self.summary_frame)
            html += "</div>"
        self.matrix = widgets.HTML(value=html)
        # Latency per cell, and against load when the summary has levels (rig_nb.report.charts).
        self.charts = widgets.HTML(
            value=charts_html(plain, self.summary_frame) if has_matrix and len(plain) else ""
        )
        header = [str(c) for c in df.columns]
        rows: list[list[str]] = []
        styles: list[list[str]] = []
        for record in df.itertuples(index=False, name=None):
            cells = [_cell(v) for v in record]
            row_styles = [_ROW_CELL] * len(cells)
            if "outcome" in header:
                at = header.index("outcome")
                row_styles[at] = _outcome_style(cells[at])
            rows.append(cells)
            styles.append(row_styles)
        self.table = widgets.HTML(
            value='<div style="overflow-x:auto;max-width:100%">'
            + table_html(header, rows, styles)
            + "</div>"
        )
        self.rows = widgets.Accordion(children=[self.table], selected_index=None)
        self.rows.set_title(0, f"all {len(df)} rows")
        self.summary = widgets.Label(value=self._summary())
        self.legend = widgets.HTML(value=self._legend())
        super().__init__([self.summary, self.matrix, self.charts, self.legend, self.rows])

    def _summary(self) -> str:
        if "outcome" not in self.df.columns or self.df.empty:
            return f"{len(self.df)} rows"
        ok = int((self.df["outcome"] == "ok").sum())
        if self.sweep:
            return (
                f"{ok}/{len(self.df)} runs ok; per endpoint, scenario and load: runs ok, "
                "p50/p95 latency, p50 time to first token, output tokens per second"
            )
        if self.group_frame is not None:
            return (
                f"{ok}/{len(self.df)} runs ok; per group (a BFCL category): runs ok / runs "
                "and the share, rounded down"
            )
        return (
            f"{ok}/{len(self.df)} runs ok; each cell: runs ok / runs, median latency; "
            "pass^k: all k repeats ok; flaky: some repeats ok, some not"
        )

    def _legend(self) -> str:
        if "outcome" not in self.df.columns:
            return ""
        seen = [o for o in dict.fromkeys(str(o) for o in self.df["outcome"]) if o != "ok"]
        if not seen:
            return "<p>Every scenario passed on every endpoint.</p>"
        items = "".join(
            f"<li><b>{esc(o)}</b>: {esc(EXPLANATIONS.get(o, 'See the error column.'))}</li>"
            for o in seen
        )
        return f"<p><b>What the outcomes mean</b></p><ul>{items}</ul>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            # Shown where widgets cannot render (a static viewer of a saved notebook).
            parts = (self.matrix, self.charts, self.legend, self.table)
            data["text/html"] = "".join(w.value for w in parts)
        return data

    def close(self) -> None:
        close_tree(self)  # Box.close leaves its children open: a closed view must free them
        super().close()

    def __repr__(self) -> str:
        return f"<CompareView {self.summary.value}>"
