"""The demo personas one by one: the failure each reproduces, seen through the real Client."""

from __future__ import annotations

import json
import re

import pytest
from demo_requests import ANSWER, CALLS, TEXT, calls_of, chat, loop, post, probe

from rig_nb import (
    BackendError,
    Client,
    decode_json_object,
    split_reasoning,
)
from rig_nb.demo import (
    XSS_IMG,
    XSS_SCRIPT,
    DemoServer,
    demo_tools,
)

TEXT_TOOL_PERSONAS = [
    "hermes-text-tools",
    "gpt-oss-raw-harmony",
    "qwen3-coder-text-calls",
    "mistral-text-calls",
    "mistral-mlx-text-calls",
]


def test_well_behaved_is_clean(demo_client: Client) -> None:
    _, trace = loop(demo_client, "well-behaved")
    assert [
        [(c.name, json.loads(c.arguments)) for c in it.tool_calls] for it in trace.iterations
    ] == [
        [("get_weather", {"city": "Lisbon"}), ("get_weather", {"city": "Oslo"})],
        [("add", {"a": 21, "b": 4})],
        [],
    ]
    assert trace.iterations[-1].raw_content == trace.iterations[-1].text == ANSWER
    assert not any(it.reasoning_content for it in trace.iterations)


def test_qwen3_leaks_reasoning_behind_a_bare_closing_tag(demo_client: Client) -> None:
    _, trace = loop(demo_client, "qwen3-no-parser")
    for it in trace.iterations:
        assert "<think>" not in it.raw_content
        assert it.raw_content.count("</think>") == 1
        assert it.raw_content.startswith("Okay,")
        assert "</think>" not in it.text and "Okay," not in it.text
    assert trace.iterations[-1].text == ANSWER


def test_r1_sketch_is_shorter_than_the_answer_the_decoder_keeps(demo_client: Client) -> None:
    _, trace = loop(demo_client, "r1-json-sketch")
    raw = trace.iterations[-1].raw_content
    think = raw[: raw.index("</think>")]
    assert '{"answer": "...", "sources": []}' in think
    assert "\njson\n{" in raw
    decoded = decode_json_object(raw)
    assert decoded["answer"] == ANSWER
    assert [s["tool"] for s in decoded["sources"]] == ["get_weather", "get_weather", "add"]


def test_budget_think_stops_inside_think_and_finishes_with_room(demo_client: Client) -> None:
    _, small = loop(demo_client, "budget-think", max_tokens=512)
    it = small.iterations[0]
    assert it.finish_reason == "length"
    assert it.usage["completion_tokens"] == 512
    assert it.raw_content.startswith("<think>") and "</think>" not in it.raw_content
    assert it.text == "" and not it.tool_calls
    outcome, big = loop(demo_client, "budget-think", max_tokens=4096)
    assert outcome == "ok"
    assert {i.reasoning_shape for i in big.iterations} == {"closed"}
    assert big.iterations[-1].text == ANSWER
    assert big.iterations[0].usage["completion_tokens"] > 600


def test_reasoning_field_keeps_content_clean(demo_client: Client, demo: DemoServer) -> None:
    _, trace = loop(demo_client, "reasoning-field")
    assert all(it.reasoning_content.startswith("Okay,") for it in trace.iterations)
    assert trace.iterations[-1].raw_content == ANSWER
    message = chat(demo, "reasoning-field")["choices"][0]["message"]
    assert message["content"].startswith("I cannot check live weather")
    assert message["reasoning_content"].startswith("Okay, the user asks")


def test_reasoning_field_with_thinking_off_puts_the_answer_in_the_field(demo: DemoServer) -> None:
    # QwenLM/Qwen3#1297: enable_thinking=False, content null, the answer in reasoning_content.
    body = chat(demo, "reasoning-field", chat_template_kwargs={"enable_thinking": False})
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["reasoning_content"].startswith("I cannot check live weather")
    assert body["choices"][0]["finish_reason"] == "stop"


def test_ollama_answer_lands_in_the_reasoning_field(demo_client: Client, demo: DemoServer) -> None:
    _, trace = loop(demo_client, "ollama-reasoning")
    last = trace.iterations[-1]
    assert last.text == "" and last.finish_reason == "stop"
    assert last.reasoning_content.endswith(ANSWER)
    message = chat(demo, "ollama-reasoning")["choices"][0]["message"]
    assert "reasoning" in message and "reasoning_content" not in message


def test_hermes_writes_tool_calls_as_text(demo_client: Client) -> None:
    _, trace = loop(demo_client, "hermes-text-tools")
    text = trace.iterations[0].text
    assert text.startswith("<tool_call>\n") and text.endswith("</tool_call>")
    assert decode_json_object(text) == {"name": "get_weather", "arguments": {"city": "Lisbon"}}
    assert text.count("<tool_call>") == 2


def test_tool_spinner_looks_like_llama_cpp(demo_client: Client, demo: DemoServer) -> None:
    _, trace = loop(demo_client, "tool-spinner")
    records = trace.tool_calls
    assert [r.is_error for r in records] == [False] * 3 + [True] * 5
    assert all(r.result == "error: arguments are not valid JSON" for r in records[3:])
    assert all(r.received_id.startswith(f"call__0_{r.name}_cmpl-") for r in records)
    message = chat(demo, "tool-spinner", tools=[t.to_openai() for t in demo_tools()])
    message = message["choices"][0]["message"]
    assert message["content"].startswith("To answer this I would call")  # no tool_choice: text
    auto = chat(demo, "tool-spinner", tools=[demo_tools()[0].to_openai()], tool_choice="auto")
    message = auto["choices"][0]["message"]
    assert message["content"] is None
    assert message["function_call"] == {"name": "get_weather:", "arguments": '{"city": "Lisbon"}'}


def test_tool_spinner_tool_choice_matrix(demo_client: Client) -> None:
    assert probe(demo_client, "tool-spinner", None) == "NoToolCallingError"
    with pytest.raises(BackendError) as info:
        demo_client.probe_tool_calling("tool-spinner", tool_choice="required")
    assert info.value.status_code == 500


def test_html_injector_puts_markup_everywhere(demo_client: Client) -> None:
    _, trace = loop(demo_client, "html-injector")
    first, last = trace.iterations[0], trace.iterations[-1]
    assert XSS_IMG in first.raw_content and XSS_SCRIPT in first.reasoning_content
    assert all(XSS_IMG in json.loads(c.arguments)["city"] for c in first.tool_calls)
    assert XSS_IMG in first.tool_calls[0].result  # the tool's error echoes the argument
    assert XSS_IMG in last.text and XSS_SCRIPT in last.text
    # Both lookups failed, so there was nothing to add.
    assert [c.name for c in trace.tool_calls] == ["get_weather", "get_weather"]


@pytest.mark.parametrize("model", TEXT_TOOL_PERSONAS)
@pytest.mark.parametrize(
    "recover", [pytest.param(False, id="as-text"), pytest.param(True, id="recovered")]
)
def test_text_tool_calls_run_only_when_recovered(
    demo_client: Client, model: str, recover: bool
) -> None:
    outcome, trace = loop(demo_client, model, recover_text_tool_calls=recover)
    assert outcome == ("ok" if recover else TEXT)
    last = trace.iterations[-1]
    if not recover:
        assert [it.ending for it in trace.iterations] == ["text_tool_calls"]
        assert trace.tool_calls == []
        return
    # The turns still ended in text tool calls: the loop ran them, the server did not parse them.
    assert [it.ending for it in trace.iterations] == [TEXT, TEXT, "answer"]
    assert calls_of(trace) == CALLS
    assert {c.source for c in trace.tool_calls} == {"text"}
    assert not any(c.is_error for c in trace.tool_calls)
    assert last.text.endswith(ANSWER)
    # What the loop acted on is echoed as ordinary tool_calls, markup left out.
    echoed = trace.iterations[1].messages[2]
    assert echoed["role"] == "assistant" and len(echoed["tool_calls"]) == 2
    markers = ("<tool_call>", "</tool_call>", "<function=", "[TOOL_CALLS]", "to=functions.")
    assert not any(m in echoed["content"] for m in markers)


@pytest.mark.parametrize(
    "recover", [pytest.param(False, id="native-only"), pytest.param(True, id="recovering")]
)
def test_a_call_drafted_in_reasoning_runs_once(demo_client: Client, recover: bool) -> None:
    outcome, trace = loop(demo_client, "draft-then-call", recover_text_tool_calls=recover)
    assert outcome == "ok"
    assert calls_of(trace) == CALLS  # three calls, not six, and not the last draft
    assert {c.source for c in trace.tool_calls} == {"native"}
    first, last = trace.iterations[0], trace.iterations[-1]
    assert first.raw_content.count("<tool_call>") == 2  # both calls drafted in <think>
    assert '<tool_call>{"name": "add"' in last.raw_content  # a last draft, never made
    assert last.text == ANSWER and last.ending == "answer"


def test_raw_harmony_is_channel_tokens_and_commentary_calls(demo_client: Client) -> None:
    _, trace = loop(demo_client, "gpt-oss-raw-harmony")
    raw = trace.iterations[0].raw_content
    assert raw.startswith("<|channel|>analysis<|message|>Okay, the user asks")
    assert raw.count("<|start|>assistant<|channel|>commentary to=functions.get_weather ") == 2
    assert '<|constrain|>json<|message|>{"city": "Lisbon"}<|call|>' in raw
    _, recovered = loop(demo_client, "gpt-oss-raw-harmony", recover_text_tool_calls=True)
    final = recovered.iterations[-1].raw_content
    assert "<|end|><|start|>assistant<|channel|>final<|message|>" + ANSWER in final


def test_stripped_harmony_glues_channel_names_to_the_words(demo_client: Client) -> None:
    _, trace = loop(demo_client, "gpt-oss-stripped-tokens")
    assert all(it.raw_content.startswith("analysisOkay, ") for it in trace.iterations)
    last = trace.iterations[-1]
    assert last.raw_content.endswith("assistantfinal" + ANSWER)
    # split as the tokened form is: the analysis is reasoning, the final message the answer
    assert (last.text, trace.outcome) == (ANSWER, "ok")
    assert split_reasoning(last.raw_content)[0].startswith("Okay, ")
    assert len(trace.iterations[0].tool_calls) == 2  # the server's tool parser read them


def test_qwen3_coder_writes_xml_calls_with_the_opening_tag_lost(demo_client: Client) -> None:
    _, trace = loop(demo_client, "qwen3-coder-text-calls")
    assert trace.iterations[0].raw_content == (
        "<function=get_weather>\n<parameter=city>\nLisbon\n</parameter>\n</function>\n"
        "</tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    _, recovered = loop(demo_client, "qwen3-coder-text-calls", recover_text_tool_calls=True)
    assert "<parameter=a>\n21\n</parameter>\n<parameter=b>\n4\n</parameter>" in (
        recovered.iterations[1].raw_content
    )


@pytest.mark.parametrize(
    ("model", "pattern"),
    [
        pytest.param(
            "mistral-text-calls",
            r'^\[TOOL_CALLS\]\[\{"name": "get_weather", "arguments": \{"city": "Lisbon"\}, '
            r'"id": "[a-zA-Z0-9]{9}"\}, \{"name": "get_weather", .*\}\]$',
            id="list",
        ),
        pytest.param(
            "mistral-mlx-text-calls",
            r'^\[TOOL_CALLS\]get_weather\[ARGS\]\{"city": "Lisbon"\}'
            r'\[TOOL_CALLS\]get_weather\[ARGS\]\{"city": "Oslo"\}$',
            id="args",
        ),
    ],
)
def test_mistral_writes_both_reported_shapes(demo_client: Client, model: str, pattern: str) -> None:
    _, trace = loop(demo_client, model)
    assert re.match(pattern, trace.iterations[0].raw_content)


def test_answer_in_reasoning_leaves_content_empty_and_usage_zero(demo_client: Client) -> None:
    _, trace = loop(demo_client, "answer-in-reasoning")
    last = trace.iterations[-1]
    assert last.raw_content == "" and last.finish_reason == "stop"
    assert last.reasoning_field == "reasoning_content"
    assert last.reasoning_content.endswith("\n\n" + ANSWER)
    assert last.usage == {"prompt_tokens": 0, "completion_tokens": 0}
    assert trace.iterations[0].usage["completion_tokens"] > 0


def test_gateway_sends_reasoning_as_a_list_of_parts(demo_client: Client, demo: DemoServer) -> None:
    _, trace = loop(demo_client, "gateway-reasoning-details")
    first = trace.iterations[0]
    body = {
        "model": "gateway-reasoning-details",
        "messages": first.messages,
        "tools": [t.to_openai() for t in demo_tools()],
        "tool_choice": "auto",
        "max_tokens": 512,
    }
    message = post(demo, body).json()["choices"][0]["message"]
    details = message["reasoning_details"]
    assert len(details) == 2 and all(p["type"] == "reasoning.text" for p in details)
    assert "reasoning_content" not in message and "reasoning" not in message
    assert first.reasoning_field == "reasoning_details"
    assert first.reasoning_content == details[0]["text"] + details[1]["text"]
    assert trace.iterations[-1].text == ANSWER


MARKUP = [XSS_SCRIPT, XSS_IMG, "<|channel|>", "<tool_call>", "<function=", "<think>"]


@pytest.mark.parametrize(
    "model",
    ["html-injector", "hermes-text-tools", "gpt-oss-raw-harmony", "qwen3-coder-text-calls"],
)
def test_markup_personas_render_as_text(demo_client: Client, model: str) -> None:
    _, trace = loop(demo_client, model, recover_text_tool_calls=True)
    raw = " ".join(it.raw_content + it.reasoning_content for it in trace.iterations)
    present = [m for m in MARKUP if m in raw]
    assert present  # the persona does send markup
    page = trace._repr_html_()
    for m in present:
        assert m not in page
    assert "&lt;" in page
