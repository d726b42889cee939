"""BfclCase.check on hand-written cases: each of BFCL's rules, its error type strings, and a
verdict in linear time on hostile calls (non-JSON, unknown names, 10,000 calls, deep nesting).

The same rules are held to bfcl-eval's own checker case by case on BFCL's data in
test_bfcl_differential.py; these cases name one rule each.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from bfcl_cases import (
    AREA,
    DICT_ANSWER,
    DICT_RULES,
    LIST_RULES,
    LISTS,
    OPTIONS,
    SIMPLE,
    SIMPLE_RULES,
    TIME,
    WEATHER,
    call,
    case,
    fn,
)


@pytest.mark.parametrize(
    ("calls", "verdict"),
    SIMPLE_RULES,
)
def test_simple_rules(calls: list[tuple[str, Any]], verdict: str) -> None:
    assert SIMPLE.check(calls) == (verdict == "", verdict)


def test_a_missing_optional_without_empty_string_is_an_error() -> None:
    strict = case(
        "simple_python", [AREA], [{"geometry.area": {"base": [10], "height": [5.0], "unit": ["m"]}}]
    )
    assert strict.check([call("geometry_area", base=10, height=5.0)]) == (
        False,
        "simple_function_checker:missing_optional",
    )


@pytest.mark.parametrize(
    ("answer", "value", "verdict"),
    LIST_RULES,
)
def test_list_rules(answer: list[Any], value: Any, verdict: str) -> None:
    c = case("simple_python", [LISTS], [{"stats.mean": {"values": answer}}])
    assert c.check([call("stats_mean", values=value)]) == (verdict == "", verdict)


def test_string_lists_are_standardized_item_by_item() -> None:
    tags = fn("tag", {"names": {"type": "array", "items": {"type": "string"}}}, ["names"])
    c = case("simple_python", [tags], [{"tag": {"names": [["New York", "Los Angeles"]]}}])
    assert c.check([call("tag", names=["new-york", "LOS ANGELES"])]) == (True, "")


@pytest.mark.parametrize(
    ("value", "verdict"),
    DICT_RULES,
)
def test_dict_rules(value: dict[str, Any], verdict: str) -> None:
    c = case("simple_python", [OPTIONS], DICT_ANSWER)
    assert c.check([call("configure", options=value)]) == (verdict == "", verdict)


def test_a_dict_check_reports_a_missing_key_after_a_wrong_value() -> None:
    # BFCL's dict_checker runs its missing-key loop after a failed value: its type wins.
    answer = [{"configure": {"options": [{"mode": ["fast"], "level": [2]}]}}]
    c = case("simple_python", [OPTIONS], answer)
    assert c.check([call("configure", options={"mode": "slow"})]) == (
        False,
        "value_error:dict_key",
    )


def test_parallel_calls_match_in_any_order() -> None:
    c = case(
        "parallel",
        [WEATHER],
        [{"weather": {"city": ["Paris"]}}, {"weather": {"city": ["Oslo"]}}],
    )
    assert c.check([call("weather", city="oslo"), call("weather", city="Paris")]) == (True, "")
    assert c.check([call("weather", city="Oslo")]) == (
        False,
        "parallel_function_checker_no_order:wrong_count",
    )
    assert c.check([call("weather", city="Oslo"), call("weather", city="Rome")]) == (
        False,
        "parallel_function_checker_no_order:cannot_find_match",
    )


def test_parallel_matching_is_greedy_as_bfcl_does_it() -> None:
    # The first answer takes the first call that fits it, even when that call was the only
    # one the second answer could take: BFCL counts this a miss, and so does rig_nb.
    c = case(
        "parallel",
        [WEATHER],
        [{"weather": {"city": ["Paris", "Oslo"]}}, {"weather": {"city": ["Paris"]}}],
    )
    assert c.check([call("weather", city="Paris"), call("weather", city="Oslo")]) == (
        False,
        "parallel_function_checker_no_order:cannot_find_match",
    )
    assert c.check([call("weather", city="Oslo"), call("weather", city="Paris")]) == (True, "")


def test_multiple_judges_the_one_expected_function() -> None:
    c = case("multiple", [WEATHER, TIME], [{"local_time": {"city": ["Tokyo"]}}])
    assert c.check([call("local_time", city="Tokyo")]) == (True, "")
    assert c.check([call("weather", city="Tokyo")]) == (
        False,
        "simple_function_checker:wrong_func_name",
    )
    assert c.check([]) == (False, "multiple_function_checker:wrong_count")


@pytest.mark.parametrize(
    ("calls", "ok"),
    [
        pytest.param([], True, id="no-call"),
        pytest.param([call("weather", city="Oslo")], False, id="a-call"),
        pytest.param([("weather", "{oops")], True, id="undecodable-call-is-no-call"),
        pytest.param([("weather", "[1]")], True, id="not-call-format-is-no-call"),
    ],
)
def test_irrelevance_is_correct_without_a_call(calls: list[tuple[str, str]], ok: bool) -> None:
    c = case("irrelevance", [WEATHER], [])
    assert c.check(calls) == (ok, "" if ok else "irrelevance_error:decoder_success")


def test_any_is_checked_as_a_string() -> None:
    anything = fn("store", {"value": {"type": "any"}}, ["value"])
    c = case("simple_python", [anything], [{"store": {"value": ["Blue Sky"]}}])
    assert c.check([call("store", value="blue sky")]) == (True, "")
    assert c.check([call("store", value=5)]) == (False, "type_error:simple")


def _cpu(run: Any) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: [call("weather", city="Oslo")] * n, id="parallel-calls"),
        pytest.param(lambda n: [("weather", "{" * n)], id="non-json"),
        pytest.param(lambda n: [("x" * n, "{}")], id="unknown-name"),
        pytest.param(lambda n: [("weather", "[" * n + "]" * n)], id="deep-nesting"),
        pytest.param(
            lambda n: [("weather", json.dumps({"city": [[[["Oslo"]]]] * n}))], id="wide-value"
        ),
    ],
)
@pytest.mark.parametrize("category", ["simple_python", "parallel", "irrelevance"])
def test_check_is_linear_on_hostile_calls(make: Any, category: str) -> None:
    answer = [] if category == "irrelevance" else [{"weather": {"city": ["Oslo"]}}]
    c = case(category, [WEATHER], answer)
    small, large = make(1_000), make(10_000)
    ok, verdict = c.check(large)
    assert isinstance(ok, bool) and isinstance(verdict, str)
    # Ten times the input within 30 times the CPU (quadratic would be 100 times), plus noise.
    assert _cpu(lambda: c.check(large)) <= 30 * _cpu(lambda: c.check(small)) + 0.02


def test_ten_thousand_parallel_calls_get_bfcl_verdicts() -> None:
    c = case("parallel", [WEATHER], [{"weather": {"city": ["Oslo"]}}] * 2)
    many = [call("weather", city="Oslo")] * 10_000
    assert c.check(many) == (False, "parallel_function_checker_no_order:wrong_count")
    assert c.check([*many[:-1], ("weather", "{")]) == (False, "ast_decoder:decoder_failed")
    assert case("irrelevance", [WEATHER], []).check(many) == (
        False,
        "irrelevance_error:decoder_success",
    )


def test_deep_nesting_fails_to_decode_as_in_bfcl() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert SIMPLE.check([("geometry_area", deep)]) == (False, "ast_decoder:decoder_failed")
    nested = '{"base": ' + "[" * 500 + "]" * 500 + ', "height": 5.0}'
    assert SIMPLE.check([("geometry_area", nested)]) == (False, "type_error:simple")


@pytest.mark.parametrize(
    "text",
    [
        '{"base": 10, "height": 5}',
        ' \t\n{"base": 10, "height": 5}\r\n ',
        '\u00a0{"base": 10, "height": 5}',
        '\ufeff{"base": 10, "height": 5}',
        '{"base": 10, "height": 5} x',
        '{"base": 10, "height": 5}{}',
        '{"base": NaN, "height": 5}',
        "",
        "   ",
        "null",
        '"text"',
        '{"base": 1' + "0" * 5000 + ', "height": 5}',
    ],
)
def test_arguments_decode_exactly_as_json_loads(text: str) -> None:
    try:
        value = json.loads(text)
    except ValueError:
        expected = "ast_decoder:decoder_failed"
    else:
        expected = "" if isinstance(value, dict) else "ast_decoder:decoder_wrong_output_format"
    verdict = SIMPLE.check([("geometry_area", text)])[1]
    assert verdict == expected or (expected == "" and not verdict.startswith("ast_decoder"))
