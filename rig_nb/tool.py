"""Tools the loop can call, their validation, and `@tool`."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

from .wire import tool_spec

__all__ = ["Tool", "tool", "validate_tools"]

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Tool:
    """A function the model may call: `run(args) -> str`; an exception is fed back as an error."""

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    run: Callable[[dict[str, Any]], str] | None = field(default=None, repr=False)

    def __call__(self, args: dict[str, Any]) -> str:
        if self.run is None:
            raise ValueError(f"tool {self.name!r} has no run function")
        return self.run(args)

    def to_openai(self) -> dict[str, Any]:
        """The tool as chat completions declares it."""
        return tool_spec(self.name, self.description, self.input_schema)


def validate_tools(tools: Sequence[Tool]) -> None:
    """Non-empty unique names matching ^[a-zA-Z0-9_-]{1,64}$, a run function, a description."""
    seen: set[str] = set()
    for t in tools:
        if not isinstance(t, Tool):
            raise ValueError(f"not a Tool: {type(t).__name__}")
        if not _NAME_RE.fullmatch(t.name):
            raise ValueError(f"invalid tool name {t.name!r}: want ^[a-zA-Z0-9_-]{{1,64}}$")
        if t.name in seen:
            raise ValueError(f"duplicate tool name {t.name!r}")
        seen.add(t.name)
        if t.run is None:
            raise ValueError(f"tool {t.name!r} has no run function")
        if not t.description.strip():
            raise ValueError(f"tool {t.name!r} has no description")


def _from_function(func: Callable[..., Any], name: str | None, description: str | None) -> Tool:
    from pydantic import ConfigDict, TypeAdapter

    doc = inspect.getdoc(func) or ""
    desc = description if description is not None else doc.strip()
    if not desc:
        raise ValueError(f"@tool needs a docstring or description= for {func.__name__!r}")
    sig = inspect.signature(func)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise ValueError(f"@tool function {func.__name__!r}: only named parameters are allowed")
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"@tool function {func.__name__!r}: parameter {p.name!r} has no type")
    adapter: TypeAdapter[Any] = TypeAdapter(cast(Any, func), config=ConfigDict(extra="forbid"))
    schema = adapter.json_schema()
    schema.pop("additionalProperties", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema.pop("title", None)

    def run(args: dict[str, Any]) -> str:
        result = adapter.validate_python(args)
        return result if isinstance(result, str) else str(result)

    return Tool(name=name or func.__name__, description=desc, input_schema=schema, run=run)


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Build a Tool from a typed, documented function; its schema comes from pydantic.

    Arguments are validated against the signature before the function runs; a
    validation failure is a tool error fed back to the model.
    """
    if func is not None:
        return _from_function(func, name, description)

    def wrap(f: Callable[..., Any]) -> Tool:
        return _from_function(f, name, description)

    return wrap
