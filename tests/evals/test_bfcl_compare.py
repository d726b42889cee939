"""BFCL in compare: one request per case with tool_choice auto and nothing run, row outcomes
`ok` / `wrong_call` / the reply's ending, the `group` column and `summarize(df, by="group")`."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from bfcl_cases import SIMPLE, WEATHER, case

from rig_nb.compare import DEFAULT_SCENARIOS, Endpoint, compare, summarize
from rig_nb.demo import DemoServer
from rig_nb.evals import BFCL_CATEGORIES, BfclCase, bfcl_scenarios, load_bfcl
from rig_nb.testing import ScriptedServer, chat_reply, tool_call

IRRELEVANT = case("irrelevance", [WEATHER], [])


def _one(scenario_case: BfclCase, reply: dict[str, Any]) -> pd.Series:
    with ScriptedServer([reply]) as server:
        df = compare([Endpoint("s", server.base_url, "m")], scenarios=[scenario_case.scenario()])
        sent = server.requests[0].json
    assert sent["tool_choice"] == "auto" and len(server.requests) == 1
    assert [t["function"]["name"] for t in sent["tools"]] == [t.name for t in scenario_case.tools]
    assert sent["messages"] == scenario_case.question
    row = df.iloc[0]
    assert row["group"] == scenario_case.category and row["scenario"] == scenario_case.id
    return row


@pytest.mark.parametrize(
    ("reply", "outcome", "error"),
    [
        pytest.param(
            chat_reply(tool_calls=[tool_call("geometry_area", {"base": 10, "height": 5})]),
            "ok",
            "",
            id="right-call",
        ),
        pytest.param(
            chat_reply(tool_calls=[tool_call("geometry_area", {"base": 11, "height": 5})]),
            "wrong_call",
            "value_error:others: 'base': 11 is not one of [10]",
            id="wrong-value",
        ),
        pytest.param(
            chat_reply(tool_calls=[tool_call("geometry_area", "{oops")]),
            "wrong_call",
            "ast_decoder:decoder_failed: ",
            id="non-json-arguments",
        ),
        pytest.param(
            chat_reply("The area is 25."),
            "wrong_call",
            "simple_function_checker:wrong_count: 0 calls, expected 1",
            id="answered-in-text",
        ),
        pytest.param(
            chat_reply(
                '<tool_call>{"name": "geometry_area", "arguments": {"base": 10}}</tool_call>'
            ),
            "text_tool_calls",
            "written as text",
            id="call-as-text",
        ),
        pytest.param(
            chat_reply(
                "",
                reasoning_content='<tool_call>{"name": "geometry_area", "arguments": {}}'
                "</tool_call>",
            ),
            "tool_calls_in_reasoning",
            "",
            id="call-in-reasoning",
        ),
        pytest.param(
            chat_reply("", reasoning_content="Let me think about triangles."),
            "reasoning_only",
            "only reasoning",
            id="reasoning-only",
        ),
        pytest.param(
            chat_reply("The area", finish_reason="length"), "length", "", id="budget-ran-out"
        ),
    ],
)
def test_row_outcomes_say_why_a_case_missed(
    reply: dict[str, Any], outcome: str, error: str
) -> None:
    row = _one(SIMPLE, reply)
    assert row["outcome"] == outcome
    assert error in row["error"]
    if outcome == "wrong_call":
        assert row["error"].startswith(error.split(":")[0])


def test_irrelevance_is_ok_when_the_reply_answers_without_a_call() -> None:
    assert _one(IRRELEVANT, chat_reply("I have no tool for that."))["outcome"] == "ok"
    row = _one(IRRELEVANT, chat_reply(tool_calls=[tool_call("weather", {"city": "Oslo"})]))
    assert row["outcome"] == "wrong_call"
    assert row["error"].startswith("irrelevance_error:decoder_success")


def test_nothing_is_run_and_the_calls_are_kept_as_received() -> None:
    reply = chat_reply(tool_calls=[tool_call("geometry_area", "", id="c1")])
    with ScriptedServer([reply]) as server:
        df = compare([Endpoint("s", server.base_url, "m")], scenarios=[SIMPLE.scenario()])
    trace = df.attrs["traces"][0]
    assert len(trace.iterations) == 1
    (rec,) = trace.iterations[0].tool_calls
    assert (rec.name, rec.arguments, rec.result) == ("geometry_area", "", "")
    assert df.iloc[0]["error"].startswith("ast_decoder:decoder_failed")
    assert df.iloc[0]["tool_calls"] == 1


def test_other_scenarios_have_an_empty_group(demo: DemoServer) -> None:
    df = compare(
        [Endpoint("w", demo.base_url, "well-behaved")],
        scenarios=[DEFAULT_SCENARIOS[0], SIMPLE.scenario()],
        progress=False,
    )
    assert list(df["group"]) == ["", "simple_python"]
    table = summarize(df, by="group")
    assert list(table.index) == ["", "simple_python"]


def test_a_bfcl_compare_on_the_demo_personas(demo: DemoServer, bfcl_dir: Path) -> None:
    scenarios = bfcl_scenarios(BFCL_CATEGORIES, data_dir=bfcl_dir, limit=6)
    models = ["well-behaved", "hermes-text-tools", "kimi-calls-in-reasoning", "budget-think"]
    df = compare([Endpoint(m, demo.base_url, m) for m in models], scenarios=scenarios)
    assert len(df) == len(models) * 60 and set(df["group"]) == set(BFCL_CATEGORIES)
    by = df.groupby("endpoint")["outcome"]
    outcomes = {e: set(o) for e, o in by}
    # The well-behaved persona calls with arguments from the schema: some right, some not.
    assert {"ok", "wrong_call"} <= outcomes["well-behaved"]
    assert "text_tool_calls" in outcomes["hermes-text-tools"]
    assert "tool_calls_in_reasoning" in outcomes["kimi-calls-in-reasoning"]
    defined = {"ok", "wrong_call", "text_tool_calls", "tool_calls_in_reasoning", "length"}
    assert set(df["outcome"]) <= defined | {"reasoning_only", "length_in_reasoning", "empty"}
    wrong = df[df["outcome"] == "wrong_call"]
    assert wrong["error"].str.match(r"[a-z_]+:[a-z_/]+: ").all()
    table = summarize(df, by="group")
    assert list(table.index) == list(BFCL_CATEGORIES) and list(table.columns) == models
    for cell in table.to_numpy().ravel():
        match = re.fullmatch(r"(\d+)/(\d+) ok \((\d+)%\)", cell)
        assert match and int(match[2]) == 6
        assert int(match[3]) == 100 * int(match[1]) // 6


def test_a_group_cell_never_rounds_up() -> None:
    rows = [{"endpoint": "e", "group": "g", "outcome": "ok"}] * 199
    rows.append({"endpoint": "e", "group": "g", "outcome": "wrong_call"})
    assert summarize(pd.DataFrame(rows), by="group").loc["g", "e"] == "199/200 ok (99%)"
    with pytest.raises(ValueError, match="by must be"):
        summarize(pd.DataFrame(rows), by="category")
    with pytest.raises(ValueError, match="group"):
        summarize(pd.DataFrame(rows).drop(columns="group"), by="group")


def test_a_case_scenario_keeps_its_options(bfcl_dir: Path) -> None:
    (first,) = load_bfcl("live_simple", data_dir=bfcl_dir, limit=1)
    scenario = replace(first.scenario(), max_tokens=64, extra_body={"seed": 1})
    with ScriptedServer([chat_reply("no")]) as server:
        compare([Endpoint("s", server.base_url, "m")], scenarios=[scenario])
        sent = server.requests[0].json
    assert sent["max_tokens"] == 64 and sent["seed"] == 1
    assert json.dumps(sent["tools"][0]["function"]["parameters"]).count('"dict"') == 0
