"""ProbePanel: does this endpoint really do tool calling? One request; then, on demand, a report.

    demo = DemoServer(); demo.start()
    ProbePanel(demo.base_url, "qwen3-no-parser")

The panel takes its endpoint from the caller: the notebook starts the demo
endpoint, never the panel.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from .._boundary import request_scope
from .._html import esc
from ..capabilities import EndpointReport, endpoint_report
from ..client import Client, check_timing
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
    "Cancelled": "cancelled: the probe was stopped before its reply came",
}
_COLORS = {"ok": "green", "OutputLimitError": "darkorange"}
TOOL_CHOICE_OPTIONS: list[tuple[str, str | None]] = [
    ("unset (field left out)" if value is None else name, value)
    for name, value in TOOL_CHOICES.items()
]
_HIDDEN = {"display": "none"}
_CELL = "padding:3px 6px;vertical-align:top;border-bottom:1px solid #eee"
_FLAG = re.compile(r"--[\w.-]+")
# A verdict that lists what failed (`ignored: tool_choice=none, ...`) wraps at its spaces
# rather than push evidence and fix out of an 800 px output area.
_VERDICT = "min-width:7em;max-width:16em"


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
        f'<td style="{_CELL};{_VERDICT}">{esc(verdict)}</td>'
        f'<td style="{_CELL};overflow-wrap:anywhere">{esc(evidence)}</td>'
        f'<td style="{_CELL};overflow-wrap:anywhere">{_no_break_flags(fix)}</td></tr>'
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
    """Base URL, model, key, Probe, Full report and Cancel buttons, progress, verdict, report.

    Probe and Full report run on a worker thread: the click handler returns at
    once and the kernel stays free. The progress line counts requests done of
    planned; Cancel (`cancel()`) ends the work at the next request boundary (the
    request in flight ends, or is cut by the deadline) and the report keeps what
    was found. One piece of work runs at a time: a click while one runs does
    nothing. The worker changes widgets only by setting their values (never
    through an Output context, which belongs to the kernel's thread).

    `timeout` and `deadline` are the Client's (`deadline=None`: none, and a
    Cancel then waits for the reply in flight).

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
        deadline: float | None = 300.0,
    ) -> None:
        self._cancel = threading.Event()  # first: close() (from __del__ too) sets it
        self._api_key = api_key
        # As the Client's: a bad value is a ValueError here, not a verdict on the first click.
        self.timeout, self.deadline = check_timing(timeout, deadline)
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
        self.cancel_button = widgets.Button(
            description="Cancel", icon="stop", disabled=True, tooltip="stop after this request"
        )
        self.progress = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.verdict = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.error_class = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.message = widgets.Label(value="", layout=widgets.Layout(**_HIDDEN))
        self.report = widgets.HTML(value="", layout=widgets.Layout(**_HIDDEN))
        self.last_report: EndpointReport | None = None
        self.last_outcome = ""
        self.worker: threading.Thread | None = None
        self._counted = (0, 0)
        self._lock = threading.Lock()
        self._set_key_placeholder()
        buttons = widgets.HBox(
            [self.tool_choice, self.stream, self.button, self.report_button, self.cancel_button]
        )
        super().__init__(
            [
                self.base_url,
                self.model,
                self.key,
                buttons,
                self.progress,
                self.verdict,
                self.error_class,
                self.message,
                self.report,
            ]
        )
        self.button.on_click(lambda _button: self.start_probe())
        self.report_button.on_click(lambda _button: self.start_report())
        self.cancel_button.on_click(lambda _button: self.cancel())

    def _set_key_placeholder(self) -> None:
        self.key.placeholder = (
            "key held in memory (type to replace)" if self._api_key else "empty for no key"
        )

    def _take_key(self) -> None:
        if self.key.value:
            self._api_key = str(self.key.value)
            self.key.value = ""
            self._set_key_placeholder()

    def _client(self, base_url: str) -> Client:
        return Client(base_url, self._api_key, timeout=self.timeout, deadline=self.deadline)

    def _show(self, widget: Any, value: str) -> None:
        widget.value = value
        widget.layout.display = None if value else "none"

    def _scrub(self, text: str, base_url: str) -> str:
        return Redactor(self._api_key, [base_url])(text)

    @property
    def busy(self) -> bool:
        """True while a probe or a report runs."""
        return self.worker is not None and self.worker.is_alive()

    def _start(self, name: str, work: Callable[[], None]) -> bool:
        """Run `work` on a worker thread; False (nothing started) while other work runs."""
        with self._lock:
            if self.busy:
                return False
            self._take_key()
            self._cancel.clear()
            self.button.disabled = self.report_button.disabled = True
            self.cancel_button.disabled = False
            self._counted = (0, 0)
            self.worker = threading.Thread(
                target=self._run, args=(work,), name=f"rig_nb ProbePanel {name}", daemon=True
            )
            self.worker.start()
        return True

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception as exc:  # a worker's failure is shown, never lost in a thread
            self._show(self.message, f"{type(exc).__name__}: {exc}")
        finally:
            if self._cancel.is_set():
                self._show(self.progress, self._cancelled_after())
            self.button.disabled = self.report_button.disabled = False
            self.cancel_button.disabled = True

    def _cancelled_after(self) -> str:
        done, planned = self._counted
        return f"cancelled after {done} of {planned} request{'' if planned == 1 else 's'}"

    def _count(self, done: int, planned: int) -> None:
        self._counted = (done, planned)
        word = "request" if planned == 1 else "requests"
        self._show(self.progress, f"{done} of {planned} {word} done")

    def cancel(self) -> bool:
        """End the running work at the next request boundary; False when nothing runs."""
        if not self.busy:
            return False
        if self._cancel.is_set():
            return True  # asked already (a second click, or a progress observer)
        self._cancel.set()
        self.cancel_button.disabled = True
        self._show(self.progress, f"{self.progress.value}; cancelling: {self._in_flight()}")
        return True

    def _in_flight(self) -> str:
        if self.deadline is None:
            return "the request in flight ends when its reply comes (no deadline is set)"
        return f"the request in flight ends or is cut by its deadline ({self.deadline:g} s)"

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the running work to finish; True when none runs any more."""
        worker = self.worker
        if worker is not None:
            worker.join(timeout)
        return not self.busy

    def start_probe(self) -> bool:
        """Send the probe on a worker thread; False when other work is running."""
        if self.busy:
            return False
        base_url, model = self.base_url.value.strip(), self.model.value.strip()
        choice, stream = self.tool_choice.value, bool(self.stream.value)
        self._show(self.verdict, "probing...")
        self.verdict.style.text_color = None
        self._show(self.error_class, "")
        self._show(self.message, "")

        def work() -> None:
            self.last_outcome = ""
            outcome, message = "ok", ""
            try:
                with request_scope(planned=1, progress=self._count, cancel=self._cancel):
                    with self._client(base_url) as c:
                        trace = c.probe_trace(model, tool_choice=choice, stream=stream)
                outcome, message = trace.outcome, trace.error
            except ValueError as exc:
                outcome, message = type(exc).__name__, str(exc)
            self._show(self.verdict, VERDICTS.get(outcome, "the probe failed"))
            self.verdict.style.text_color = _COLORS.get(outcome, "firebrick")
            self._show(self.error_class, "" if outcome == "ok" else f"error class: {outcome}")
            # The verdict and the class are shown above: the message line adds the rest.
            self._show(self.message, self._scrub(message.removeprefix(f"{outcome}: "), base_url))
            self.last_outcome = outcome

        return self._start("probe", work)

    def start_report(self) -> bool:
        """Run `endpoint_report` on a worker thread; False when other work is running."""
        base_url, model = self.base_url.value.strip(), self.model.value.strip()
        if self.busy:
            return False
        self._show(self.report, "<i>checking the endpoint...</i>")
        self._show(self.message, "")

        def work() -> None:
            self.last_report = None
            try:
                with self._client(base_url) as c:
                    # Always both ways: stream parity is one of the checks.
                    report = endpoint_report(
                        c, model, stream=True, progress=self._count, cancel=self._cancel
                    )
            except (ValueError, RigError) as exc:
                self._show(self.report, "")
                self._show(self.message, self._scrub(f"{type(exc).__name__}: {exc}", base_url))
                return
            self.last_report = report
            rows = [[c.name, c.verdict, c.evidence, c.advice] for c in report.checks]
            kind = " ".join(filter(None, (report.server, report.server_version)))
            window = report.context_window
            said = f", context window {window} tokens" if window else ""
            head = f"<p>server: <b>{esc(kind)}</b>{said}</p>"
            if self._cancel.is_set():
                head += (
                    f"<p><b>{esc(self._cancelled_after())}</b>: the checks below are what "
                    "was found; a check marked cancelled got no reply</p>"
                )
            self._show(self.report, head + report_html(rows))

        return self._start("report", work)

    def probe(self) -> str:
        """Send the probe and wait for it; returns the outcome ("ok" or the error class name).

        The Probe button does the same without waiting (`start_probe`).
        """
        if not self.start_probe():
            raise RuntimeError("the panel is busy: cancel() or wait() for the running work")
        self.wait()
        return self.last_outcome

    def full_report(self) -> EndpointReport | None:
        """Run `endpoint_report` (at most 14 requests to the model) and wait for it; returns
        it (None when it could not start: a bad base URL). The Full report button does not
        wait."""
        if not self.start_report():
            raise RuntimeError("the panel is busy: cancel() or wait() for the running work")
        self.wait()
        return self.last_report

    def close(self) -> None:
        self._cancel.set()  # a worker left running would send requests for a closed view
        close_tree(self)  # Box.close leaves its children open: a closed view must free them
        super().close()

    def __repr__(self) -> str:
        return f"<ProbePanel model={self.model.value!r}>"
