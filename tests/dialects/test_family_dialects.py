"""DESIGN "Dialects of every family": one test (or table) per contract line.

Loop tests run against a real loopback server (rig_nb.testing.ScriptedServer).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from runs import LoopRunner

from rig_nb import (
    Client,
    Tool,
    find_text_tool_calls,
    leak_dialects,
    split_reasoning,
    strip_reasoning,
    tool,
)
from rig_nb.dialects import DIALECTS, TOOL_CALL_DIALECTS, has_text_tool_calls
from rig_nb.testing import ScriptedServer, chat_reply, tool_call

BAR = "\uff5c"
SEP = "\u2581"


def _ds(word: str, bar: str = BAR) -> str:
    return f"<{bar}{word.replace('_', SEP)}{bar}>"


DEEPSEEK_V31 = (
    _ds("tool_calls_begin") + _ds("tool_call_begin") + "get_time" + _ds("tool_sep")
    + '{"city": "Paris"}' + _ds("tool_call_end") + _ds("tool_calls_end")
)  # fmt: skip
DEEPSEEK_R1 = (
    _ds("tool_calls_begin") + _ds("tool_call_begin") + "function" + _ds("tool_sep")
    + 'get_time\n```json\n{"city": "Paris"}\n```' + _ds("tool_call_end") + _ds("tool_calls_end")
)  # fmt: skip
MINIMAX_M2 = (
    '<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="city">Paris</parameter>\n'
    "</invoke>\n</minimax:tool_call>"
)
D = "]<]minimax[>["
MINIMAX_M3 = (
    f'{D}<tool_call>\n{D}<invoke name="get_time">{D}<city>Paris{D}</city>{D}</invoke>\n'
    f"{D}</tool_call>"
)
GEMMA4 = '<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>'
HARMONY_ANALYSIS = (
    "<|start|>assistant to=functions.get_time<|channel|>analysis<|message|>"
    '{"city": "Paris"}<|call|>'
)
KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
    '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)
PARIS = '{"city": "Paris"}'


@pytest.mark.parametrize(
    ("text", "names"),
    [
        pytest.param(MINIMAX_M2, ("minimax-tool-calls",), id="minimax-m2"),
        pytest.param(MINIMAX_M3, ("tool-call-tag", "minimax-tool-calls"), id="minimax-m3"),
        pytest.param("[TOOL_CALL]\n{tool => 'x'}\n[/TOOL_CALL]", ("minimax-tool-calls",), id="m1"),
        pytest.param(GEMMA4, ("gemma-tool-call",), id="gemma4"),
        pytest.param(DEEPSEEK_V31, ("deepseek-tool-calls",), id="deepseek-fullwidth"),
        pytest.param(
            DEEPSEEK_V31.replace(BAR, "|"), ("deepseek-tool-calls",), id="deepseek-ascii-bars"
        ),
        pytest.param("<|START_THINKING|>x<|END_THINKING|>", ("cohere-markers",), id="cohere"),
        pytest.param("<|START_ACTION|>[]<|END_ACTION|>", ("cohere-markers",), id="cohere-action"),
        pytest.param("<|START_RESPONSE|>Hi<|END_RESPONSE|>", ("cohere-markers",), id="cohere-r"),
        pytest.param("<|START_TEXT|>Hi<|END_TEXT|>", ("cohere-markers",), id="cohere-text"),
        pytest.param("<|tool_call_start|>[f(a=1)]<|tool_call_end|>", ("lfm-tool-calls",), id="lfm"),
        pytest.param("<mm:think>x</mm:think>Hi", ("minimax-think",), id="minimax-m3-think"),
        pytest.param("\u25c1think\u25b7x\u25c1/think\u25b7Hi", ("kimi-think",), id="kimi-think"),
        pytest.param("<|open|>response<|sep|>Hi<|close|>", ("kimi-k3-markers",), id="kimi-k3"),
        pytest.param(
            '<function name="f"><param name="a">1</param>', ("minicpm-function",), id="cpm"
        ),
        pytest.param("<|function_call|>{}", ("gigachat-markers",), id="gigachat"),
        pytest.param("<TOOLCALL>[]</TOOLCALL>", ("nemotron-toolcall",), id="nemotron-v2"),
        pytest.param("x\n[BEGIN FINAL RESPONSE]\nHi", ("apriel-markers",), id="apriel"),
        pytest.param("<|tools_prefix|>[]<|tools_suffix|>", ("apertus-tool-calls",), id="apertus"),
    ],
)
def test_every_family_is_named(text: str, names: tuple[str, ...]) -> None:
    assert leak_dialects(text) == names
    assert set(names) <= set(DIALECTS)
    assert leak_dialects(f"```\n{text}\n```") == ()  # quoted in code: not a leak


@pytest.mark.parametrize(
    "text",
    [MINIMAX_M2, MINIMAX_M3, GEMMA4, DEEPSEEK_V31, DEEPSEEK_R1, DEEPSEEK_V31.replace(BAR, "|")],
    ids=["minimax-m2", "minimax-m3", "gemma4", "deepseek-v3.1", "deepseek-r1", "ascii-bars"],
)
def test_new_families_are_read(text: str) -> None:
    calls = find_text_tool_calls("Let me look.\n" + text)
    assert [(c.name, json.loads(c.arguments), c.error) for c in calls] == [
        ("get_time", {"city": "Paris"}, "")
    ]
    assert has_text_tool_calls(text)
    assert find_text_tool_calls(f"```\n{text}\n```") == []  # fenced code is not run
    assert find_text_tool_calls(f"`{text}`") == []  # nor inline code
    assert find_text_tool_calls("\n".join("    " + line for line in text.splitlines())) == []


def test_gemma4_values_keep_their_types() -> None:
    text = (
        '<|tool_call>call:f{a:1,b:true,c:<|"|>x, "y"<|"|>,d:[1,<|"|>z<|"|>],e:{k:null}}<tool_call|>'
    )
    (call,) = find_text_tool_calls(text)
    assert json.loads(call.arguments) == {
        "a": 1,
        "b": True,
        "c": 'x, "y"',
        "d": [1, "z"],
        "e": {"k": None},
    }


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # The one-line flat form (read whole) and forms the general reader takes.
        (
            '<|tool_call>call:f{a:<|"|>x<|"|>,b:<|"|>y<|"|>,a:<|"|>z<|"|>}<tool_call|>',
            ("f", {"a": "z", "b": "y"}, ""),
        ),
        ("<|tool_call>call:f{}<tool_call|>", ("f", {}, "")),
        ('<|tool_call> call:f {a:<|"|>x<|"|>}<tool_call|>', ("f", {"a": "x"}, "")),
        ('<|tool_call>call:f{a:<|"|>x\ny<|"|>}<tool_call|>', ("f", {"a": "x\ny"}, "")),
        ('<|tool_call>call:f{a:<|"|>`x`<|"|>}<tool_call|>', ("f", {"a": "`x`"}, "")),
        ('<|tool_call>call:f{a:<|"|>1 < 2<|"|>}<tool_call|>', ("f", {"a": "1 < 2"}, "")),
        # Cut off by the next call: said without decoding.
        (
            '<|tool_call>call:f{a:<|"|>x<|"|><|tool_call>call:g{}<tool_call|>',
            ("f", None, "arguments are not valid JSON (the object is not closed)"),
        ),
    ],
)
def test_gemma4_calls_read_alike_on_either_path(text: str, want: tuple[str, Any, str]) -> None:
    first = find_text_tool_calls(text)[0]
    name, arguments, error = want
    got = json.loads(first.arguments) if first.arguments else None
    assert (first.name, got, first.error) == (name, arguments, error)


def test_harmony_recipient_on_any_channel_is_read() -> None:
    (call,) = find_text_tool_calls(HARMONY_ANALYSIS)
    assert (call.dialect, call.name, json.loads(call.arguments)) == (
        "harmony",
        "get_time",
        {"city": "Paris"},
    )
    # An analysis message without a recipient stays reasoning.
    draft = "<|channel|>analysis<|message|>maybe <tool_call>{}</tool_call><|end|>"
    assert find_text_tool_calls(draft) == []


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        pytest.param("[THINK]I need the time. " + KIMI, "kimi-tool-calls", id="think-brackets"),
        pytest.param("<mm:think>plan " + MINIMAX_M2, "minimax-tool-calls", id="minimax-think"),
        pytest.param("<think>plan\n\n" + MINIMAX_M2, "minimax-tool-calls", id="think"),
    ],
)
def test_an_opener_ends_an_unclosed_reasoning_block(text: str, dialect: str) -> None:
    from rig_nb.content import text_for_calls

    (call,) = find_text_tool_calls(text_for_calls(text))
    assert (call.dialect, call.name) == (dialect, "get_time")
    # Closed, the block keeps its call: drafted in reasoning, never run.
    closed = text.replace(" " + KIMI, "").replace(" " + MINIMAX_M2, "") + "</think>Done."
    assert find_text_tool_calls(text_for_calls(closed)) == []


MAGIC = {
    "type": "function",
    "function": {
        "name": "magic",
        "parameters": {
            "type": "object",
            "properties": {
                "ref": {"type": "string"},
                "version": {"type": "string"},
                "count": {"type": "integer"},
                "ratio": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                "label": {"type": ["string", "object"]},
            },
        },
    },
}
TYPED = {"ref": "5123123", "version": "3.10", "count": 7, "ratio": 0.5, "label": {"a": 1}}


def _qwen(args: dict[str, str]) -> str:
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function=magic>\n{params}</function>\n</tool_call>"


def _glm(args: dict[str, str]) -> str:
    pairs = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in args.items())
    return f"<tool_call>magic{pairs}</tool_call>"


def _minimax(args: dict[str, str]) -> str:
    params = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in args.items())
    return f'<minimax:tool_call>\n<invoke name="magic">\n{params}</invoke>\n</minimax:tool_call>'


WRITTEN = {"ref": "5123123", "version": "3.10", "count": "7", "ratio": "0.5", "label": '{"a": 1}'}


@pytest.mark.parametrize("write", [_qwen, _glm, _minimax], ids=["qwen3-coder", "glm", "minimax"])
def test_parameter_values_take_the_declared_type(write: Any) -> None:
    (typed,) = find_text_tool_calls(write(WRITTEN), [MAGIC])
    assert json.loads(typed.arguments) == TYPED
    # Without a schema: JSON when it reads as JSON, else the text.
    (untyped,) = find_text_tool_calls(write(WRITTEN))
    assert json.loads(untyped.arguments) == {**TYPED, "ref": 5123123, "version": 3.1}


def test_a_tool_object_types_values_too() -> None:
    @tool
    def magic(ref: str) -> str:
        """Look a reference up."""
        return ref

    (call,) = find_text_tool_calls(_qwen({"ref": "0042"}), [magic])
    assert json.loads(call.arguments) == {"ref": "0042"}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # Flat calls (read in one match) and forms only the general readers take.
        (
            "<tool_call>magic\n<arg_key>ref</arg_key>\n<arg_value>5123123</arg_value>\n</tool_call>",
            {"ref": "5123123"},
        ),
        (
            "<tool_call>magic<arg_key> ref </arg_key><arg_value>0042</arg_value></tool_call>",
            {"ref": "0042"},
        ),
        (
            "<tool_call>magic<arg_key>ref</arg_key>, <arg_value>1 < 2</arg_value></tool_call>",
            {"ref": "1 < 2"},
        ),
        (
            "<tool_call>magic<arg_key>count</arg_key><arg_value>1</arg_value>"
            "<arg_key>count</arg_key><arg_value>2</arg_value></tool_call>",
            {"count": 2},
        ),
        ("<tool_call>magic\n</tool_call>", {}),
        (
            "<function=magic>\n<parameter=ref>\n0042\n</parameter>\n</function>\n</tool_call>",
            {"ref": "0042"},
        ),
        ("<function=magic><parameter=ref>0042\n</parameter></function>", {"ref": "0042\n"}),
        (
            "<function=magic><parameter=ref>\n</parameter><parameter=version>\n\n</parameter></function>",
            {"ref": "", "version": ""},
        ),
        (
            "<tool_call>\n<function=magic>\n<parameter=ref>\na<b\n</parameter>\n</function>",
            {"ref": "a<b"},
        ),
        ("<function=magic>x<parameter=count>\n3\n</parameter></function>", {"count": 3}),
    ],
)
def test_glm_and_qwen_calls_read_alike_on_either_path(text: str, want: dict[str, Any]) -> None:
    # Code elsewhere in a reply does not change how a call outside it is read.
    for tools in ([MAGIC], None):
        plain = find_text_tool_calls(text, tools)
        beside_code = find_text_tool_calls(text + "\n\nSee `magic`.", tools)
        assert plain == beside_code
    (call,) = find_text_tool_calls(text, [MAGIC])
    assert (call.name, json.loads(call.arguments), call.error) == ("magic", want, "")


# Text between calls holding what the scan stops at: reasoning of each dialect, other
# dialects' calls, harmony recipients, gpt-oss without its tokens, bare closers.
BETWEEN = [
    "plain prose, with (parentheses) and {braces",
    "<think>a drafted <tool_call>magic</tool_call></think>",
    "</think>",
    "[THINK]drafted[/THINK]",
    "[/THINK]",
    "\u25c1think\u25b7drafted\u25c1/think\u25b7",
    "<seed:think>drafted",
    "<|channel|>analysis<|message|>drafted<|end|>",
    "to=functions.magic <|message|>{}<|call|>",
    "assistantfinal",
    "assistantanalysis drafting, no final",
    "[TOOL_CALLS]magic[ARGS]{}",
    "]<]minimax[>[",
    '{"name": "magic"}</tool_call>',
    '<|tool_call>call:magic{ref:<|"|>g<|"|>}<tool_call|>',
    "<function=magic",
    # Reasoning that closes after the next call: that call was drafted in it.
    "<think>drafting, closed after the next call|</think>",
    "\u25c1think\u25b7drafting, closed after the next call|\u25c1/think\u25b7",
]
RUN = [
    "<tool_call>magic\n<arg_key>ref</arg_key>\n<arg_value>{v}</arg_value>\n</tool_call>",
    "<tool_call>\n<function=magic>\n<parameter=ref>\n{v}\n</parameter>\n</function>\n</tool_call>",
    "<function=magic>\n<parameter=ref>\n{v}\n</parameter>\n</function>\n</tool_call>",
    '<tool_call>\n{{"name": "magic", "arguments": {{"ref": "{v}"}}}}\n</tool_call>',
    '[TOOL_CALLS]magic[ARGS]{{"ref": "{v}"}}',
    '<|tool_call>call:magic{{ref:<|"|>{v}<|"|>}}<tool_call|>',
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.magic:0<|tool_call_argument_begin|>"
    '{{"ref": "{v}"}}<|tool_call_end|><|tool_calls_section_end|>',
]


@pytest.mark.parametrize("between", BETWEEN)
@pytest.mark.parametrize(
    "call", RUN, ids=["glm", "qwen3-coder", "function-tag", "hermes", "mistral", "gemma4", "kimi"]
)
def test_calls_after_prose_read_alike_on_either_path(call: str, between: str) -> None:
    first, second, third = (call.format(v=v) for v in "abc")
    between, _, after = between.partition("|")
    text = "\n".join([first, second, f"prose {between} prose", third, after])
    # A tag no dialect has, after each call: the scan searches for every next call.
    searched = "\n".join([first + "<b>", second + "<b>", f"prose {between} prose", third, after])
    for limit in (1, 2, 3, 33):
        plain = find_text_tool_calls(text, [MAGIC], limit=limit)
        assert plain == find_text_tool_calls(searched, [MAGIC], limit=limit)
        assert plain == find_text_tool_calls(text + "\n\nSee `magic`.", [MAGIC], limit=limit)
        assert plain[0].arguments in ('{"ref": "a"}', '{"ref": "c"}')


def test_glm_call_written_json_escaped_is_read() -> None:
    text = (
        "<tool_call>todo_write\\n<arg_key>todos</arg_key>\\n<arg_value>"
        '[{\\"id\\": \\"1\\", \\"task\\": \\"Check\\"}]</arg_value>\n</tool_call>'
    )
    (call,) = find_text_tool_calls(text)
    assert (call.name, json.loads(call.arguments)) == (
        "todo_write",
        {"todos": [{"id": "1", "task": "Check"}]},
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", ("", "plain")),
        ("<think>plan</think>answer", ("plan", "answer")),
        ("plan</think>answer", ("plan", "answer")),
        ("answer<think>unfinished", ("unfinished", "answer")),
        ("a<think>r1</think>b<think>r2</think>c", ("r1\nr2", "abc")),
    ],
)
def test_split_reasoning(text: str, expected: tuple[str, str]) -> None:
    assert split_reasoning(text) == expected
    assert split_reasoning(text)[1] == strip_reasoning(text)


def test_find_text_tool_calls_is_public_and_takes_tools() -> None:
    import inspect

    assert list(inspect.signature(find_text_tool_calls).parameters)[:2] == ["s", "tools"]


def test_new_tool_call_dialects_are_tool_call_dialects() -> None:
    assert {"minimax-tool-calls", "gemma-tool-call", "deepseek-tool-calls"} <= TOOL_CALL_DIALECTS


@pytest.mark.parametrize(
    "text",
    [
        "<|tool_call_start|>[f(a=1)]<|tool_call_end|>",
        '<TOOLCALL>[{"name": "f", "arguments": {}}]</TOOLCALL>',
        '<|tools_prefix|>[{"f": {}}]<|tools_suffix|>',
        '<function name="f"></function>',
        '<|START_ACTION|>[{"tool_name": "f", "parameters": {}}]<|END_ACTION|>',
    ],
)
def test_unread_family_calls_are_detected(text: str) -> None:
    assert has_text_tool_calls(text)
    assert find_text_tool_calls(text) == []


@pytest.mark.parametrize(
    "text",
    [
        ("<|tool_call>call:" * 40000),
        ("]<]minimax[>[<tool_call>" * 20000),
        ('<minimax:tool_call>\n<invoke name="f">' * 20000),
        (_ds("tool_call_begin") + "f" + _ds("tool_sep")) * 20000,
        ("<mm:think>" + "<|tool_call>" * 30000),
    ],
    ids=["gemma", "minimax-m3", "minimax-m2", "deepseek", "unclosed-block"],
)
def test_hostile_family_markup_is_linear(text: str) -> None:
    start = time.perf_counter()
    leak_dialects(text)
    find_text_tool_calls(text)
    has_text_tool_calls(text)
    assert time.perf_counter() - start < 5.0


# The loop, through a real loopback server.


def _lookup(seen: list[dict[str, Any]]) -> Tool:
    def run(args: dict[str, Any]) -> str:
        seen.append(args)
        return "12:00"

    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    return Tool("get_time", "The local time.", schema, run)


# A run_loop run here: a server of unknown kind, asked the time, text calls recovered.
TIME: dict[str, Any] = {"kind": "unknown", "prompt": "time?", "recover_text_tool_calls": True}


@pytest.mark.parametrize(
    "content",
    [MINIMAX_M2, GEMMA4, DEEPSEEK_V31, HARMONY_ANALYSIS, "<think>I need it. " + KIMI],
    ids=["minimax", "gemma4", "deepseek", "harmony-analysis", "kimi-in-unclosed-think"],
)
def test_loop_runs_family_calls(server: ScriptedServer, run_loop: LoopRunner, content: str) -> None:
    server.push(chat_reply(content), chat_reply("It is noon."))
    seen: list[dict[str, Any]] = []
    result = run_loop.result(tools=[_lookup(seen)], **TIME)
    assert result.text == "It is noon."
    assert seen == [{"city": "Paris"}]
    first = result.trace.iterations[0]
    assert first.ending == "text_tool_calls"
    assert [c.source for c in first.tool_calls] == ["text"]


@pytest.mark.parametrize(
    ("reply", "leak"),
    [
        (chat_reply("", reasoning_content="Call it: " + KIMI), "kimi-tool-calls"),
        (chat_reply("<think>Call it: " + MINIMAX_M2 + "</think>"), "minimax-tool-calls"),
    ],
    ids=["reasoning-field", "closed-think"],
)
def test_calls_in_reasoning_are_reported_never_run(
    server: ScriptedServer, run_loop: LoopRunner, reply: dict[str, Any], leak: str
) -> None:
    server.push(reply)
    seen: list[dict[str, Any]] = []
    result = run_loop.result(tools=[_lookup(seen)], **TIME)
    assert seen == []
    it = result.trace.iterations[0]
    assert it.ending == "tool_calls_in_reasoning"
    assert result.trace.outcome == "tool_calls_in_reasoning"
    assert leak in it.reasoning_leaks
    assert it.tool_calls == []


@pytest.mark.parametrize(
    ("name", "arguments", "why"),
    [
        ("get_time<arg_key>city", PARIS, "tool name"),
        ("get_time", '{"<arg_key>city": "Paris"}', "argument name"),
        ("functions|get_time", PARIS, "tool name"),
    ],
)
def test_native_calls_with_markup_are_fed_back(
    server: ScriptedServer, run_loop: LoopRunner, name: str, arguments: str, why: str
) -> None:
    server.push(chat_reply(tool_calls=[tool_call(name, arguments)]), chat_reply("Sorry."))
    seen: list[dict[str, Any]] = []
    result = run_loop.result(tools=[_lookup(seen)], **TIME)
    assert seen == []
    (rec,) = result.trace.iterations[0].tool_calls
    assert rec.is_error and why in rec.result
    sent = server.requests[-1].json["messages"][-1]
    assert sent["role"] == "tool" and why in sent["content"]


@pytest.mark.parametrize(
    ("model", "content", "expected"),
    [
        ("mistralai/Ministral-3-14B", GEMMA4, "000000000"),
        ("m", '[TOOL_CALLS]get_time[ARGS]{"city": "Paris"}', "000000000"),
        ("moonshotai/Kimi-K2-Thinking", GEMMA4, "functions.get_time:0"),
        ("m", KIMI, "functions.get_time:0"),
        ("m", GEMMA4, "call_0_0"),
    ],
    ids=["mistral-model", "mistral-reply", "kimi-model", "kimi-reply", "other"],
)
def test_ids_fit_the_family(
    server: ScriptedServer, run_loop: LoopRunner, model: str, content: str, expected: str
) -> None:
    server.push(chat_reply(content), chat_reply("noon"))
    result = run_loop.result(tools=[_lookup([])], model=model, **TIME)
    (rec,) = result.trace.iterations[0].tool_calls
    assert rec.id == expected
    if expected[0].isdigit():
        assert len(rec.id) == 9 and rec.id.isalnum()
    echoed = server.requests[-1].json["messages"]
    assert echoed[-2]["tool_calls"][0]["id"] == expected
    assert echoed[-1]["tool_call_id"] == expected


def test_typed_values_reach_a_typed_tool(server: ScriptedServer, run_loop: LoopRunner) -> None:
    got: list[str] = []

    @tool
    def magic(ref: str) -> str:
        """Look a reference up."""
        got.append(ref)
        return "found"

    server.push(chat_reply(_qwen({"ref": "5123123"})), chat_reply("done"))
    result = run_loop.result(
        kind="unknown", prompt="go", tools=[magic], recover_text_tool_calls=True
    )
    assert got == ["5123123"]
    assert result.trace.iterations[0].tool_calls[0].result == "found"


@pytest.mark.parametrize(
    ("name", "arguments", "verdict"),
    [
        ("ping<arg_key>message</arg_key>", '{"message": "hi"}', "markup in names"),
        ("ping", '{"<arg_key>message": "hi"}', "markup in keys"),
        ("ping", "{}", "empty arguments"),
        ("ping", '{"message": "hi"}', "clean"),
    ],
)
def test_doctor_native_call_hygiene(name: str, arguments: str, verdict: str) -> None:
    from rig_nb.capabilities import endpoint_report
    from rig_nb.testing import RecordedRequest, Response

    def answer(request: RecordedRequest) -> Response:
        body = request.json or {}
        if body.get("tools") and body.get("tool_choice") in ("auto", "required"):
            return Response(chat_reply(None, tool_calls=[tool_call(name, arguments)]))
        return Response(chat_reply("Hello."))

    with ScriptedServer([answer] * 20) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m")
    check = report.check("native_call_hygiene")
    assert check.verdict == verdict
    if verdict.startswith("markup"):
        assert "parser misread this family's call markup" in check.advice
        assert name in check.evidence or "<arg_key>" in check.evidence
    elif verdict == "clean":
        assert check.advice == ""


def test_advice_knows_every_tool_call_dialect() -> None:
    from rig_nb.capabilities.advice import advice

    fix = advice("vllm", "leak_dialects", "tool-call-tag", auto="tool call")
    assert "--tool-call-parser" in fix
    for name in sorted(TOOL_CALL_DIALECTS):
        assert advice("vllm", "leak_dialects", name, auto="tool call") == fix, name
    assert advice("vllm", "leak_dialects", "minimax-think", auto="tool call") != fix


def test_doctor_says_when_the_call_stayed_in_reasoning() -> None:
    from rig_nb.capabilities import endpoint_report
    from rig_nb.testing import RecordedRequest, Response

    def answer(request: RecordedRequest) -> Response:
        body = request.json or {}
        if body.get("tools") and body.get("tool_choice") == "required":
            return Response(chat_reply("", reasoning_content="Calling. " + KIMI))
        return Response(chat_reply("Hello."))

    with ScriptedServer([answer] * 20) as server, Client(server.base_url) as client:
        report = endpoint_report(client, "m")
    check = report.check("tool_choice_required")
    assert check.verdict == "call in reasoning"
    assert "left this family's call in the reasoning" in check.advice
