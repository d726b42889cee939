"""The structured per-iteration record of a run, as the notebook layer renders it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Iteration", "ToolCallRecord", "Trace"]

Listener = Callable[["Trace"], None]


def _public_fields(obj: object) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj) if not f.name.startswith("_")}  # type: ignore[arg-type]


@dataclass
class ToolCallRecord:
    """One tool call the loop acted on, with what it returned."""

    id: str = ""
    received_id: str = ""
    name: str = ""
    arguments: str = ""
    result: str = ""
    is_error: bool = False
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return _public_fields(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        return cls(**data)


@dataclass
class Iteration:
    """One request/response round of the loop."""

    index: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    raw_content: str = ""
    reasoning_content: str = ""
    reasoning_shape: str = "none"
    text: str = ""
    finish_reason: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = _public_fields(self)
        data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Iteration:
        data = dict(data)
        data["tool_calls"] = [ToolCallRecord.from_dict(c) for c in data.get("tool_calls", [])]
        return cls(**data)


@dataclass
class Trace:
    """A run: its settings, every iteration in order, and how it ended."""

    model: str = ""
    endpoint: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    iterations: list[Iteration] = field(default_factory=list)
    outcome: str = ""
    elapsed_s: float = 0.0
    _listeners: list[Listener] = field(default_factory=list, repr=False, compare=False)

    def add_listener(self, listener: Listener) -> None:
        """Call `listener(trace)` each time the trace changes during a run."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def notify(self) -> None:
        # A broken listener (a closed widget) must not break the run it observes.
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:
                pass

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        return [c for it in self.iterations for c in it.tool_calls]

    def usage_totals(self) -> dict[str, int]:
        """prompt_tokens and completion_tokens summed over the iterations (missing counts as 0)."""
        return {
            key: sum(it.usage.get(key, 0) for it in self.iterations)
            for key in ("prompt_tokens", "completion_tokens")
        }

    def to_dict(self) -> dict[str, Any]:
        data = _public_fields(self)
        data["iterations"] = [it.to_dict() for it in self.iterations]
        return data

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        data = dict(data)
        data["iterations"] = [Iteration.from_dict(it) for it in data.get("iterations", [])]
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        return cls.from_dict(json.loads(text))

    def to_dataframe(self) -> pd.DataFrame:
        """One row per iteration (pandas is imported here, not at import time)."""
        import pandas as pd

        rows = []
        for it in self.iterations:
            rows.append(
                {
                    "index": it.index,
                    "finish_reason": it.finish_reason,
                    "reasoning_shape": it.reasoning_shape,
                    "text": it.text,
                    "raw_content": it.raw_content,
                    "reasoning_content": it.reasoning_content,
                    "tool_calls": len(it.tool_calls),
                    "tool_names": ",".join(c.name for c in it.tool_calls),
                    "prompt_tokens": it.usage.get("prompt_tokens", 0),
                    "completion_tokens": it.usage.get("completion_tokens", 0),
                    "latency_s": it.latency_s,
                    "error": it.error,
                }
            )
        columns = [
            "index",
            "finish_reason",
            "reasoning_shape",
            "text",
            "raw_content",
            "reasoning_content",
            "tool_calls",
            "tool_names",
            "prompt_tokens",
            "completion_tokens",
            "latency_s",
            "error",
        ]
        df: pd.DataFrame = pd.DataFrame(rows, columns=columns)
        return df

    def tool_calls_dataframe(self) -> pd.DataFrame:
        """One row per tool call, tagged with its iteration index."""
        import pandas as pd

        columns = ["iteration", *(f.name for f in fields(ToolCallRecord))]
        rows = [
            {"iteration": it.index, **c.to_dict()} for it in self.iterations for c in it.tool_calls
        ]
        df: pd.DataFrame = pd.DataFrame(rows, columns=columns)
        return df

    def _repr_html_(self) -> str | None:
        """A static, escaped table (the notebook layer renders it; None without ipywidgets)."""
        try:
            from .widgets.render import trace_html
        except ImportError:
            return None
        return trace_html(self)

    def _ipython_display_(self) -> None:
        """A bare `trace` in a cell shows a live TraceView (imported lazily)."""
        from .widgets import display_trace

        display_trace(self)
