"""Why a prefix cache broke (issue 42): `Iteration.prefix_break` compares each request as
sent with the previous iteration's, `Trace.prefix_breaks` lists them; hostile prompts (huge,
not text, holding a key, with images) and the cost over a long conversation."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from rig_nb import Client, Iteration, RunRequest, Trace
from rig_nb.demo import DEMO_SYSTEM, DemoServer
from rig_nb.demo.context_personas import LONG_PROMPT, long_tools
from rig_nb.loop import run_trace
from rig_nb.prefix import SNIPPET_CHARS, first_difference, prefix_break
from rig_nb.redact import Redactor
from rig_nb.testing import ScriptedBackend, chat_reply
from rig_nb.testing import tool_call as scripted_call
from rig_nb.wire import WIRES, Call, Request, ToolSpec, Turn
from rig_nb.wire.sent import Sent

KEY = "sk-live-0123456789abcdefSECRET"
ATTRIBUTION = "x-anthropic-billing-header: cc_version=2.1.154; cc_entrypoint=cli; cch="


def sent(system: str = "be brief", turns: tuple[Any, ...] = (), tools: Any = ()) -> Sent:
    return Sent(system, tuple(tools), tuple(turns))


USER = Turn("user", "what is the weather in Paris?")
ASKED = Turn(
    "assistant",
    "",
    reasoning="I should look it up.",
    reasoning_field="reasoning_content",
    calls=(Call("call_1", "weather", '{"city": "Paris"}'),),
)
RESULT = Turn("tool", "sunny", call_id="call_1")
WEATHER = {"type": "function", "function": {"name": "weather", "parameters": {}}}


# --- the line itself ---------------------------------------------------------------------------


def test_a_request_that_only_grew_has_no_break() -> None:
    before = sent(turns=(USER,), tools=[("weather", WEATHER)])
    now = sent(turns=(USER, ASKED, RESULT), tools=[("weather", dict(WEATHER))])
    assert prefix_break(before, now) is None
    assert prefix_break(None, now) is None  # the first request has nothing before it


def test_a_system_prompt_that_changed_names_the_char_and_both_snippets() -> None:
    one = ATTRIBUTION + "3fa9c2d1; You are Claude Code, Anthropic's official CLI for Claude."
    two = ATTRIBUTION + "77b0e1aa; You are Claude Code, Anthropic's official CLI for Claude."
    said = prefix_break(sent(one, (USER,)), sent(two, (USER, ASKED)))
    at = len(ATTRIBUTION)
    assert said == (
        f"system changed at char {at}: {one[at : at + SNIPPET_CHARS]!r} became "
        f"{two[at : at + SNIPPET_CHARS]!r}"
    )


def test_a_system_prompt_that_grew_still_breaks_every_turn_after_it() -> None:
    said = prefix_break(sent("be brief"), sent("be brief. today is monday"))
    assert said == "system changed at char 8: '' became '. today is monday'"


@pytest.mark.parametrize(
    ("before", "now", "said"),
    [
        pytest.param([("a", 1)], [("a", 1), ("b", 2)], "tools changed: b", id="added"),
        pytest.param([("a", 1), ("b", 2)], [("a", 1)], "tools changed: b", id="removed"),
        pytest.param(
            [("a", 1), ("b", 2)], [("a", 1), ("b", 3)], "tools changed: b", id="redefined"
        ),
        pytest.param(
            [("a", 1), ("b", 2)], [("b", 2), ("a", 1)], "tools changed: b, a", id="reordered"
        ),
    ],
)
def test_tools_changed_names_them(before: Any, now: Any, said: str) -> None:
    assert prefix_break(sent(tools=before), sent(tools=now)) == said


def test_an_earlier_turn_sent_without_its_reasoning_is_a_rewritten_turn() -> None:
    dropped = dataclasses.replace(ASKED, reasoning="", reasoning_field="")
    said = prefix_break(sent(turns=(USER, ASKED, RESULT)), sent(turns=(USER, dropped, RESULT)))
    assert said == "turn 2 rewritten (assistant: reasoning dropped, reasoning_field dropped)"


def test_a_conversation_cut_short_is_a_rewritten_turn() -> None:
    said = prefix_break(sent(turns=(USER, ASKED, RESULT)), sent(turns=(USER,)))
    assert said == "turn 2 rewritten (dropped)"


def test_several_changes_are_named_together() -> None:
    said = prefix_break(sent("a", (USER, ASKED), [("x", 1)]), sent("b", (USER, RESULT), [("y", 1)]))
    assert said is not None
    parts = said.split("; ")
    assert parts[0].startswith("system changed at char 0")
    assert parts[1] == "tools changed: y, x"
    assert parts[2] == "turn 2 rewritten (assistant became tool)"


# --- hostile prompts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "system",
    [
        pytest.param(f"use {KEY} for the weather api. cch={{nonce}}; be brief", id="key-before"),
        pytest.param(f"cch={{nonce}}; use {KEY} for the weather api", id="key-after"),
        pytest.param(f"token:{KEY}{{nonce}} be brief", id="key-glued-to-the-change"),
        pytest.param(f"{'x' * 30}{KEY}{{nonce}}", id="key-across-the-snippet-start"),
    ],
)
def test_a_key_in_the_system_prompt_never_shows(system: str) -> None:
    redact = Redactor(KEY, ["http://127.0.0.1:1/v1"])
    one, two = system.replace("{nonce}", "3fa9c2d1"), system.replace("{nonce}", "77b0e1aa")
    said = prefix_break(sent(one), sent(two), redact)
    assert said is not None and said.startswith("system changed at char ")
    for part in (KEY, KEY[:12], KEY[-12:], "SECRET"):
        assert part not in said


def test_key_shapes_the_redactor_does_not_know_are_masked_too() -> None:
    other = "sk-ant-api03-" + "A1b2C3d4" * 4
    said = prefix_break(sent(f"1 {other} and more"), sent(f"2 {other} and more"))
    assert said is not None and other[:16] not in said and "[redacted]" in said


def test_a_huge_system_prompt_is_compared_without_copying_it_whole() -> None:
    big = "word " * 400_000  # 2 MB
    said = prefix_break(sent(big + "A tail"), sent(big + "B tail"))
    assert said == f"system changed at char {len(big)}: 'A tail' became 'B tail'"
    assert first_difference(big, big) == len(big)
    assert first_difference("", big) == 0


@pytest.mark.parametrize(
    ("system", "text"),
    [
        pytest.param(
            [{"type": "text", "text": "be"}, {"type": "text", "text": "brief"}],
            "be\nbrief",
            id="blocks",
        ),
        pytest.param(None, "", id="none"),
        pytest.param(42, "42", id="a-number"),
        pytest.param(
            [{"type": "image", "source": {"data": "AAAA"}}],
            '{"source": {"data": "AAAA"}, "type": "image"}',
            id="image",
        ),
    ],
)
def test_a_system_prompt_that_is_not_text_is_read_as_text(system: Any, text: str) -> None:
    request = Request("m", (Turn("system", "ignored"), USER), 16)
    body = {"model": "m", "system": system, "messages": [{"role": "user", "content": "hi"}]}
    assert Sent.of(body, request).system == text
    assert Sent.of(body, request).turns == (USER,)


def test_the_chat_and_responses_shapes_give_the_same_system_and_tools() -> None:
    request = Request("m", (Turn("system", "be brief"), USER), 16)
    chat = {
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "x"}],
        "tools": [WEATHER],
    }
    responses = {"instructions": "be brief", "input": [], "tools": [{"name": "weather"}]}
    assert Sent.of(chat, request).system == Sent.of(responses, request).system == "be brief"
    assert [n for n, _ in Sent.of(chat, request).tools] == ["weather"]
    assert [n for n, _ in Sent.of(responses, request).tools] == ["weather"]
    assert Sent.of(None, request) == Sent("be brief", (), (USER,))


def test_a_turn_whose_image_changed_is_rewritten() -> None:
    def picture(data: str) -> Turn:
        return Turn("user", f'[{{"type": "image_url", "image_url": {{"url": "{data}"}}}}]')

    before = sent(turns=(picture("data:image/png;base64," + "A" * 100_000), ASKED))
    now = sent(turns=(picture("data:image/png;base64," + "B" * 100_000), ASKED, RESULT))
    said = prefix_break(before, now)
    assert said == "turn 1 rewritten (user: text changed)"  # names the field, never the data


# --- the cost ---------------------------------------------------------------------------------


class Counted:
    """A turn that counts the equality tests made on it (never the same object twice)."""

    tests = 0

    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        Counted.tests += 1
        return isinstance(other, Counted) and other.n == self.n

    __hash__ = None  # type: ignore[assignment]


def _work(turns: int) -> int:
    before = sent(turns=tuple(Counted(i) for i in range(turns - 1)))
    now = sent(turns=tuple(Counted(i) for i in range(turns)))
    changed = sent(turns=(*now.turns[:-2], Counted(-1), now.turns[-1]))
    Counted.tests = 0
    assert prefix_break(before, now) is None
    assert prefix_break(now, changed) == f"turn {turns - 1} rewritten"
    return Counted.tests


def test_a_conversation_of_10000_turns_costs_linear_work() -> None:
    small, large = _work(1_000), _work(10_000)
    # Each turn is compared a bounded number of times: a linear cost, not a quadratic one.
    assert large <= 3 * 10_000
    assert large <= 11 * small


def test_a_run_shares_its_turns_so_each_earlier_turn_costs_one_identity_test() -> None:
    requests = [Request("m", (USER, *([ASKED, RESULT] * k)), 16) for k in range(50)]
    views = [Sent.of(None, r) for r in requests]
    assert all(prefix_break(a, b) is None for a, b in zip(views, views[1:], strict=False))


# --- in a run ----------------------------------------------------------------------------------


class AttributionNonce:
    """A backend that sends each request with a fresh nonce in its system prompt, as Claude
    Code's attribution line does (anthropics/claude-code#68900)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent = 0

    def nonce(self) -> str:
        # Fresh per request and differing from its first character on: a deterministic test.
        self.sent += 1
        return f"{self.sent % 16:x}{self.sent:07x}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _shaped(self, request: Request) -> Request:
        line = f"{ATTRIBUTION}{self.nonce()};"
        turns = tuple(
            Turn("system", f"{line}\n{t.text}") if t.role == "system" else t for t in request.turns
        )
        return dataclasses.replace(request, turns=turns)

    def chat(self, request: Request, **options: Any) -> Any:
        return self.inner.chat(self._shaped(request), **options)

    def stream(self, request: Request, reader: Any, **options: Any) -> Any:
        return self.inner.stream(self._shaped(request), reader, **options)


@pytest.fixture
def own_demo() -> Iterator[DemoServer]:
    # prefix-keyed-cache remembers conversations: a demo of this test's own.
    with DemoServer(stream_first_delay=0, stream_interval=0) as srv:
        yield srv


def _long(stream: bool) -> RunRequest:
    return RunRequest(
        "prefix-keyed-cache",
        512,
        system=f"{DEMO_SYSTEM} The weather api key is {KEY}.",
        prompt=LONG_PROMPT,
        tools=long_tools(),
        stream=stream,
    )


@pytest.mark.parametrize("api", list(WIRES))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_nonce_in_the_system_prompt_is_named_where_reuse_falls(
    own_demo: DemoServer, stream: bool, api: str
) -> None:
    with Client(own_demo.base_url, api_key=KEY, api=api) as client:
        steady = client.run_trace(_long(stream))
        shaped = run_trace(AttributionNonce(client), _long(stream))
    assert steady.outcome == shaped.outcome == "ok"
    assert steady.prefix_breaks == []
    # Ollama's native wire reports no cached tokens: its reuse is not known.
    assert steady.prefix_reuse[1:] == [None if api == "ollama" else 1.0] * 4
    assert len(shaped.prefix_breaks) == len(shaped.iterations) - 1 == 4
    assert shaped.iterations[0].prefix_break is None
    at = len(ATTRIBUTION)
    for line in shaped.prefix_breaks:
        assert line.startswith(f"system changed at char {at}: '")
        assert KEY not in line and "cch=" not in line  # the snippet starts at the change
    assert all(r is None if api == "ollama" else r < 1.0 for r in shaped.prefix_reuse[1:])
    again = Trace.from_json(shaped.to_json())
    assert again.prefix_breaks == shaped.prefix_breaks


def test_a_backend_that_renders_no_body_is_measured_on_the_request() -> None:
    backend = ScriptedBackend(
        [chat_reply(tool_calls=[scripted_call("weather", {"city": "Paris"})]), chat_reply("sunny")]
    )
    trace = backend_run(backend)
    assert trace.outcome == "ok" and trace.prefix_breaks == []
    assert [it.prefix_break for it in trace.iterations] == [None, None]


def backend_run(backend: Any) -> Trace:
    from rig_nb import Tool

    weather = Tool("weather", "the weather", {"type": "object"}, lambda city="": "sunny")
    return run_trace(backend, RunRequest("m", 64, prompt="weather?", tools=[weather]))


def test_a_request_that_failed_still_gets_its_break(own_demo: DemoServer) -> None:
    del own_demo
    backend = AttributionNonce(
        ScriptedBackend([chat_reply(tool_calls=[scripted_call("weather", {"city": "Paris"})])])
    )
    from rig_nb import Tool

    weather = Tool("weather", "the weather", {"type": "object"}, lambda city="": "sunny")
    request = RunRequest("m", 64, system="be brief", prompt="weather?", tools=[weather])
    trace = run_trace(backend, request)  # the second request finds the script exhausted
    assert trace.outcome == "BackendError"
    (said,) = trace.prefix_breaks
    assert said.startswith(f"system changed at char {len(ATTRIBUTION)}")


def test_the_request_as_sent_is_the_body_the_wire_rendered() -> None:
    seen: list[Any] = []
    spec = ToolSpec("weather", "the weather", {"type": "object"})
    request = Request("m", (USER,), 16, tools=(spec,), sent=lambda *sent: seen.append(sent))
    backend = ScriptedBackend([chat_reply("hi")])
    backend.chat(request)
    assert seen == [(backend.bodies[0], request)]


class DropsEarlierReasoning(AttributionNonce):
    """A backend that sends only the newest assistant turn's reasoning back, as templates and
    clients that drop earlier reasoning do (QwenLM/Qwen3#1826)."""

    def _shaped(self, request: Request) -> Request:
        last = max((i for i, t in enumerate(request.turns) if t.role == "assistant"), default=-1)
        turns = tuple(
            dataclasses.replace(t, reasoning="", reasoning_field="", signature="")
            if t.role == "assistant" and i != last
            else t
            for i, t in enumerate(request.turns)
        )
        return dataclasses.replace(request, turns=turns)


def test_an_earlier_turn_whose_reasoning_was_dropped_is_named(own_demo: DemoServer) -> None:
    request = RunRequest(**{**_long(False).__dict__, "model": "cache-breaking-template"})
    with Client(own_demo.base_url) as client:
        trace = run_trace(DropsEarlierReasoning(client), request)
    assert trace.outcome == "ok" and len(trace.iterations) == 5
    assert trace.iterations[1].prefix_break is None  # only grew: turn 2's reasoning still sent
    dropped = "rewritten (assistant: reasoning dropped, reasoning_field dropped)"
    assert trace.prefix_breaks == [f"turn {k} {dropped}" for k in (2, 4, 6)]
    assert trace.prefix_reuse[1] == 1.0 and all(r < 0.5 for r in trace.prefix_reuse[2:])


def test_a_trace_file_keeps_the_breaks_and_refuses_one_that_is_not_text() -> None:
    trace = Trace(
        iterations=[Iteration(index=0), Iteration(index=1, prefix_break="turn 1 rewritten")]
    )
    data = trace.to_dict()
    assert Trace.from_dict(data).prefix_breaks == ["turn 1 rewritten"]
    data["iterations"][1]["prefix_break"] = 5
    with pytest.raises(ValueError, match=r"iterations\[1\]\.prefix_break"):
        Trace.from_dict(data)
    del data["iterations"][1]["prefix_break"]  # a file from before the field: no break
    assert Trace.from_dict(data).prefix_breaks == []
