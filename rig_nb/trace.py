"""The structured per-iteration record of a run: plain data the notebook layer renders.

`Trace`, `Iteration` and `ToolCallRecord` are dataclasses whose fields are the
JSON shape: `to_dict` is derived from the fields and `Trace.from_json`
validates a file against them (a trace file is input too: wrong types and
unknown keys are a ValueError naming the field). Listeners live beside the
fields, never in them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import strict_json
from .usage import Usage
from .usage import kept_count as _count

if TYPE_CHECKING:
    import pandas as pd

    from .wire.sent import Sent

__all__ = ["ENDINGS", "Iteration", "ToolCallRecord", "Trace", "Usage"]

Listener = Callable[["Trace"], None]

# How a turn ended; see Iteration.ending.
ENDINGS = (
    "answer",
    "tool_calls",
    "length",
    "length_in_reasoning",
    "reasoning_only",
    "json_in_reasoning",
    "text_tool_calls",
    "tool_calls_in_reasoning",
    "content_filter",
    "empty",
    "error",
)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("this needs pandas: pip install 'rig_nb[notebook]'") from None
    return pandas


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
    source: str = "native"
    error_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Iteration:
    """One request/response round of the loop.

    `ending` says how the turn ended: answer, tool_calls, length (cut with
    answer text), length_in_reasoning (cut before any answer), reasoning_only
    (no answer, reasoning only), json_in_reasoning (no answer, a JSON object in the
    reasoning), text_tool_calls (tool calls written as text),
    tool_calls_in_reasoning (no native calls, no answer, a tool-call dialect in
    the reasoning: reported, never run), empty, or error (no reply).
    `text` is split_reasoning's answer: strip_reasoning's, or a harmony reply's final
    message. `reasoning_leaks` names the leak dialects found in the reasoning (the
    reasoning field and the reasoning split_reasoning removed from content).
    """

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
    reasoning_field: str = ""
    leaks: list[str] = field(default_factory=list)
    ending: str = ""
    streamed: bool = False
    ttft_s: float = 0.0
    chunks: int = 0
    # The thinking-switch fields sent with this request ({} when none), and the field
    # this iteration's reasoning was sent back in on the next request ("" when not sent).
    thinking_sent: dict[str, Any] = field(default_factory=dict)
    replayed: str = ""
    reasoning_leaks: list[str] = field(default_factory=list)
    # What the stream did that its wire's grammar does not allow and the reader forgave,
    # one short line each, at most 20 (DESIGN, "Streams as their specifications say").
    stream_faults: list[str] = field(default_factory=list)
    # The server dropped part of what was sent (prompt tokens fell below the previous
    # iteration's, or the server said so): the answer was made without it.
    context_cut: bool = False
    # What the server says about its own work, only the keys it reported: load_s,
    # prompt_s, prompt_tokens, decode_s, decode_tokens, cached_tokens, total_s.
    server_timings: dict[str, float] = field(default_factory=dict)
    # The opaque signature of the reply's last thinking block ("" when none).
    reasoning_signature: str = ""
    # Why this request as sent does not extend the previous iteration's, so a server's
    # prefix cache could not reuse it (`rig_nb.prefix.prefix_break`); None when it only grew.
    prefix_break: str | None = None

    @property
    def decode_tok_s(self) -> float | None:
        """Completion tokens per second after the first token (streamed replies only)."""
        tokens = _count(self.usage.get("completion_tokens"))
        decode_s = self.latency_s - self.ttft_s
        if not self.streamed or not tokens or not self.ttft_s > 0 or not decode_s > 0:
            return None
        rate = tokens / decode_s
        return rate if math.isfinite(rate) else None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Trace:
    """A run: its settings, every iteration in order, and how it ended ("ok" or the error class).

    A run whose final answer still holds a leak dialect's markup ends `leaked`, not "ok".
    """

    model: str = ""
    endpoint: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    iterations: list[Iteration] = field(default_factory=list)
    outcome: str = ""
    elapsed_s: float = 0.0
    # The agent client the run was shaped as (`RunOptions.client`), None for none.
    client: str | None = None

    def __post_init__(self) -> None:
        self._listeners: list[Listener] = []
        # What ended a failed run, in memory only (not a field: not saved, not compared).
        self.exception: BaseException | None = None
        # The last request as sent, in memory only: the next iteration's prefix_break is
        # measured against it.
        self.last_sent: Sent | None = None

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

    def received(self) -> str:
        """What the run received as text, where a crossed stream shows: each reply's raw
        content and its calls' arguments, one per line."""
        parts: list[str] = []
        for it in self.iterations:
            parts.append(it.raw_content)
            parts.extend(call.arguments for call in it.tool_calls)
        return "\n".join(parts)

    @property
    def error(self) -> str:
        """What ended a failed run ("Class: message", from its last iteration); "" when ok."""
        if self.outcome in ("", "ok") or not self.iterations:
            return ""
        return self.iterations[-1].error

    @property
    def ending(self) -> str:
        """How the last turn ended ("" before the first reply)."""
        return self.iterations[-1].ending if self.iterations else ""

    @property
    def prefix_reuse(self) -> list[float | None]:
        """Per iteration, the share of the previous iteration's prompt that the server reports
        as cached (0.0 to 1.0); None for the first and where either count is not reported."""
        shares: list[float | None] = []
        before: int | None = None
        for it in self.iterations:
            cached = _count(it.usage.get("cached_tokens"))
            share = None
            if before and cached is not None:
                share = min(1.0, cached / before)
            shares.append(share)
            before = _count(it.usage.get("prompt_tokens"))
        return shares

    @property
    def prefix_breaks(self) -> list[str]:
        """Each iteration's `prefix_break` that is set, in order: why a request as sent did
        not extend the one before it (a server's prefix cache reuses only what it extends)."""
        return [it.prefix_break for it in self.iterations if it.prefix_break is not None]

    def reasoning_shapes(self) -> list[str]:
        """Reasoning shapes seen over the run, in order, each once ("field": a reasoning field)."""
        seen: dict[str, None] = {}
        for it in self.iterations:
            for shape in it.reasoning_shape.split("+"):
                if shape not in ("", "none"):
                    seen[shape] = None
            if it.reasoning_content:
                seen["field"] = None
        return list(seen)

    def leaks(self) -> list[str]:
        """Leak dialects seen over the run, in order, each once."""
        return list(dict.fromkeys(name for it in self.iterations for name in it.leaks))

    def usage(self) -> Usage:
        """Token counts summed over the iterations (each iteration's `usage` as reported)."""
        return sum((Usage.of(it.usage) for it in self.iterations), Usage())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: Any) -> Trace:
        """A Trace from `to_dict()` output; ValueError naming the field when it does not fit."""
        try:
            text = json.dumps(data, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"invalid trace: not JSON data ({type(exc).__name__})") from None
        return cls.from_json(text)

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        """A Trace from `to_json()` output; ValueError naming the field when it does not fit."""
        from pydantic import ValidationError

        try:
            # NaN and Infinity are not JSON, in untyped fields (settings, messages) either.
            data = strict_json.loads(text)
        except ValueError as exc:
            if str(exc) == strict_json.TOO_DEEP:
                raise ValueError("invalid trace: nested too deeply") from None
            raise ValueError(f"invalid trace: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError("invalid trace: trace: Input should be an object")
        try:
            trace: Trace = _adapter().validate_json(text)
        except ValidationError as exc:
            raise ValueError(f"invalid trace: {_first_error(exc)}") from None
        except RecursionError:
            raise ValueError("invalid trace: nested too deeply") from None
        return trace

    def to_dataframe(self) -> pd.DataFrame:
        """One row per iteration (pandas is imported here, not at import time)."""
        pandas = _pandas()
        rows = [
            {
                "index": it.index,
                "finish_reason": it.finish_reason,
                "ending": it.ending,
                "reasoning_shape": it.reasoning_shape,
                "reasoning_field": it.reasoning_field,
                "leaks": ",".join(it.leaks),
                "text": it.text,
                "raw_content": it.raw_content,
                "reasoning_content": it.reasoning_content,
                "tool_calls": len(it.tool_calls),
                "tool_names": ",".join(c.name for c in it.tool_calls),
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "reasoning_tokens": usage.reasoning_tokens,
                "latency_s": it.latency_s,
                "ttft_s": it.ttft_s,
                "decode_tok_s": it.decode_tok_s,
                "streamed": it.streamed,
                "error": it.error,
            }
            for it, usage in ((it, Usage.of(it.usage)) for it in self.iterations)
        ]
        df: pd.DataFrame = pandas.DataFrame(rows, columns=ITERATION_COLUMNS)
        return df

    def tool_calls_dataframe(self) -> pd.DataFrame:
        """One row per tool call, tagged with its iteration index."""
        pandas = _pandas()
        columns = ["iteration", *(f.name for f in dataclasses.fields(ToolCallRecord))]
        rows = [
            {"iteration": it.index, **c.to_dict()} for it in self.iterations for c in it.tool_calls
        ]
        df: pd.DataFrame = pandas.DataFrame(rows, columns=columns)
        return df

    def _repr_html_(self) -> str:
        """A static, escaped table (no widgets needed)."""
        from ._html import trace_html

        return trace_html(self)


ITERATION_COLUMNS = [
    "index",
    "finish_reason",
    "ending",
    "reasoning_shape",
    "reasoning_field",
    "leaks",
    "text",
    "raw_content",
    "reasoning_content",
    "tool_calls",
    "tool_names",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "latency_s",
    "ttft_s",
    "decode_tok_s",
    "streamed",
    "error",
]


@functools.cache
def _adapter() -> Any:
    from pydantic import ConfigDict, TypeAdapter

    # pydantic takes no config for a bare dataclass, and a `__pydantic_config__` set on
    # Trace would change a public class at run time. A stdlib dataclass without one
    # takes the config of the type around it, nested ones too: the adapter is for
    # `Trace | None`, and from_json lets only a JSON object reach it.
    config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    return TypeAdapter(Trace | None, config=config)


def _first_error(exc: Any) -> str:
    err = exc.errors(include_url=False)[0]
    where = ""
    for part in err["loc"]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    return f"{where or 'trace'}: {err['msg']}"
