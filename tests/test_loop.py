from __future__ import annotations

import json
from typing import Any

import pytest
from runs import LoopRunner

from rig_nb import (
    Client,
    IterationLimitError,
    NoToolCallingError,
    OutputLimitError,
    RunRequest,
    Tool,
    Trace,
    tool,
)
from rig_nb.testing import RecordedRequest, ScriptedServer, chat_reply, tool_call

KEY = "sk-loop-secret-4242"
# What every run here shares: the key, the prompt, and the retries a Client makes by default.
LOOP: dict[str, Any] = {"key": KEY, "prompt": "go", "max_retries": 2}


class Recorder:
    """A tool that records its calls."""

    def __init__(self, name: str = "echo", fail: bool = False) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail = fail
        self.tool = Tool(name, "Echo the arguments back.", {"type": "object"}, self.run)

    def run(self, args: dict[str, Any]) -> str:
        self.calls.append(args)
        if self.fail:
            raise RuntimeError("boom")
        return "echo " + json.dumps(args, sort_keys=True)


def test_terminal_reply(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(chat_reply("The answer is 42."))
    result = run_loop.result(**LOOP)
    assert (result.text, result.iterations, result.tool_calls) == ("The answer is 42.", 1, 0)
    assert result.trace.outcome == "ok"
    assert server.requests[0].json["messages"] == [{"role": "user", "content": "go"}]


def test_system_prompt_sent_first(server: ScriptedServer) -> None:
    server.push(chat_reply("ok"))
    with Client(server.base_url) as c:
        c.run(RunRequest(model="m", max_tokens=8, system="be brief", prompt="go"))
    assert server.requests[0].json["messages"][0] == {"role": "system", "content": "be brief"}


def test_single_round_trip(server: ScriptedServer, run_loop: LoopRunner) -> None:
    rec = Recorder()
    server.push(chat_reply(tool_calls=[tool_call("echo", {"x": 1}, id="c1")]), chat_reply("done"))
    result = run_loop.result(tools=[rec.tool], **LOOP)
    assert (result.text, result.iterations, result.tool_calls) == ("done", 2, 1)
    assert rec.calls == [{"x": 1}]
    msgs = server.requests[1].json["messages"]
    assert msgs[-1] == {"role": "tool", "tool_call_id": "c1", "content": 'echo {"x": 1}'}
    assert server.requests[0].json["tool_choice"] == "auto"
    call = result.trace.iterations[0].tool_calls[0]
    assert (call.id, call.received_id, call.name, call.is_error) == ("c1", "c1", "echo", False)


def test_tool_error_fed_back(server: ScriptedServer, run_loop: LoopRunner) -> None:
    rec = Recorder(fail=True)
    server.push(chat_reply(tool_calls=[tool_call("echo", {})]), chat_reply("recovered"))
    result = run_loop.result(tools=[rec.tool], **LOOP)
    assert result.text == "recovered"
    assert server.requests[1].json["messages"][-1]["content"] == "error: boom"
    assert result.trace.iterations[0].tool_calls[0].is_error


def _always_calls(request: RecordedRequest) -> dict[str, Any]:
    return chat_reply(tool_calls=[tool_call("echo", {"n": len(request.json["messages"])})])


@pytest.mark.parametrize(
    ("asked", "rounds"),
    [
        pytest.param(0, 8, id="default-8"),
        pytest.param(3, 3, id="three"),
        pytest.param(32, 32, id="cap-32"),
        pytest.param(100, 32, id="held-to-32"),
    ],
)
def test_iteration_cap(
    server: ScriptedServer, run_loop: LoopRunner, asked: int, rounds: int
) -> None:
    server.push(*[_always_calls] * 40)
    rec = Recorder()
    with pytest.raises(IterationLimitError) as info:
        run_loop.result(tools=[rec.tool], max_iterations=asked, **LOOP)
    assert len(server.requests) == rounds
    assert len(rec.calls) == rounds
    trace = info.value.trace
    assert trace is not None
    assert len(trace.iterations) == rounds
    assert trace.outcome == "IterationLimitError"


def test_output_limit(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(chat_reply("<think>still thinking about", finish_reason="length"))
    with pytest.raises(OutputLimitError) as info:
        run_loop.result(**LOOP)
    trace = info.value.trace
    assert trace is not None
    assert trace.iterations[0].finish_reason == "length"
    assert trace.iterations[0].reasoning_shape == "unclosed"
    assert trace.iterations[0].error.startswith("OutputLimitError")


@pytest.mark.parametrize(
    ("content", "text", "shape"),
    [
        pytest.param("<think>plan</think>\n\nParis.", "Paris.", "closed", id="closed"),
        pytest.param("plan the answer</think>Paris.", "Paris.", "unopened", id="unopened"),
        pytest.param("  Paris.  ", "Paris.", "none", id="clean"),
    ],
)
def test_leaky_final_text_stripped(
    server: ScriptedServer, run_loop: LoopRunner, content: str, text: str, shape: str
) -> None:
    server.push(chat_reply(content))
    result = run_loop.result(**LOOP)
    assert result.text == text
    it = result.trace.iterations[0]
    assert (it.raw_content, it.text, it.reasoning_shape) == (content, text, shape)


@pytest.mark.parametrize("count", [pytest.param(32, id="32-run"), pytest.param(33, id="33-none")])
def test_calls_per_reply_cap(server: ScriptedServer, run_loop: LoopRunner, count: int) -> None:
    calls = [tool_call("echo", {"i": i}, id=f"c{i}") for i in range(count)]
    server.push(chat_reply(tool_calls=calls), chat_reply("done"))
    rec = Recorder()
    if count <= 32:
        assert run_loop.result(tools=[rec.tool], **LOOP).tool_calls == 32
        assert len(rec.calls) == 32
        return
    with pytest.raises(IterationLimitError) as info:
        run_loop.result(tools=[rec.tool], **LOOP)
    assert rec.calls == []
    assert info.value.trace is not None
    assert info.value.trace.iterations[0].tool_calls == []


@pytest.mark.parametrize(
    ("name", "arguments", "fed_back"),
    [
        pytest.param("nosuch", "{}", 'error: unknown tool "nosuch"', id="unknown-tool"),
        pytest.param("echo", "[1, 2]", "error: arguments are not a JSON object", id="array"),
        pytest.param("echo", '"text"', "error: arguments are not a JSON object", id="string"),
        pytest.param("echo", "{bad json", "error: arguments are not valid JSON", id="invalid"),
        pytest.param("echo", "[" * 100_000, "error: arguments are not valid JSON", id="deep"),
    ],
)
def test_bad_calls_fed_back_without_running(
    server: ScriptedServer, run_loop: LoopRunner, name: str, arguments: str, fed_back: str
) -> None:
    rec = Recorder()
    server.push(chat_reply(tool_calls=[tool_call(name, arguments, id="c1")]), chat_reply("ok"))
    result = run_loop.result(tools=[rec.tool], **LOOP)
    assert rec.calls == []
    assert server.requests[1].json["messages"][-1]["content"] == fed_back
    assert result.trace.iterations[0].tool_calls[0].is_error


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(
            {"id": "c1", "type": "function", "function": {"arguments": "{}"}}, id="no-name"
        ),
        pytest.param({"id": "c1", "type": "function", "function": {"name": ""}}, id="empty-name"),
        pytest.param({"id": "c1", "type": "custom", "custom": {"name": "echo"}}, id="custom"),
        pytest.param("not an object", id="string-entry"),
    ],
)
def test_unexecutable_call_is_an_error(
    server: ScriptedServer, run_loop: LoopRunner, call: Any
) -> None:
    server.push(chat_reply("", tool_calls=[call]))
    rec = Recorder()
    with pytest.raises(NoToolCallingError) as info:
        run_loop.result(tools=[rec.tool], **LOOP)
    assert rec.calls == []
    assert info.value.trace is not None


def test_echoed_turn_normalized(server: ScriptedServer, run_loop: LoopRunner) -> None:
    calls = [
        tool_call("echo", "", id=""),
        tool_call("echo", "   \n", id="dup"),
        tool_call("echo", '{"k": 1}', id="dup"),
    ]
    server.push(
        chat_reply("<think>let me call</think>Calling.", tool_calls=calls), chat_reply("ok")
    )
    rec = Recorder()
    result = run_loop.result(tools=[rec.tool], kind="llama.cpp", **LOOP)
    msgs = server.requests[1].json["messages"]
    assistant = msgs[1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Calling."
    # The inline reasoning goes back in the field llama.cpp reads (stripped content kept).
    assert assistant["reasoning_content"] == "let me call"
    sent = assistant["tool_calls"]
    ids = [c["id"] for c in sent]
    assert all(ids) and len(set(ids)) == 3
    assert ids[1] == "dup"
    assert [c["function"]["arguments"] for c in sent] == ["{}", "{}", '{"k": 1}']
    results = msgs[2:]
    assert [m["tool_call_id"] for m in results] == ids
    assert [m["content"] for m in results] == ["echo {}", "echo {}", 'echo {"k": 1}']
    recs = result.trace.iterations[0].tool_calls
    assert [r.received_id for r in recs] == ["", "dup", "dup"]
    assert [r.id for r in recs] == ids


def test_ids_unique_across_rounds(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(
        chat_reply(tool_calls=[tool_call("echo", {}, id="same")]),
        chat_reply(tool_calls=[tool_call("echo", {}, id="same")]),
        chat_reply("ok"),
    )
    run_loop.result(tools=[Recorder().tool], **LOOP)
    msgs = server.requests[2].json["messages"]
    tool_ids = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
    assert len(tool_ids) == len(set(tool_ids)) == 2


@pytest.mark.parametrize(
    ("temperature", "sent"),
    [pytest.param(0.0, None, id="zero-omitted"), pytest.param(0.7, 0.7, id="sent")],
)
def test_temperature(
    server: ScriptedServer, run_loop: LoopRunner, temperature: float, sent: float | None
) -> None:
    server.push(chat_reply("ok"))
    run_loop.result(temperature=temperature, **LOOP)
    assert server.requests[0].json.get("temperature") == sent


@pytest.mark.parametrize("max_tokens", [0, -1])
def test_max_tokens_required(server: ScriptedServer, run_loop: LoopRunner, max_tokens: int) -> None:
    with pytest.raises(ValueError):
        run_loop.result(max_tokens=max_tokens, **LOOP)
    assert server.requests == []


def test_invalid_tools_rejected_before_any_request(
    server: ScriptedServer, run_loop: LoopRunner
) -> None:
    bad = Tool("has space", "d", {"type": "object"}, lambda a: "")
    with pytest.raises(ValueError):
        run_loop.result(tools=[bad], **LOOP)
    assert server.requests == []


@pytest.mark.parametrize(
    "field", [pytest.param("reasoning_content", id="vllm"), pytest.param("reasoning", id="ollama")]
)
def test_reasoning_field_captured(server: ScriptedServer, run_loop: LoopRunner, field: str) -> None:
    server.push(chat_reply("Paris.", **{field: "The user asks for a capital."}))
    result = run_loop.result(**LOOP)
    assert result.trace.iterations[0].reasoning_content == "The user asks for a capital."
    assert result.text == "Paris."


def test_keyboard_interrupt_leaves_live_trace(server: ScriptedServer) -> None:
    def interrupt(args: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    t = Tool("stop", "Interrupts.", {"type": "object"}, interrupt)
    server.push(chat_reply("<think>x</think>", tool_calls=[tool_call("stop", {})]))
    trace = Trace()
    with Client(server.base_url) as c, pytest.raises(KeyboardInterrupt):
        c.run(RunRequest(model="m", max_tokens=8, prompt="go", tools=[t]), trace=trace)
    assert trace.outcome == "KeyboardInterrupt"
    assert len(trace.iterations) == 1
    assert trace.iterations[0].raw_content == "<think>x</think>"
    assert trace.iterations[0].tool_calls[0].name == "stop"
    assert trace.iterations[0].error.startswith("KeyboardInterrupt")


def test_live_trace_and_listener(server: ScriptedServer) -> None:
    seen: list[tuple[int, str]] = []
    trace = Trace()
    trace.add_listener(lambda t: seen.append((len(t.iterations), t.outcome)))
    server.push(chat_reply(tool_calls=[tool_call("echo", {})]), chat_reply("ok"))
    with Client(server.base_url) as c:
        result = c.run(
            RunRequest(model="m", max_tokens=8, prompt="go", tools=[Recorder().tool]), trace=trace
        )
    assert result.trace is trace
    assert (1, "") in seen and (2, "") in seen
    assert seen[-1] == (2, "ok")


def test_trace_round_trip_and_no_key(server: ScriptedServer, run_loop: LoopRunner) -> None:
    server.push(
        chat_reply(
            "<think>a</think>",
            tool_calls=[tool_call("echo", {"q": KEY[:3]})],
            reasoning_content="why",
        ),
        chat_reply("final"),
    )
    result = run_loop.result(tools=[Recorder().tool], **LOOP)
    text = result.trace.to_json()
    assert KEY not in text
    back = Trace.from_json(text)
    assert back == result.trace
    assert back.to_json() == text
    assert result.trace.endpoint == f"127.0.0.1:{server.port}"
    df = result.trace.to_dataframe()
    assert list(df["index"]) == [0, 1]
    assert result.trace.tool_calls_dataframe()["name"].tolist() == ["echo"]
    total = result.trace.usage()
    assert (total.prompt_tokens, total.completion_tokens) == (20, 10)


def test_decorated_tool_validates_arguments(server: ScriptedServer, run_loop: LoopRunner) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    server.push(
        chat_reply(
            tool_calls=[
                tool_call("add", {"a": 1, "b": "x"}, id="c1"),
                tool_call("add", {"a": 2, "b": 3}, id="c2"),
            ]
        ),
        chat_reply("five"),
    )
    result = run_loop.result(tools=[add], **LOOP)
    results = [m["content"] for m in server.requests[1].json["messages"] if m["role"] == "tool"]
    assert results[0].startswith("error: ")
    assert results[1] == "5"
    assert server.requests[0].json["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assert result.tool_calls == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_loop_runs_on_an_in_process_backend(stream: bool) -> None:
    from rig_nb.loop import run
    from rig_nb.testing import ScriptedBackend, chat_reply, tool_call

    backend = ScriptedBackend(
        [chat_reply(tool_calls=[tool_call("add", {"a": 2, "b": 3})]), chat_reply("5")]
    )
    add = Tool(
        "add",
        "Add two integers.",
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        lambda args: str(args["a"] + args["b"]),
    )
    result = run(backend, RunRequest("m", 64, prompt="2+3?", tools=[add], stream=stream))
    assert (result.text, result.tool_calls, result.trace.outcome) == ("5", 1, "ok")
    assert result.trace.endpoint == "in-process"
    assert [it.streamed for it in result.trace.iterations] == [stream, stream]
    assert backend.bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_add",
        "content": "5",
    }
