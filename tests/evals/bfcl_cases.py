"""Hand-written BFCL cases, one rule each: test_bfcl_check.py asserts their verdicts and
test_bfcl_differential.py holds them to bfcl-eval's own checker too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rig_nb.evals import BfclCase


def fn(name: str, params: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} does something.",
        "parameters": {"type": "dict", "properties": params, "required": required or []},
    }


AREA = fn(
    "geometry.area",
    {
        "base": {"type": "integer", "description": "base"},
        "height": {"type": "float", "description": "height"},
        "unit": {"type": "string", "description": "unit"},
    },
    ["base", "height"],
)
AREA_ANSWER = [{"geometry.area": {"base": [10], "height": [5.0], "unit": ["square meters", ""]}}]


def case(category: str, functions: list[dict[str, Any]], answer: list[dict[str, Any]]) -> BfclCase:
    return BfclCase(
        f"{category}_0",
        category,
        question=[{"role": "user", "content": "Do it."}],
        functions=functions,
        answer=answer,
    )


def call(name: str, **args: Any) -> tuple[str, str]:
    return name, json.dumps(args)


SIMPLE = case("simple_python", [AREA], AREA_ANSWER)


LISTS = fn("stats.mean", {"values": {"type": "array", "items": {"type": "float"}}}, ["values"])
OPTIONS = fn("configure", {"options": {"type": "dict", "properties": {}}}, ["options"])
WEATHER = fn("weather", {"city": {"type": "string"}}, ["city"])
TIME = fn("local_time", {"city": {"type": "string"}}, ["city"])

# (calls, BFCL's error type or "") on SIMPLE
SIMPLE_RULES = [
    pytest.param([call("geometry_area", base=10, height=5.0)], "", id="optional-left-out"),
    pytest.param([call("geometry_area", base=10, height=5)], "", id="int-for-float"),
    pytest.param(
        [call("geometry_area", base=10, height=5.0, unit="Square-Meters")],
        "",
        id="string-standardized",
    ),
    pytest.param(
        [call("geometry.area", base=10, height=5.0)],
        "simple_function_checker:wrong_func_name",
        id="dot-not-underscore",
    ),
    pytest.param(
        [call("geometry_area", base=10)],
        "simple_function_checker:missing_required",
        id="missing-required",
    ),
    pytest.param(
        [call("geometry_area", base=10, height=5.0, color="red")],
        "simple_function_checker:unexpected_param",
        id="unexpected-param",
    ),
    pytest.param(
        [call("geometry_area", base=10.0, height=5.0)], "type_error:simple", id="float-for-int"
    ),
    pytest.param(
        [call("geometry_area", base=True, height=5.0)], "type_error:simple", id="bool-for-int"
    ),
    pytest.param(
        [call("geometry_area", base=11, height=5.0)], "value_error:others", id="wrong-int"
    ),
    pytest.param(
        [call("geometry_area", base=10, height=5.0, unit="feet")],
        "value_error:string",
        id="wrong-string",
    ),
    pytest.param([], "simple_function_checker:wrong_count", id="no-call"),
    pytest.param(
        [call("geometry_area", base=10, height=5.0)] * 2,
        "simple_function_checker:wrong_count",
        id="two-calls",
    ),
    pytest.param([("geometry_area", "{not json")], "ast_decoder:decoder_failed", id="non-json"),
    pytest.param([("geometry_area", "")], "ast_decoder:decoder_failed", id="blank-args"),
    pytest.param(
        [("geometry_area", "[1, 2]")],
        "ast_decoder:decoder_wrong_output_format",
        id="args-not-object",
    ),
    pytest.param([("geometry_area", {"base": 10, "height": 5.0})], "", id="args-given-decoded"),
]

# (possible values, the model's value, verdict) for LISTS' parameter
LIST_RULES = [
    pytest.param([[1.0, 2.0]], [1.0, 2.0], "", id="list-equal"),
    pytest.param([[1.0, 2.0]], [2.0, 1.0], "value_error:list/tuple", id="list-order-matters"),
    pytest.param([[1.0, 2.0]], [1, 2], "type_error:nested", id="nested-int-for-float"),
    pytest.param([[1.0, 2.0]], ["a"], "type_error:nested", id="nested-wrong-type"),
    pytest.param([[1.0, 2.0]], "1,2", "type_error:simple", id="string-for-list"),
    pytest.param([[1.0], ""], [], "", id="empty-string-stands-for-empty-list"),
]

# (the model's value, verdict) for OPTIONS' parameter, answers DICT_ANSWER
DICT_ANSWER = [{"configure": {"options": [{"mode": ["fast"], "level": [2, ""]}]}}]
DICT_RULES = [
    pytest.param({"mode": "Fast", "level": 2}, "", id="dict-standardized"),
    pytest.param({"mode": "fast"}, "", id="optional-key-left-out"),
    pytest.param({"mode": "slow"}, "value_error:dict_value", id="dict-value"),
    pytest.param({"mode": "fast", "extra": 1}, "value_error:dict_key", id="unexpected-key"),
    pytest.param({"level": 2}, "value_error:dict_key", id="missing-key"),
    pytest.param({"mode": "slow", "extra": 1}, "value_error:dict_value", id="first-failure"),
]


def edge_calls() -> list[tuple[BfclCase, list[tuple[str, Any]]]]:
    """Every hand-written case with the calls its rules judge, for the differential test."""
    out: list[tuple[BfclCase, list[tuple[str, Any]]]] = []
    out += [(SIMPLE, list(p.values[0])) for p in SIMPLE_RULES]
    for p in LIST_RULES:
        answer, value, _ = p.values
        c = case("simple_python", [LISTS], [{"stats.mean": {"values": answer}}])
        out.append((c, [call("stats_mean", values=value)]))
    dicts = case("simple_python", [OPTIONS], DICT_ANSWER)
    out += [(dicts, [call("configure", options=p.values[0])]) for p in DICT_RULES]
    return out
