"""Trace records: derived JSON shape, exact round trip, hostile trace files, DataFrames."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from rig_nb import Iteration, ToolCallRecord, Trace
from rig_nb.trace import ENDINGS, Usage, _adapter


def full_trace() -> Trace:
    return Trace(
        model="m",
        endpoint="127.0.0.1:1",
        settings={"max_tokens": 64, "tools": ["echo"], "extra_body": {"grammar": "root ::= x"}},
        outcome="IterationLimitError",
        elapsed_s=1.25,
        iterations=[
            Iteration(
                index=0,
                messages=[{"role": "user", "content": "go \u00e9"}],
                raw_content="<think>a</think>b",
                reasoning_content="why",
                reasoning_shape="closed",
                text="b",
                finish_reason="tool_calls",
                tool_calls=[
                    ToolCallRecord(
                        id="c1",
                        received_id="",
                        name="echo",
                        arguments="{}",
                        result="error: boom",
                        is_error=True,
                        duration_s=0.01,
                        source="text",
                        error_type="RuntimeError",
                    )
                ],
                usage={"prompt_tokens": 2**63, "completion_tokens": 5, "reasoning_tokens": 3},
                latency_s=0.5,
                error="IterationLimitError: cap",
                reasoning_field="reasoning",
                leaks=["tool-call-tag"],
                ending="tool_calls",
                streamed=True,
                ttft_s=0.1,
                chunks=12,
            )
        ],
    )


def test_the_json_shape_is_the_fields() -> None:
    data = full_trace().to_dict()
    assert list(data) == [f.name for f in dataclasses.fields(Trace)]
    assert list(data["iterations"][0]) == [f.name for f in dataclasses.fields(Iteration)]
    call = data["iterations"][0]["tool_calls"][0]
    assert list(call) == [f.name for f in dataclasses.fields(ToolCallRecord)]


def test_round_trip_is_exact_and_listeners_are_not_data() -> None:
    trace = full_trace()
    trace.add_listener(lambda t: None)
    text = trace.to_json()
    back = Trace.from_json(text)
    assert back == trace and back.to_json() == text
    assert Trace.from_dict(trace.to_dict()) == trace
    assert "listener" not in text and "exception" not in text


def _bad(**change: Any) -> str:
    data = full_trace().to_dict()
    it = data["iterations"][0]
    for key, value in change.items():
        if key.startswith("it_"):
            it[key[3:]] = value
        elif key.startswith("call_"):
            it["tool_calls"][0][key[5:]] = value
        else:
            data[key] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        pytest.param(_bad(elapsed_s="fast"), "elapsed_s", id="string-elapsed"),
        pytest.param(_bad(it_raw_content=7), "iterations[0].raw_content", id="int-raw-content"),
        pytest.param(_bad(it_usage={"prompt_tokens": "9"}), "usage.prompt_tokens", id="usage-str"),
        pytest.param(
            _bad(it_usage={"prompt_tokens": True}), "usage.prompt_tokens", id="usage-bool"
        ),
        pytest.param(_bad(it_streamed="yes"), "iterations[0].streamed", id="str-bool"),
        pytest.param(_bad(call_is_error=1), "tool_calls[0].is_error", id="int-bool"),
        pytest.param(_bad(bogus=1), "bogus", id="unknown-key"),
        pytest.param(_bad(it_bogus=1), "iterations[0].bogus", id="unknown-iteration-key"),
        pytest.param(_bad(call_bogus=1), "tool_calls[0].bogus", id="unknown-call-key"),
        pytest.param(_bad(iterations={"0": {}}), "iterations", id="iterations-not-a-list"),
        pytest.param(_bad(it_leaks="harmony"), "leaks", id="leaks-not-a-list"),
        pytest.param("[]", "trace", id="not-an-object"),
        pytest.param("null", "trace", id="null"),
        pytest.param('{"elapsed_s": NaN}', "NaN", id="nan"),
        pytest.param('{"settings": {"x": Infinity}}', "Infinity", id="infinity-in-settings"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nested", id="deep-nesting"),
        pytest.param('{"settings": ' + "[" * 100_000 + "]" * 100_000 + "}", "", id="deep-inside"),
        pytest.param('{"model": "m"', "JSON", id="truncated"),
        pytest.param(b"\xff\xfe{}", "", id="invalid-utf8"),
    ],
)
def test_a_hostile_trace_file_is_a_value_error_naming_the_field(
    text: str | bytes, names: str
) -> None:
    with pytest.raises(ValueError) as info:
        Trace.from_json(text)
    message = str(info.value)
    assert message.startswith("invalid trace")
    assert names in message


def test_reading_a_trace_changes_no_public_class() -> None:
    classes = (Trace, Iteration, ToolCallRecord)
    _adapter.cache_clear()  # the first read builds the validator
    before = [sorted(vars(cls)) for cls in classes]
    assert Trace.from_json(full_trace().to_json()) == full_trace()
    with pytest.raises(ValueError, match="bogus"):
        Trace.from_json(_bad(call_bogus=1))
    assert [sorted(vars(cls)) for cls in classes] == before
    assert not [name for names in before for name in names if "pydantic" in name]


def test_from_dict_rejects_what_is_not_json() -> None:
    with pytest.raises(ValueError, match="not JSON data"):
        Trace.from_dict({"settings": {"x": object()}})


def test_usage_records_sum_and_skip_what_is_not_a_count() -> None:
    a = Usage.of({"prompt_tokens": 3, "completion_tokens": "x", "reasoning_tokens": 2})
    b = Usage.of({"prompt_tokens": 4, "completion_tokens": 5, "cached_tokens": True})
    assert a == Usage(3, 0, 2, None) and b == Usage(4, 5, None, None)
    assert a + b == Usage(7, 5, 2, None)
    trace = Trace(iterations=[Iteration(usage={"prompt_tokens": 3}), Iteration(usage={})])
    assert trace.usage() == Usage(3, 0, None, None)


def test_decode_speed_needs_a_stream_and_both_figures() -> None:
    it = Iteration(usage={"completion_tokens": 50}, latency_s=1.5, ttft_s=0.5, streamed=True)
    assert it.decode_tok_s == pytest.approx(50.0)
    assert dataclasses.replace(it, streamed=False).decode_tok_s is None
    assert dataclasses.replace(it, usage={}).decode_tok_s is None
    assert dataclasses.replace(it, ttft_s=0.0).decode_tok_s is None


def test_dataframes_have_the_new_columns() -> None:
    trace = full_trace()
    df = trace.to_dataframe()
    for column in ("ending", "leaks", "reasoning_field", "ttft_s", "decode_tok_s", "streamed"):
        assert column in df.columns
    assert df["ending"].iloc[0] == "tool_calls" and df["leaks"].iloc[0] == "tool-call-tag"
    calls = trace.tool_calls_dataframe()
    assert list(calls["source"]) == ["text"] and list(calls["error_type"]) == ["RuntimeError"]


def test_derived_views_of_a_run() -> None:
    trace = Trace(
        outcome="OutputLimitError",
        iterations=[
            Iteration(reasoning_shape="unopened", leaks=["harmony"], ending="tool_calls"),
            Iteration(
                reasoning_shape="closed+unclosed",
                reasoning_content="r",
                leaks=["harmony", "dsml"],
                ending="length",
                error="OutputLimitError: cut",
            ),
        ],
    )
    assert trace.reasoning_shapes() == ["unopened", "closed", "unclosed", "field"]
    assert trace.leaks() == ["harmony", "dsml"]
    assert (trace.ending, trace.error) == ("length", "OutputLimitError: cut")
    assert Trace(outcome="ok", iterations=[Iteration(error="x")]).error == ""
    assert set(ENDINGS) >= {"answer", "reasoning_only", "text_tool_calls", "error"}
