"""ProbePanel: does this endpoint really do tool calling? One click, one request."""

from __future__ import annotations

import atexit
import threading
from typing import Any

import ipywidgets as widgets

from ..client import Client
from ..errors import RigError

__all__ = ["ProbePanel", "SecretField", "demo_endpoint"]

_demo_lock = threading.Lock()
_demo: Any = None

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
    ("auto", "auto"),
    ("required", "required"),
    ("none", "none"),
    ("unset (field left out)", None),
]


def demo_endpoint() -> tuple[str, str]:
    """(base_url, model) of a process-wide demo server, started on first use."""
    global _demo
    from ..demo import DemoServer

    with _demo_lock:
        if _demo is None:
            server = DemoServer()
            server.start()
            atexit.register(server.close)
            _demo = server
        models = list(_demo.models)
        default = getattr(_demo, "default_model", None)
        return str(_demo.base_url), str(default if default in models else models[0])


class SecretField(widgets.Password):  # type: ignore[misc]
    """A password box whose value never shows in a repr."""

    def _repr_keys(self) -> Any:
        return (k for k in super()._repr_keys() if k != "value")


class ProbePanel(widgets.VBox):  # type: ignore[misc]
    """Base URL, model, key, a Probe button, the verdict and the error class.

    With no base URL it is pre-filled with the embedded demo endpoint. A key
    typed into the box is moved into memory on Probe and the box cleared, so it
    is not left in widget state a notebook could save; a key passed in from
    Python never enters widget state at all.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        api_key: str = "",
        tool_choice: str | None = "auto",
        timeout: float = 60.0,
    ) -> None:
        if base_url is None:
            base_url, demo_model = demo_endpoint()
            model = demo_model if model is None else model
        self._api_key = api_key
        self.timeout = timeout
        wide = widgets.Layout(width="520px")
        self.base_url = widgets.Text(value=base_url, description="Base URL", layout=wide)
        self.model = widgets.Text(value=model or "", description="Model", layout=wide)
        self.key = SecretField(value="", description="API key", layout=wide)
        self.tool_choice = widgets.Dropdown(
            options=TOOL_CHOICE_OPTIONS, value=tool_choice, description="tool_choice"
        )
        self.button = widgets.Button(description="Probe", button_style="primary", icon="search")
        self.verdict = widgets.Label(value="")
        self.error_class = widgets.Label(value="")
        self.message = widgets.Label(value="")
        self._set_key_placeholder()
        super().__init__(
            [
                self.base_url,
                self.model,
                self.key,
                widgets.HBox([self.tool_choice, self.button]),
                self.verdict,
                self.error_class,
                self.message,
            ]
        )
        self.button.on_click(lambda _button: self.probe())

    def _set_key_placeholder(self) -> None:
        self.key.placeholder = (
            "key held in memory (type to replace)" if self._api_key else "empty for no key"
        )

    def _scrub(self, text: str) -> str:
        for secret, mask in ((self._api_key, "***"), (self.base_url.value.strip(), "<base URL>")):
            if secret:
                text = text.replace(secret, mask)
        return text

    def probe(self) -> str:
        """Send the probe now; returns the outcome ("ok" or the error class name)."""
        if self.key.value:
            self._api_key = str(self.key.value)
            self.key.value = ""
            self._set_key_placeholder()
        self.button.disabled = True
        self.verdict.value = "probing..."
        self.error_class.value = ""
        self.message.value = ""
        outcome, message = "ok", ""
        try:
            with Client(self.base_url.value.strip(), self._api_key, timeout=self.timeout) as c:
                c.probe_tool_calling(self.model.value.strip(), tool_choice=self.tool_choice.value)
        except (RigError, ValueError) as exc:
            outcome, message = type(exc).__name__, str(exc)
        finally:
            self.button.disabled = False
        self.verdict.value = VERDICTS.get(outcome, "the probe failed")
        self.verdict.style.text_color = _COLORS.get(outcome, "firebrick")
        self.error_class.value = "" if outcome == "ok" else f"error class: {outcome}"
        self.message.value = self._scrub(message)
        return outcome

    def __repr__(self) -> str:
        return f"<ProbePanel model={self.model.value!r}>"
