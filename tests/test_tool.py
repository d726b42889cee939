from __future__ import annotations

from typing import Any

import pytest

from rig_nb import Tool, tool
from rig_nb.tool import validate_tools


def _ok(args: dict[str, Any]) -> str:
    return "ok"


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param([Tool("", "d", {}, _ok)], id="empty-name"),
        pytest.param([Tool("a b", "d", {}, _ok)], id="space"),
        pytest.param([Tool("x" * 65, "d", {}, _ok)], id="too-long"),
        pytest.param([Tool("a", "d", {}, _ok), Tool("a", "d", {}, _ok)], id="duplicate"),
        pytest.param([Tool("a", "d", {}, None)], id="no-run"),
        pytest.param([Tool("a", "  ", {}, _ok)], id="no-description"),
    ],
)
def test_invalid_tools(tools: list[Tool]) -> None:
    with pytest.raises(ValueError):
        validate_tools(tools)


def test_valid_tools() -> None:
    validate_tools([Tool("a-b_C9", "d", {}, _ok), Tool("x" * 64, "d", {}, _ok)])


def test_decorator_schema_and_run() -> None:
    @tool
    def weather(city: str, unit: str = "C") -> str:
        """Current weather for a city."""
        return f"{city}: 21 {unit}"

    assert weather.name == "weather"
    assert weather.description == "Current weather for a city."
    schema = weather.input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"]["type"] == "string"
    assert weather({"city": "Oslo"}) == "Oslo: 21 C"
    with pytest.raises(ValueError):
        weather({"town": "Oslo"})


def test_decorator_with_options() -> None:
    @tool(name="sum2", description="Sum.")
    def add(a: int, b: int) -> int:
        return a + b

    assert (add.name, add.description) == ("sum2", "Sum.")
    assert add({"a": 2, "b": 3}) == "5"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("def f(a: int) -> str:\n    return ''", id="no-doc"),
        pytest.param("def f(a) -> str:\n    '''Doc.'''\n    return ''", id="untyped"),
        pytest.param("def f(*a: int) -> str:\n    '''Doc.'''\n    return ''", id="varargs"),
    ],
)
def test_decorator_rejects(source: str) -> None:
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises(ValueError):
        tool(ns["f"])
