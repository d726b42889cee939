"""The doctor's reasoning_replay and thinking_switch checks, the demo personas behind them, and
compare showing replay off next to replay on, all over real loopback servers."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest
from shared import REASONING_PERSONAS

from rig_nb import BackendError, Client, RunRequest
from rig_nb.capabilities import endpoint_report
from rig_nb.capabilities.thinking import REPLAY_CANDIDATES, TEMPLATE_CANDIDATES, replay_conversation
from rig_nb.compare import Endpoint, Scenario, compare, summarize
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.demo.reasoning_personas import reasoning_personas
from rig_nb.testing import RecordedRequest, Response, ScriptedServer, chat_reply

KEY = "sk-doctor-secret-7788"
FULL_ANSWER = (
    "Here is what I found. Lisbon: 21 C, clear sky. Oslo: 4 C, light rain. add(21, 4) gives 25."
)


def _demo_run(client: Client, model: str, **options: Any) -> Any:
    request = RunRequest(
        model, 512, system=DEMO_SYSTEM, prompt=DEMO_PROMPT, tools=demo_tools(), **options
    )
    return client.run_trace(request)


# persona -> (server, reasoning_replay, thinking_switch, a phrase of each advice or "").
DOCTOR = [
    pytest.param(
        "deepseek-thinking-tools",
        "unknown",
        "rendered via reasoning_content",
        "ignored",
        "",
        "by hand in RunRequest(extra_body",
        id="deepseek-thinking-tools",
    ),
    pytest.param(
        "vllm-reads-reasoning",
        "vllm",
        "rendered via reasoning",
        "ignored",
        "",
        "vllm-project/vllm#40816",
        id="vllm-reads-reasoning",
    ),
    pytest.param(
        "ignores-thinking-switch",
        "lm-studio",
        "ignored",
        "ignored",
        'reasoning_field="content"',
        "lmstudio-bug-tracker#2413",
        id="ignores-thinking-switch",
    ),
    pytest.param(
        "honors-thinking-switch",
        "vllm",
        "ignored",
        "honored",
        "vllm-project/vllm#38488",
        "",
        id="honors-thinking-switch",
    ),
    pytest.param("well-behaved", "vllm", "ignored", "n/a", "", "", id="no-reasoning-at-all"),
    pytest.param(
        "ollama-reasoning", "ollama", "ignored", "ignored", "ollama PR#18281", "think", id="ollama"
    ),
]


@pytest.mark.parametrize(("model", "server", "replay", "switch", "fix", "switch_fix"), DOCTOR)
def test_the_doctor_sees_what_each_persona_reads_back_and_switches(
    demo_client: Client,
    model: str,
    server: str,
    replay: str,
    switch: str,
    fix: str,
    switch_fix: str,
) -> None:
    report = endpoint_report(demo_client, model)
    assert report.server == server
    got = report.check("reasoning_replay")
    assert got.verdict == replay
    assert (fix in got.advice) if fix else got.advice == ""
    thinking = report.check("thinking_switch")
    assert thinking.verdict == switch
    assert (switch_fix in thinking.advice) if switch_fix else thinking.advice == ""
    assert got.evidence and thinking.evidence


def test_a_conversation_refused_without_the_field_shows_it_is_read(demo_client: Client) -> None:
    got = endpoint_report(demo_client, "deepseek-thinking-tools").check("reasoning_replay")
    assert got.evidence == "error 400 without it, answered with reasoning_content"
    assert got.trace is not None and got.trace.outcome != "BackendError"


def test_replay_tokens_are_the_evidence(demo_client: Client) -> None:
    got = endpoint_report(demo_client, "vllm-reads-reasoning").check("reasoning_replay")
    counts = dict(
        re.findall(r"(reasoning_content|reasoning|without reasoning) (\d+)", got.evidence)
    )
    assert int(counts["reasoning"]) > int(counts["without reasoning"])
    assert counts["reasoning_content"] == counts["without reasoning"]


def _rejecting(field: str) -> Any:
    """A server that refuses any request carrying `field` with the 400 a strict server sends."""

    def handle(request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET":
            return {"data": [{"id": "m", "owned_by": "vllm"}]}
        body = request.json
        if field in body:
            return Response({"error": {"message": f"Unrecognized request argument: {field}"}}, 400)
        return chat_reply("391.", reasoning="Let me multiply.")

    return handle


def test_a_switch_the_server_refuses_is_error_400_with_advice() -> None:
    with ScriptedServer([_rejecting("chat_template_kwargs")] * 40) as server:
        with Client(server.base_url, KEY, max_retries=0) as client:
            report = endpoint_report(client, "m", stream=False)
            check = report.check("thinking_switch")
            assert check.verdict == "error 400"
            assert "by hand in RunRequest(extra_body=...)" in check.advice
            assert "chat_template_kwargs.enable_thinking" in check.advice
            # The loop's error names the fields it sent.
            with pytest.raises(BackendError, match="chat_template_kwargs.thinking"):
                client.run(RunRequest("m", 64, prompt="go", thinking=False))
    assert KEY not in check.evidence + check.advice


def test_a_server_error_to_the_switch_gets_no_advice() -> None:
    def busy(request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET" or "chat_template_kwargs" not in request.json:
            return _rejecting("nothing")(request)
        return Response({"error": {"message": "busy"}}, 503)

    with ScriptedServer([busy] * 40) as server, Client(server.base_url, max_retries=0) as c:
        check = endpoint_report(c, "m", stream=False).check("thinking_switch")
    assert (check.verdict, check.advice) == ("error 503", "")


def _llama_server(renders: set[str]) -> Any:
    """A llama-server stand-in: model list, chat replies, and /apply-template rendering the
    reasoning of the fields in `renders` (as a Qwen3-style template does)."""

    def handle(request: RecordedRequest) -> Response | dict[str, Any]:
        if request.method == "GET":
            return {"data": [{"id": "m", "owned_by": "llamacpp"}]}
        body = request.json
        if request.path == "/apply-template":
            parts = []
            for m in body["messages"]:
                shown = [m[f] for f in sorted(renders) if f in m]
                parts.append(f"<|{m['role']}|>{''.join(shown)}{m.get('content') or ''}")
            return {"prompt": "".join(parts)}
        return chat_reply("391.", reasoning_content="Let me multiply.")

    return handle


@pytest.mark.parametrize(
    ("renders", "verdict"),
    [
        pytest.param({"reasoning_content"}, "rendered via reasoning_content", id="renders-rc"),
        pytest.param({"reasoning"}, "rendered via reasoning", id="renders-reasoning"),
        pytest.param({"thinking"}, "rendered via thinking", id="renders-thinking"),
        pytest.param(set(), "ignored", id="drops-it"),
    ],
)
def test_on_llama_cpp_apply_template_is_the_judge(renders: set[str], verdict: str) -> None:
    with ScriptedServer([_llama_server(renders)] * 20) as server:
        with Client(server.base_url, KEY) as client:
            report = endpoint_report(client, "m", stream=False)
        applied = [r for r in server.requests if r.path == "/apply-template"]
    assert report.server == "llama.cpp"
    check = report.check("reasoning_replay")
    assert check.verdict == verdict
    assert len(applied) == len(TEMPLATE_CANDIDATES)
    assert all(r.json["messages"][1]["tool_calls"] for r in applied)
    if verdict == "ignored":
        assert "--reasoning-preserve" in check.advice
    if verdict == "rendered via reasoning":
        assert 'reasoning_field="reasoning"' in check.advice


def test_the_replay_conversation_carries_the_marker_in_one_field_only() -> None:
    plain = [t.as_message() for t in replay_conversation(None)]
    assert [m["role"] for m in plain] == ["user", "assistant", "tool"]
    for field in REPLAY_CANDIDATES:
        turn = replay_conversation(field)[1].as_message()
        assert set(turn) - set(plain[1]) == {field}


@pytest.mark.parametrize("model", REASONING_PERSONAS)
def test_reasoning_personas_name_their_public_source(demo: DemoServer, model: str) -> None:
    doc = inspect.getdoc(demo.personas[model]) or ""
    assert re.search(r"[\w-]+/[\w.-]+ ?(?:PR)?#\d+", doc), doc
    assert [p.name for p in reasoning_personas()] == REASONING_PERSONAS


def test_deepseek_refuses_a_tool_turn_without_its_reasoning(demo_client: Client) -> None:
    trace = _demo_run(demo_client, "deepseek-thinking-tools", reasoning_replay="none")
    assert trace.outcome == "BackendError"
    assert "Missing `reasoning_content` field in the assistant message at message index 2" in (
        trace.error
    )
    assert len(trace.iterations) == 2
    ok = _demo_run(demo_client, "deepseek-thinking-tools")
    assert (ok.outcome, ok.iterations[-1].text) == ("ok", FULL_ANSWER)
    assert [it.replayed for it in ok.iterations] == ["reasoning_content"] * 2 + [""]


@pytest.mark.parametrize(
    ("options", "answer", "calls"),
    [
        pytest.param({}, FULL_ANSWER, 3, id="replayed-as-reasoning"),
        pytest.param(
            {"reasoning_field": "reasoning_content"}, "no longer know", 2, id="sent-as-rc"
        ),
        pytest.param({"reasoning_replay": "none"}, "no longer know", 2, id="not-replayed"),
    ],
)
def test_vllm_answers_turn_two_only_when_it_got_its_reasoning(
    demo_client: Client, options: dict[str, Any], answer: str, calls: int
) -> None:
    trace = _demo_run(demo_client, "vllm-reads-reasoning", **options)
    assert trace.outcome == "ok"
    assert answer in trace.iterations[-1].text
    assert len(trace.tool_calls) == calls


def test_vllm_counts_the_reasoning_it_reads_in_prompt_tokens(demo: DemoServer) -> None:
    import httpx

    counts = []
    for field in (None, "reasoning_content", "reasoning"):
        messages = [t.as_message() for t in replay_conversation(field)]
        body = {"model": "vllm-reads-reasoning", "messages": messages}
        reply = httpx.post(f"{demo.base_url}/chat/completions", json=body, timeout=10)
        counts.append(reply.json()["usage"]["prompt_tokens"])
    assert counts[0] == counts[1] < counts[2]


@pytest.mark.parametrize(
    ("model", "thinking", "reasons"),
    [
        pytest.param("honors-thinking-switch", False, False, id="honors-off"),
        pytest.param("honors-thinking-switch", True, True, id="honors-on"),
        pytest.param("honors-thinking-switch", None, True, id="honors-unset"),
        pytest.param("ignores-thinking-switch", False, True, id="ignores-off"),
    ],
)
def test_thinking_switch_personas(
    demo_client: Client, model: str, thinking: Any, reasons: bool
) -> None:
    trace = _demo_run(demo_client, model, thinking=thinking)
    assert trace.outcome == "ok"
    assert all(bool(it.reasoning_content) is reasons for it in trace.iterations)
    sent = trace.iterations[0].thinking_sent
    assert (sent != {}) is (thinking is not None)


def test_compare_shows_replay_off_next_to_replay_on(demo: DemoServer) -> None:
    endpoint = Endpoint("deepseek", demo.base_url, "deepseek-thinking-tools")
    scenarios = [
        Scenario(
            f"replay {mode}",
            prompt=DEMO_PROMPT,
            system=DEMO_SYSTEM,
            tools=demo_tools(),
            max_tokens=512,
            reasoning_replay=mode,
        )
        for mode in ("none", "tool_turns")
    ]
    df = compare([endpoint], scenarios=scenarios, progress=False)
    assert list(df["outcome"]) == ["BackendError", "ok"]
    matrix = summarize(df)
    cells = [str(matrix.loc[s.name, "deepseek"]) for s in scenarios]
    assert cells[0].startswith("0/1") and cells[1].startswith("1/1")
    trace = df.attrs["traces"][1]
    assert trace.settings["reasoning_replay"] == "tool_turns"
    assert json.loads(trace.to_json())["iterations"][0]["replayed"] == "reasoning_content"


def test_an_invalid_thinking_scenario_fails_its_own_rows(demo: DemoServer) -> None:
    endpoint = Endpoint("demo", demo.base_url, "honors-thinking-switch")
    df = compare(
        [endpoint],
        scenarios=[Scenario("bad", prompt="hi", thinking="max"), Scenario("ok", prompt="hi")],
        progress=False,
    )
    assert list(df["outcome"]) == ["ValueError", "ok"]
    assert "thinking must be" in df["error"][0]


def test_without_apply_template_llama_cpp_is_judged_by_tokens() -> None:
    def handle(request: RecordedRequest) -> Response | dict[str, Any]:
        if request.path == "/apply-template":
            return Response({"error": {"message": "not found"}}, 404)
        if request.method == "GET":
            return {"data": [{"id": "m", "owned_by": "llamacpp"}]}
        turns = [m for m in request.json["messages"] if m["role"] == "assistant"]
        read = sum(len(m.get("reasoning_content", "").split()) for m in turns)
        return chat_reply("391.", usage={"prompt_tokens": 30 + read, "completion_tokens": 1})

    with ScriptedServer([handle] * 20) as server, Client(server.base_url, KEY) as client:
        check = endpoint_report(client, "m", stream=False).check("reasoning_replay")
    assert check.verdict == "rendered via reasoning_content"
    assert check.evidence.startswith("prompt_tokens without reasoning 30; with reasoning_content")
