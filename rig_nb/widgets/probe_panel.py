"""ProbePanel: does this endpoint really do tool calling? One request; then, on demand, a report.

    demo = DemoServer(); demo.start()
    ProbePanel(demo.base_url, "qwen3-no-parser")

The panel takes its endpoint from the caller: the notebook starts the demo
endpoint, never the panel.
"""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as widgets

from .._html import esc
from ..capabilities import endpoint_report
from ..client import Client
from ..errors import RigError
from ..redact import Redactor
from ..wire import TOOL_CHOICES
from ._tree import close_tree

__all__ = ["TOOL_CHOICE_OPTIONS", "VERDICTS", "ProbePanel", "SecretField"]

VERDICTS = {
    "ok": "tool calling works: the reply carried a tool call",
    "NoToolCallingError": "no tool calling: the endpoint answered without a tool call",
    "OutputLimitError": (
        "inconclusive: the reply hit the token limit before any tool call "
        "(a reasoning model can spend the whole probe budget thinking)"
    ),
    "BackendError": "the endpoint rejected the request or could not be reached",
    "ResponseTooLargeError": "the reply was larger than the response cap",
    "ValueError": "the base URL or model is not usable",
}
_COLORS = {"ok": "green", "OutputLimitError": "darkorange"}
TOOL_CHOICE_OPTIONS: list[tuple[str, str | None]] = [
    ("unset (field left out)" if value is None else name, value)
    for name, value in TOOL_CHOICES.items()
]
_HIDDEN = {"display": "none"}
_CELL = "padding:3px 6px;vertical-align:top;border-bottom:1px solid #eee"
_FLAG = re.compile(r"--[\w.-]+")


def _no_break_flags(text: str) -> str:
    """`text` escaped, each --flag kept on one line (a break at its hyphens misreads it)."""
    return _FLAG.sub(lambda m: f'<span style="white-space:nowrap">{m.group()}</span>', esc(text))


def report_html(rows: list[list[str]]) -> str:
    """The doctor's checks as a table: check, verdict, evidence, fix; every cell escaped."""
    head = "".join(
        f'<th style="{_CELL};text-align:left;border-bottom:1px solid #999">{h}</th>'
        for h in ("check", "verdict", "evidence", "fix")
    )
    body = "".join(
        f'<tr><td style="{_CELL};white-space:nowrap">{esc(name)}</td>'
        f'<td style="{_CELL};white-space:nowrap">{esc(verdict)}</td>'
        f'<td style="{_CELL};overflow-wrap:break-word">{esc(evidence)}</td>'
        f'<td style="{_CELL};overflow-wrap:break-word">{_no_break_flags(fix)}</td></tr>'
        for name, verdict, evidence, fix in rows
    )
    return (
        '<table style="border-collapse:collapse;font-size:12px;line-height:1.4;width:100%">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


class SecretField(widgets.Password):  # type: ignore[misc]
    """A password box whose value never shows in a repr."""

    def _repr_keys(self) -> Any:
        return (k for k in super()._repr_keys() if k != "value")


class ProbePanel(widgets.VBox):  # type: ignore[misc]
    """Base URL, model, key, Probe and Full report buttons, the verdict and the report table.

    A key typed into the box is moved into memory on use and the box cleared,
    so it is not left in widget state a notebook could save; a key passed in
    from Python never enters widget state at all.
    """

    def __init__(
        self,
        base_url: str = "",
        model: str = "",
        *,
        api_key: str = "",
        tool_choice: str | None = "auto",
        stream: bool = False,
        timeout: float = 60.0,
        deadline: float = 300.0,
    ) -> None:
        self._api_key = api_key
        self.timeout = timeout
        self.deadline = deadline
        wide = widgets.Layout(width="520px", max_width="100%")
        self.base_url = widgets.Text(
            value=base_url,
            description="Base URL",
            placeholder="http://localhost:8000/v1",
            layout=wide,
        )
        self.model = widgets.Text(
            value=model, description="Model", placeholder="a name from /v1/models", layout=wide
        )
        self.key = SecretField(value="", description="API key", layout=wide)
        self.tool_choice = widgets.Dropdown(
            options=TOOL_CHOICE_OPTIONS, value=tool_choice, description="tool_choice"
        )
        self.stream = widgets.Checkbox(value=stream, description="stream", indent=False)
        self.button = widgets.Button(description="Probe", button_style="primary", icon="search")
        self.report_button = widgets.Button(description="Full report", icon="stethoscope")
        self.verdict = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.error_class = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.message = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.report = widgets.HTML(value="", layout=widgets.Layout(**_HIDDEN))
        self.last_report: Any = None
        self._set_key_placeholder()
        buttons = widgets.HBox([self.tool_choice, self.stream, self.button, self.report_button])
        super().__init__(
            [
                self.base_url,
                self.model,
                self.key,
                buttons,
                self.verdict,
                self.error_class,
                self.message,
                self.report,
            ]
        )
        self.button.on_click(lambda _button: self.probe())
        self.report_button.on_click(lambda _button: self.full_report())

    def _set_key_placeholder(self) -> None:
        self.key.placeholder = (
            "key held in memory (type to replace)" if self._api_key else "empty for no key"
        )

    def _take_key(self) -> None:
        if self.key.value:
            self._api_key = str(self.key.value)
            self.key.value = ""
            self._set_key_placeholder()

    def _client(self) -> Client:
        return Client(
            self.base_url.value.strip(),
            self._api_key,
            timeout=self.timeout,
            deadline=self.deadline,
        )

    def _show(self, widget: Any, value: str) -> None:
        widget.value = value
        widget.layout.display = None if value else "none"

    def _scrub(self, text: str) -> str:
        return Redactor(self._api_key, [self.base_url.value.strip()])(text)

    def probe(self) -> str:
        """Send the probe now; returns the outcome ("ok" or the error class name)."""
        self._take_key()
        self.button.disabled = True
        self._show(self.verdict, "probing...")
        self._show(self.error_class, "")
        self._show(self.message, "")
        outcome, message = "ok", ""
        try:
            with self._client() as c:
                trace = c.probe_trace(
                    self.model.value.strip(),
                    tool_choice=self.tool_choice.value,
                    stream=bool(self.stream.value),
                )
            outcome, message = trace.outcome, trace.error
        except ValueError as exc:
            outcome, message = type(exc).__name__, str(exc)
        finally:
            self.button.disabled = False
        self._show(self.verdict, VERDICTS.get(outcome, "the probe failed"))
        self.verdict.style.text_color = _COLORS.get(outcome, "firebrick")
        self._show(self.error_class, "" if outcome == "ok" else f"error class: {outcome}")
        # The verdict and the class are shown above: the message line adds the rest.
        self._show(self.message, self._scrub(message.removeprefix(f"{outcome}: ")))
        return outcome

    def full_report(self) -> Any:
        """Run `endpoint_report` (at most 7 requests) and show it as a table; returns it."""
        self._take_key()
        self.report_button.disabled = True
        self._show(self.report, "<i>checking the endpoint...</i>")
        try:
            with self._client() as c:
                # Always both ways: stream parity is one of the checks.
                report = endpoint_report(c, self.model.value.strip(), stream=True)
        except (ValueError, RigError) as exc:
            self._show(self.report, "")
            self._show(self.message, self._scrub(f"{type(exc).__name__}: {exc}"))
            return None
        finally:
            self.report_button.disabled = False
        self.last_report = report
        rows = [[c.name, c.verdict, c.evidence, c.advice] for c in report.checks]
        head = f"<p>server: <b>{esc(report.server)}</b></p>"
        table = report_html(rows)
        self._show(self.report, head + table)
        return report

    def close(self) -> None:
        close_tree(self)  # Box.close leaves its children open: a closed view must free them
        super().close()

    def __repr__(self) -> str:
        return f"<ProbePanel model={self.model.value!r}>"
