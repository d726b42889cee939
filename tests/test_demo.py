"""The demo endpoint: every persona through the real Client over loopback, and its HTTP surface."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from shared import DIALECT_PERSONAS, PERSONAS

from rig_nb import (
    BackendError,
    Client,
    RigError,
    RunRequest,
    Trace,
    decode_json_object,
)
from rig_nb.demo import (
    DEMO_PROMPT,
    DEMO_SYSTEM,
    XSS_IMG,
    XSS_SCRIPT,
    DemoServer,
    Persona,
    Stream,
    demo_tools,
)
from rig_nb.demo.dialect_personas import dialect_personas
from rig_nb.testing import RecordedRequest, Response

RECORDED = {p for p in PERSONAS if p.endswith("-recorded")}
TEXT_TOOL_PERSONAS = [
    "hermes-text-tools",
    "gpt-oss-raw-harmony",
    "qwen3-coder-text-calls",
    "mistral-text-calls",
    "mistral-mlx-text-calls",
]
ANSWER = (
    "Here is what I found. Lisbon: 21 C, clear sky. Oslo: 4 C, light rain. add(21, 4) gives 25."
)
CALLS = [
    ("get_weather", {"city": "Lisbon"}),
    ("get_weather", {"city": "Oslo"}),
    ("add", {"a": 21, "b": 4}),
]


@pytest.fixture(scope="module")
def client(demo_client: Client) -> Client:
    return demo_client


def post(demo: DemoServer, body: Any) -> httpx.Response:
    return httpx.post(f"{demo.base_url}/chat/completions", json=body, timeout=10)


def chat(demo: DemoServer, model: str, **extra: Any) -> dict[str, Any]:
    body = {"model": model, "messages": [{"role": "user", "content": DEMO_PROMPT}], **extra}
    reply = post(demo, body)
    assert reply.status_code == 200, reply.text
    data: dict[str, Any] = reply.json()
    return data


def loop(client: Client, model: str, max_tokens: int = 512, **options: Any) -> tuple[str, Trace]:
    request = RunRequest(
        model, max_tokens, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), **options
    )
    try:
        trace = client.run(request).trace
    except RigError as exc:
        assert exc.trace is not None
        return type(exc).__name__, exc.trace
    return trace.outcome, trace


def probe(client: Client, model: str, tool_choice: str | None = "auto") -> str:
    try:
        client.probe_tool_calling(model, tool_choice=tool_choice)
    except RigError as exc:
        return type(exc).__name__
    return "tool call"


def calls_of(trace: Trace) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in trace.tool_calls]


def sse_events(reply: httpx.Response) -> list[Any]:
    """The data payloads of a server-sent event stream, JSON decoded where they are JSON."""
    events: list[Any] = []
    for line in reply.text.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def test_models_lists_every_persona(demo: DemoServer) -> None:
    assert demo.models == PERSONAS
    listing = httpx.get(f"{demo.base_url}/models", timeout=10).json()
    assert [m["id"] for m in listing["data"]] == PERSONAS
    assert all(m["object"] == "model" and m["description"] for m in listing["data"])
    one = httpx.get(f"{demo.base_url}/models/tool-spinner", timeout=10).json()
    assert one["id"] == "tool-spinner"


def _row(
    model: str,
    verdict: str,
    outcome: str,
    ending: str,
    leaks: list[list[str]],
    shapes: set[str],
    calls: int,
) -> Any:
    return pytest.param(model, verdict, outcome, ending, leaks, shapes, calls, id=model)


NONE: list[str] = []
TAG, HARMONY, MISTRAL = ["tool-call-tag"], ["harmony"], ["mistral-tool-calls"]
CALL, NO_CALL, LIMIT = "tool call", "NoToolCallingError", "IterationLimitError"
TEXT = "text_tool_calls"
DEMO_RUNS = [
    _row("well-behaved", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("qwen3-no-parser", CALL, "ok", "answer", [NONE] * 3, {"unopened"}, 3),
    _row("r1-json-sketch", CALL, "ok", "answer", [NONE] * 3, {"closed"}, 3),
    _row(
        "budget-think",
        "OutputLimitError",
        "OutputLimitError",
        "length_in_reasoning",
        [NONE],
        {"unclosed"},
        0,
    ),
    _row("reasoning-field", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("ollama-reasoning", CALL, "reasoning_only", "reasoning_only", [NONE] * 3, {"none"}, 3),
    _row("hermes-text-tools", NO_CALL, TEXT, TEXT, [TAG], {"closed"}, 0),
    _row("tool-spinner", CALL, LIMIT, "tool_calls", [NONE] * 8, {"none"}, 8),
    _row("html-injector", CALL, "ok", "answer", [NONE] * 2, {"closed"}, 2),
    _row("gpt-oss-raw-harmony", NO_CALL, TEXT, TEXT, [HARMONY], {"none"}, 0),
    _row("gpt-oss-stripped-tokens", CALL, "ok", "answer", [HARMONY] * 3, {"none"}, 3),
    _row("qwen3-coder-text-calls", NO_CALL, TEXT, TEXT, [[*TAG, "function-tag"]], {"none"}, 0),
    _row("mistral-text-calls", NO_CALL, TEXT, TEXT, [MISTRAL], {"none"}, 0),
    _row("mistral-mlx-text-calls", NO_CALL, TEXT, TEXT, [MISTRAL], {"none"}, 0),
    _row("draft-then-call", CALL, "ok", "answer", [TAG] * 3, {"closed"}, 3),
    _row("answer-in-reasoning", CALL, "reasoning_only", "reasoning_only", [NONE] * 3, {"none"}, 3),
    _row("gateway-reasoning-details", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("minimax-xml-calls", NO_CALL, TEXT, TEXT, [["minimax-tool-calls"]], {"closed"}, 0),
    _row(
        "gemma4-text-calls",
        NO_CALL,
        TEXT,
        TEXT,
        [["gemma-channel", "gemma-tool-call"]],
        {"none"},
        0,
    ),
    _row("deepseek-v31-tokens", NO_CALL, TEXT, TEXT, [["deepseek-tool-calls"]], {"unopened"}, 0),
    _row(
        "kimi-calls-in-reasoning",
        NO_CALL,
        "tool_calls_in_reasoning",
        "tool_calls_in_reasoning",
        [NONE],
        {"none"},
        0,
    ),
    _row("gpt-oss-analysis-recipient", NO_CALL, TEXT, TEXT, [HARMONY], {"none"}, 0),
    _row("glm-markup-in-tool-name", CALL, "ok", "answer", [NONE] * 2, {"none"}, 2),
    _row("deepseek-thinking-tools", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("vllm-reads-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("ignores-thinking-switch", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("honors-thinking-switch", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("vllm-json-in-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("lmstudio-json-in-reasoning", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("vllm-json-thinking-off", CALL, "ok", "answer", [NONE] * 3, {"closed"}, 3),
    _row("schema-ignored", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("agent-shape-text-calls", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("ollama-truncates-silently", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("llama-context-error", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("cache-breaking-template", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    _row("crossed-streams", CALL, "ok", "answer", [NONE] * 3, {"none"}, 3),
    # Real llama-server replies: SmolLM2 under a Qwen3-style template that opens <think>.
    _row(
        "llama-server-deepseek-recorded",
        NO_CALL,
        "reasoning_only",
        "reasoning_only",
        [NONE],
        {"none"},
        0,
    ),
    _row(
        "llama-server-none-recorded",
        NO_CALL,
        "reasoning_only",
        "reasoning_only",
        [NONE],
        {"unclosed"},
        0,
    ),
    _row("llama-server-skip-recorded", NO_CALL, "ok", "answer", [NONE], {"none"}, 0),
    _row("smollm2-chatml-recorded", NO_CALL, "ok", "answer", [NONE], {"none"}, 0),
    _row("smollm2-recorded", CALL, LIMIT, "tool_calls", [NONE] * 8, {"none"}, 8),
]


def test_the_table_covers_every_persona(demo: DemoServer) -> None:
    assert [p.values[0] for p in DEMO_RUNS] == demo.models == PERSONAS


@pytest.mark.parametrize(
    ("model", "verdict", "outcome", "ending", "leaks", "shapes", "calls"), DEMO_RUNS
)
def test_demo_run_ends_as_the_persona_promises(
    client: Client,
    demo: DemoServer,
    model: str,
    verdict: str,
    outcome: str,
    ending: str,
    leaks: list[list[str]],
    shapes: set[str],
    calls: int,
) -> None:
    assert probe(client, model) == verdict
    got, trace = loop(client, model)
    assert got == outcome
    assert trace.outcome == outcome
    assert trace.iterations[-1].ending == ending
    assert [it.leaks for it in trace.iterations] == leaks
    assert {it.reasoning_shape for it in trace.iterations} == shapes
    assert len(trace.tool_calls) == calls
    assert all("completion_tokens" in it.usage for it in trace.iterations)
    if model not in RECORDED:
        # The docstring is the promise: it names the ending and the outcome.
        doc = " ".join((inspect.getdoc(demo.personas[model]) or "").split())
        promise = re.search(r"Demo run: ends `(\w+)`[^;]*?, outcome (\w+)", doc)
        assert promise is not None, doc
        assert promise.groups() == (ending, outcome)


@pytest.mark.parametrize("model", DIALECT_PERSONAS)
def test_dialect_personas_name_their_public_source(demo: DemoServer, model: str) -> None:
    doc = inspect.getdoc(demo.personas[model]) or ""
    assert re.search(r"[\w-]+/[\w.-]+ ?(?:PR)?#\d+", doc), doc
    described = {
        m["id"]: m["description"]
        for m in httpx.get(f"{demo.base_url}/models", timeout=10).json()["data"]
    }
    assert described[model] == doc.splitlines()[0]
    assert [p.name for p in dialect_personas()] == DIALECT_PERSONAS


def test_well_behaved_is_clean(client: Client) -> None:
    _, trace = loop(client, "well-behaved")
    assert [
        [(c.name, json.loads(c.arguments)) for c in it.tool_calls] for it in trace.iterations
    ] == [
        [("get_weather", {"city": "Lisbon"}), ("get_weather", {"city": "Oslo"})],
        [("add", {"a": 21, "b": 4})],
        [],
    ]
    assert trace.iterations[-1].raw_content == trace.iterations[-1].text == ANSWER
    assert not any(it.reasoning_content for it in trace.iterations)


def test_qwen3_leaks_reasoning_behind_a_bare_closing_tag(client: Client) -> None:
    _, trace = loop(client, "qwen3-no-parser")
    for it in trace.iterations:
        assert "<think>" not in it.raw_content
        assert it.raw_content.count("</think>") == 1
        assert it.raw_content.startswith("Okay,")
        assert "</think>" not in it.text and "Okay," not in it.text
    assert trace.iterations[-1].text == ANSWER


def test_r1_sketch_is_shorter_than_the_answer_the_decoder_keeps(client: Client) -> None:
    _, trace = loop(client, "r1-json-sketch")
    raw = trace.iterations[-1].raw_content
    think = raw[: raw.index("</think>")]
    assert '{"answer": "...", "sources": []}' in think
    assert "\njson\n{" in raw
    decoded = decode_json_object(raw)
    assert decoded["answer"] == ANSWER
    assert [s["tool"] for s in decoded["sources"]] == ["get_weather", "get_weather", "add"]


def test_budget_think_stops_inside_think_and_finishes_with_room(client: Client) -> None:
    _, small = loop(client, "budget-think", max_tokens=512)
    it = small.iterations[0]
    assert it.finish_reason == "length"
    assert it.usage["completion_tokens"] == 512
    assert it.raw_content.startswith("<think>") and "</think>" not in it.raw_content
    assert it.text == "" and not it.tool_calls
    outcome, big = loop(client, "budget-think", max_tokens=4096)
    assert outcome == "ok"
    assert {i.reasoning_shape for i in big.iterations} == {"closed"}
    assert big.iterations[-1].text == ANSWER
    assert big.iterations[0].usage["completion_tokens"] > 600


def test_reasoning_field_keeps_content_clean(client: Client, demo: DemoServer) -> None:
    _, trace = loop(client, "reasoning-field")
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


def test_ollama_answer_lands_in_the_reasoning_field(client: Client, demo: DemoServer) -> None:
    _, trace = loop(client, "ollama-reasoning")
    last = trace.iterations[-1]
    assert last.text == "" and last.finish_reason == "stop"
    assert last.reasoning_content.endswith(ANSWER)
    message = chat(demo, "ollama-reasoning")["choices"][0]["message"]
    assert "reasoning" in message and "reasoning_content" not in message


def test_hermes_writes_tool_calls_as_text(client: Client) -> None:
    _, trace = loop(client, "hermes-text-tools")
    text = trace.iterations[0].text
    assert text.startswith("<tool_call>\n") and text.endswith("</tool_call>")
    assert decode_json_object(text) == {"name": "get_weather", "arguments": {"city": "Lisbon"}}
    assert text.count("<tool_call>") == 2


def test_tool_spinner_looks_like_llama_cpp(client: Client, demo: DemoServer) -> None:
    _, trace = loop(client, "tool-spinner")
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


def test_tool_spinner_tool_choice_matrix(client: Client) -> None:
    assert probe(client, "tool-spinner", None) == "NoToolCallingError"
    with pytest.raises(BackendError) as info:
        client.probe_tool_calling("tool-spinner", tool_choice="required")
    assert info.value.status_code == 500


def test_html_injector_puts_markup_everywhere(client: Client) -> None:
    _, trace = loop(client, "html-injector")
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
def test_text_tool_calls_run_only_when_recovered(client: Client, model: str, recover: bool) -> None:
    outcome, trace = loop(client, model, recover_text_tool_calls=recover)
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
def test_a_call_drafted_in_reasoning_runs_once(client: Client, recover: bool) -> None:
    outcome, trace = loop(client, "draft-then-call", recover_text_tool_calls=recover)
    assert outcome == "ok"
    assert calls_of(trace) == CALLS  # three calls, not six, and not the last draft
    assert {c.source for c in trace.tool_calls} == {"native"}
    first, last = trace.iterations[0], trace.iterations[-1]
    assert first.raw_content.count("<tool_call>") == 2  # both calls drafted in <think>
    assert '<tool_call>{"name": "add"' in last.raw_content  # a last draft, never made
    assert last.text == ANSWER and last.ending == "answer"


def test_raw_harmony_is_channel_tokens_and_commentary_calls(client: Client) -> None:
    _, trace = loop(client, "gpt-oss-raw-harmony")
    raw = trace.iterations[0].raw_content
    assert raw.startswith("<|channel|>analysis<|message|>Okay, the user asks")
    assert raw.count("<|start|>assistant<|channel|>commentary to=functions.get_weather ") == 2
    assert '<|constrain|>json<|message|>{"city": "Lisbon"}<|call|>' in raw
    _, recovered = loop(client, "gpt-oss-raw-harmony", recover_text_tool_calls=True)
    final = recovered.iterations[-1].raw_content
    assert "<|end|><|start|>assistant<|channel|>final<|message|>" + ANSWER in final


def test_stripped_harmony_glues_channel_names_to_the_words(client: Client) -> None:
    _, trace = loop(client, "gpt-oss-stripped-tokens")
    assert all(it.raw_content.startswith("analysisOkay, ") for it in trace.iterations)
    assert trace.iterations[-1].text.endswith("assistantfinal" + ANSWER)
    assert len(trace.iterations[0].tool_calls) == 2  # the server's tool parser read them


def test_qwen3_coder_writes_xml_calls_with_the_opening_tag_lost(client: Client) -> None:
    _, trace = loop(client, "qwen3-coder-text-calls")
    assert trace.iterations[0].raw_content == (
        "<function=get_weather>\n<parameter=city>\nLisbon\n</parameter>\n</function>\n"
        "</tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    _, recovered = loop(client, "qwen3-coder-text-calls", recover_text_tool_calls=True)
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
def test_mistral_writes_both_reported_shapes(client: Client, model: str, pattern: str) -> None:
    _, trace = loop(client, model)
    assert re.match(pattern, trace.iterations[0].raw_content)


def test_answer_in_reasoning_leaves_content_empty_and_usage_zero(client: Client) -> None:
    _, trace = loop(client, "answer-in-reasoning")
    last = trace.iterations[-1]
    assert last.raw_content == "" and last.finish_reason == "stop"
    assert last.reasoning_field == "reasoning_content"
    assert last.reasoning_content.endswith("\n\n" + ANSWER)
    assert last.usage == {"prompt_tokens": 0, "completion_tokens": 0}
    assert trace.iterations[0].usage["completion_tokens"] > 0


def test_gateway_sends_reasoning_as_a_list_of_parts(client: Client, demo: DemoServer) -> None:
    _, trace = loop(client, "gateway-reasoning-details")
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
def test_markup_personas_render_as_text(client: Client, model: str) -> None:
    _, trace = loop(client, model, recover_text_tool_calls=True)
    raw = " ".join(it.raw_content + it.reasoning_content for it in trace.iterations)
    present = [m for m in MARKUP if m in raw]
    assert present  # the persona does send markup
    page = trace._repr_html_()
    for m in present:
        assert m not in page
    assert "&lt;" in page


@pytest.mark.parametrize("model", PERSONAS)
def test_replies_are_deterministic(demo: DemoServer, model: str) -> None:
    tools = [t.to_openai() for t in demo_tools()]
    first = chat(demo, model, tools=tools, tool_choice="auto", max_tokens=300)
    assert chat(demo, model, tools=tools, tool_choice="auto", max_tokens=300) == first
    assert first["model"] == model
    usage = first["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


@pytest.mark.parametrize(
    ("tool_choice", "names"),
    [
        pytest.param("none", [], id="none"),
        pytest.param("auto", ["get_weather", "get_weather"], id="auto"),
        pytest.param({"type": "function", "function": {"name": "add"}}, ["add"], id="named"),
    ],
)
def test_tool_choice_is_honoured(demo: DemoServer, tool_choice: Any, names: list[str]) -> None:
    tools = [t.to_openai() for t in demo_tools()]
    body = chat(demo, "well-behaved", tools=tools, tool_choice=tool_choice)
    calls = body["choices"][0]["message"].get("tool_calls", [])
    assert [c["function"]["name"] for c in calls] == names


def test_numbers_are_not_made_up_unless_a_call_is_required(demo: DemoServer) -> None:
    add = [demo_tools()[1].to_openai()]
    messages = [{"role": "user", "content": "Please add the two numbers."}]
    body = post(demo, {"model": "well-behaved", "messages": messages, "tools": add}).json()
    assert "tool_calls" not in body["choices"][0]["message"]
    forced = {
        "model": "well-behaved",
        "messages": messages,
        "tools": add,
        "tool_choice": "required",
    }
    calls = post(demo, forced).json()["choices"][0]["message"]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"a": 1, "b": 2}]
    messages = [{"role": "user", "content": "Please add 17 and 25."}]
    body = post(demo, {"model": "well-behaved", "messages": messages, "tools": add}).json()
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert json.loads(call["arguments"]) == {"a": 17, "b": 25}


def test_tool_names_come_from_the_request(demo: DemoServer) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "lookup_city",
            "parameters": {
                "type": "object",
                "properties": {"place": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["place", "days"],
            },
        },
    }
    messages = [{"role": "user", "content": "Forecast for Tokyo for 3 days, please."}]
    body = post(demo, {"model": "r1-json-sketch", "messages": messages, "tools": [tool]}).json()
    call = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "lookup_city"
    assert json.loads(call["arguments"]) == {"days": 3, "place": "Tokyo"}


def test_a_small_budget_cuts_any_persona(demo: DemoServer) -> None:
    body = chat(demo, "well-behaved", max_tokens=3)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["choices"][0]["message"]["content"] == "I cannot check"
    assert body["usage"]["completion_tokens"] == 3
    plain = chat(demo, "well-behaved", max_completion_tokens=3)
    assert plain["choices"][0]["message"]["content"] == "I cannot check"


def test_prompt_tokens_grow_with_the_conversation(demo: DemoServer) -> None:
    short = chat(demo, "well-behaved")["usage"]["prompt_tokens"]
    longer = chat(demo, "well-behaved", tools=[t.to_openai() for t in demo_tools()])
    assert longer["usage"]["prompt_tokens"] > short > 0


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}',
            404,
            "model 'nope' not found",
            id="unknown-model",
        ),
        pytest.param(
            "POST", "/v1/chat/completions", b"{not json", 400, "not valid JSON", id="bad-json"
        ),
        pytest.param("POST", "/v1/chat/completions", b"[1]", 400, "JSON object", id="array"),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved"}',
            400,
            "'messages'",
            id="no-messages",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved", "stream": "yes", "messages": [{"role": "user"}]}',
            400,
            "'stream' must be a boolean",
            id="stream-not-bool",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved", "stream": true, "stream_options": 1, '
            b'"messages": [{"role": "user"}]}',
            400,
            "'stream_options' must be an object",
            id="stream-options",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "nope", "stream": true, "messages": [{"role": "user", "content": "hi"}]}',
            404,
            "model 'nope' not found",
            id="stream-unknown-model",
        ),
        pytest.param(
            "POST",
            "/v1/chat/completions",
            b'{"model": "well-behaved", "max_tokens": 0, "messages": [{"role": "user"}]}',
            400,
            "max_tokens",
            id="zero-budget",
        ),
        pytest.param("GET", "/v1/chat/completions", b"", 405, "not allowed", id="get-chat"),
        pytest.param("GET", "/v1/embeddings", b"", 404, "no route", id="unknown-path"),
        pytest.param("GET", "/v1/models/nope", b"", 404, "model 'nope' not found", id="model-404"),
    ],
)
def test_http_errors_are_json(
    demo: DemoServer, method: str, path: str, body: bytes, status: int, message: str
) -> None:
    reply = httpx.request(method, demo.origin + path, content=body, timeout=10)
    assert reply.status_code == status
    assert reply.headers["content-type"] == "application/json"
    assert message in reply.json()["error"]["message"]


def test_unknown_model_through_the_client_is_a_backend_error(client: Client) -> None:
    with pytest.raises(BackendError) as info:
        client.probe_tool_calling("gpt-nope")
    assert info.value.status_code == 404
    assert "not found" in info.value.message


class Replay(Persona):
    """A persona that answers with a recorded body, to prove extra personas plug in."""

    name = "replay"

    def reply(self, request: Mapping[str, Any]) -> Mapping[str, Any] | Response | Stream:
        turn = len(request["messages"])
        return {
            "choices": [
                {
                    "message": {"role": "assistant", "content": f"recorded turn {turn}"},
                    "finish_reason": "stop",
                }
            ]
        }


def test_extra_personas_are_served() -> None:
    with DemoServer(extra_personas=[Replay()]) as server, Client(server.base_url) as c:
        assert server.models == [*PERSONAS, "replay"]
        result = c.run(RunRequest("replay", 64, system="s", prompt="p"))
        assert result.text == "recorded turn 2"
        assert isinstance(server.requests[-1], RecordedRequest)
        assert server.requests[-1].json["model"] == "replay"


def test_persona_names_must_be_unique_and_present() -> None:
    class Nameless(Persona):
        pass

    clash = Replay()
    clash.name = "well-behaved"
    with pytest.raises(ValueError, match="duplicate persona name"):
        DemoServer(extra_personas=[clash])
    with pytest.raises(ValueError, match="has no name"):
        DemoServer(extra_personas=[Nameless()])


def test_binds_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        DemoServer(host="0.0.0.0")


def test_request_log_is_bounded() -> None:
    with DemoServer() as server:
        for i in range(1005):
            server.requests.append(RecordedRequest("GET", f"/{i}", {}, b""))
        assert len(server.requests) == 1000
        assert server.requests[0].path == "/5"
