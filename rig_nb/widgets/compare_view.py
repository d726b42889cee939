"""CompareView: the DataFrame from `compare()` as a readable table, outcomes coloured."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .render import esc, table_html

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXPLANATIONS", "CompareView"]

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
    "ValueError": "The base URL or the scenario was not usable.",
}
_OK_STYLE = "background:#d9f2d9"
_WARN_STYLE = "background:#ffe8c2"
_FAIL_STYLE = "background:#f8d0d0"
_WARN = {"OutputLimitError", "NoToolCallingError", "NotJSONError", "InvalidJSONError"}


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
        return _OK_STYLE
    return _WARN_STYLE if outcome in _WARN else _FAIL_STYLE


class CompareView(widgets.VBox):  # type: ignore[misc]
    """The comparison table (every cell escaped) and an explanation of each failure seen."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df
        header = [str(c) for c in df.columns]
        rows: list[list[str]] = []
        styles: list[list[str]] = []
        for record in df.itertuples(index=False, name=None):
            cells = [_cell(v) for v in record]
            row_styles = ["white-space:pre-wrap;max-width:30em"] * len(cells)
            if "outcome" in header:
                row_styles[header.index("outcome")] = _outcome_style(cells[header.index("outcome")])
            rows.append(cells)
            styles.append(row_styles)
        self.table = widgets.HTML(value=table_html(header, rows, styles))
        self.summary = widgets.Label(value=self._summary())
        self.legend = widgets.HTML(value=self._legend())
        super().__init__([self.summary, self.table, self.legend])

    def _summary(self) -> str:
        if "outcome" not in self.df.columns or self.df.empty:
            return f"{len(self.df)} rows"
        if "endpoint" not in self.df.columns:
            ok = int((self.df["outcome"] == "ok").sum())
            return f"{ok}/{len(self.df)} ok"
        parts = []
        for name, group in self.df.groupby("endpoint", sort=False):
            parts.append(f"{name}: {int((group['outcome'] == 'ok').sum())}/{len(group)} ok")
        return "; ".join(parts)

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
            data["text/html"] = self.table.value + self.legend.value
        return data

    def __repr__(self) -> str:
        return f"<CompareView {self.summary.value}>"
