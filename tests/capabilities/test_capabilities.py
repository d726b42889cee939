"""endpoint_report against scripted servers: request budget, verdicts, server guess, advice."""

from __future__ import annotations

from typing import Any

import pytest
from doctor_fakes import KEY, FakeServer, report_of

from rig_nb import Client
from rig_nb.capabilities import CHECKS, describe_report, endpoint_report, guess_server
from rig_nb.clients import CLIENTS
from rig_nb.testing import (
    RecordedRequest,
    Response,
    ScriptedServer,
    chat_reply,
)
from rig_nb.wire import WIRES
from rig_nb.wire import Reply as WireReply


def test_every_check_is_there_within_the_request_budget() -> None:
    report, requests = report_of(FakeServer())
    assert [c.name for c in report.checks] == list(CHECKS)
    # The model list and 14 + prefix_cache 2 (no window known here: context_window sends
    # nothing) + concurrency 4 + tool_schemas 6 + honored_params 6 + api_parity 2 for each
    # other wire + agent_clients 2 a client.
    assert len(requests) <= 1 + 14 + 2 + 4 + 6 + 6 + 2 * (len(WIRES) - 1) + CHECKS["agent_clients"]
    assert report.model == "m"
    verdicts = {c.name: c.verdict for c in report.checks}
    assert verdicts.pop("concurrency").startswith("parallel (")  # an instant server
    assert verdicts == {
        "tool_choice_unset": "text",
        "tool_choice_auto": "tool call",
        "tool_choice_required": "tool call",
        "reasoning_location": "none",
        "leak_dialects": "no",
        "text_tool_calls": "no",
        "native_call_hygiene": "clean",
        "stream_parity": "same",
        "stream_grammar": "conforms",
        "usage_reported": "yes",
        "reasoning_tokens_reported": "no",
        "structured_output": "ignored",
        "reasoning_replay": "ignored",
        "thinking_switch": "n/a",
        "api_parity": "differs: question: fails only over responses (reply error); "
        "probe: fails only over responses (reply error); "
        "question: fails only over messages (reply error); "
        "probe: fails only over messages (reply error); "
        "question: fails only over ollama (reply error); "
        "probe: fails only over ollama (reply error)",
        "context_window": "n/a",
        "prefix_cache": "not reported",
        # A named tool_choice gets text here, as tool_choice "auto" does.
        "tool_schemas": "no call: plain, ref_defs, any_of_null, pattern_unanchored, "
        "format_date_time, nested_3",
        # It calls ping whatever is named, and its answer never lists the words asked for.
        "honored_params": "unclear: tool_choice=named, stop",
        # The fake streams chat events on every route, and always calls a tool.
        "agent_clients": "claude-code BackendError; codex BackendError; "
        "opencode IterationLimitError",
    }
    assert report.check("tool_choice_unset").advice.startswith("this endpoint only calls tools")
    assert report.check("reasoning_tokens_reported").advice == ""  # no reasoning seen
    for check in report.checks:
        assert check.name in describe_report(report)
    df = report.to_dataframe()
    assert list(df.columns) == ["check", "verdict", "evidence", "advice"] and len(df) == len(CHECKS)


def test_without_streaming_fewer_requests_and_parity_unchecked() -> None:
    report, requests = report_of(FakeServer(), stream=False)
    assert not any(r.json and r.json.get("stream") for r in requests if r.method == "POST")
    assert report.check("stream_parity").verdict == "not checked"
    # Claude Code and opencode stream every request; Codex's wire is not answered here.
    clients = report.check("agent_clients")
    assert clients.verdict == "claude-code not checked; codex n/a; opencode not checked"
    assert clients.ok is None


@pytest.mark.parametrize(
    ("fake", "server"),
    [
        pytest.param(FakeServer(owned_by="vllm"), "vllm", id="vllm"),
        pytest.param(FakeServer(owned_by="llamacpp"), "llama.cpp", id="llama-server"),
        pytest.param(FakeServer(owned_by="me"), "llama.cpp", id="llama-cpp-python"),
        pytest.param(FakeServer(owned_by="library"), "ollama", id="ollama"),
        pytest.param(FakeServer(owned_by="organization_owner"), "lm-studio", id="lm-studio"),
        pytest.param(FakeServer(owned_by="sglang"), "sglang", id="sglang"),
        pytest.param(
            FakeServer(owned_by="x", extra_top={"timings": {"predicted_n": 5}}),
            "llama.cpp",
            id="timings",
        ),
        pytest.param(
            FakeServer(owned_by="openai", headers={"x-litellm-version": "1.108.7"}),
            "litellm",
            id="litellm-header",
        ),
        pytest.param(
            FakeServer(owned_by="x", extra_top={"system_fingerprint": "fp_44709d6fcb"}),
            "openai",
            id="openai-fingerprint",
        ),
        pytest.param(FakeServer(owned_by="rig-nb-demo"), "unknown", id="unknown"),
    ],
)
def test_the_server_kind_is_guessed_from_what_it_sends(fake: FakeServer, server: str) -> None:
    report, _ = report_of(fake, stream=False)
    assert report.server == server


def test_guess_server_without_a_reply() -> None:
    assert guess_server("", None) == "unknown"
    assert guess_server("VLLM", None) == "vllm"
    assert guess_server("x", WireReply(system_fingerprint="b6123-abcdef0")) == "llama.cpp"


def test_reasoning_in_content_gets_the_servers_parser_flag() -> None:
    fake = FakeServer(owned_by="vllm", content="Let me think.\n</think>\n\n391.")
    report, _ = report_of(fake)
    check = report.check("reasoning_location")
    assert check.verdict == "content:unopened"
    assert "--reasoning-parser" in check.advice
    assert "</think>" in check.evidence


def test_reasoning_in_a_field_is_named() -> None:
    fake = FakeServer(owned_by="library", reasoning={"reasoning": "17 * 20 = 340; plus 51."})
    report, _ = report_of(fake)
    assert report.check("reasoning_location").verdict == "field:reasoning"
    assert report.check("reasoning_location").advice == ""
    assert report.check("reasoning_tokens_reported").advice != ""  # reasoning, but not counted


def test_tool_calls_as_text_name_the_dialect_and_the_fix() -> None:
    class TextCalls(FakeServer):
        def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
            if request.method == "POST" and request.json.get("tools"):
                text = '<tool_call>\n{"name": "ping", "arguments": {"message": "hi"}}\n</tool_call>'
                return chat_reply(text)
            return super().__call__(request)

    report, _ = report_of(TextCalls(owned_by="vllm"))
    assert report.check("tool_choice_auto").verdict == "text"
    assert "--tool-call-parser" in report.check("tool_choice_auto").advice
    text_calls = report.check("text_tool_calls")
    assert text_calls.verdict == "tool-call-tag"
    assert "recover_text_tool_calls=True" in text_calls.advice
    assert report.check("leak_dialects").verdict == "tool-call-tag"


def test_a_stream_that_differs_from_the_whole_reply_is_named() -> None:
    # LiteLLM's way: non-streamed replies have the think block split out, streamed ones do not.
    fake = FakeServer(
        owned_by="openai",
        headers={"x-litellm-version": "1.108.7"},
        reasoning={"reasoning_content": "Let me think."},
        stream_content="<think>Let me think.</think>391.",
        content="391.",
    )
    report, _ = report_of(fake)
    parity = report.check("stream_parity")
    assert parity.verdict.startswith("differs: ")
    assert "tags none not streamed, closed streamed" in parity.verdict
    assert "LiteLLM rewrites non-streamed replies" in parity.advice
    assert report.server == "litellm"


def test_http_errors_are_verdicts_and_evidence_holds_no_secret() -> None:
    class Strict(FakeServer):
        def __call__(self, request: RecordedRequest) -> Response | dict[str, Any]:
            if request.method == "POST" and request.json.get("tool_choice") == "required":
                message = f"tool_choice required is not supported (key {KEY})"
                return Response({"error": {"message": message}}, status=400)
            return super().__call__(request)

    report, _ = report_of(Strict())
    check = report.check("tool_choice_required")
    assert check.verdict == "error 400"
    assert "not supported" in check.evidence and KEY not in check.evidence
    assert 'rejects tool_choice "required"' in check.advice
    assert KEY not in describe_report(report) and KEY not in str(report.to_dict())


def _answering(get: Response, post: Response) -> Any:
    def handle(request: RecordedRequest) -> Response:
        return get if request.method == "GET" else post

    return handle


NOT_FOUND = Response(b"<html><body>404 Not Found</body></html>", 404, {"content-type": "text/html"})


@pytest.mark.parametrize(
    ("post", "seen"),
    [
        pytest.param(Response(b"Unsupported method", 501), "HTTP 501", id="501"),
        pytest.param(Response(b"Method Not Allowed", 405), "HTTP 405", id="405"),
        pytest.param(NOT_FOUND, "HTTP 404", id="404"),
    ],
)
def test_an_address_that_does_not_serve_the_api_gets_one_check(post: Response, seen: str) -> None:
    with ScriptedServer([_answering(NOT_FOUND, post)] * 20) as server:
        with Client(server.base_url, KEY) as client:
            report = endpoint_report(client, "m")
        requests = len(server.requests)
    assert requests == 2  # the model list and the first probe: nothing else is asked
    [check] = report.checks
    assert (check.name, check.verdict) == ("not_openai_compatible", "yes")
    assert check.evidence == f"GET models: HTTP 404; POST chat/completions: {seen}"
    assert "does not serve an OpenAI-compatible API" in check.advice
    assert report.server == "unknown"
    assert describe_report(report).splitlines()[1].split() == ["not_openai_compatible", "yes"]


@pytest.mark.parametrize(
    ("get", "post"),
    [
        pytest.param(
            Response({"data": [{"id": "m", "owned_by": "vllm"}]}), Response(b"no", 501), id="listed"
        ),
        pytest.param(
            Response({"error": {"message": "no key"}}, 401),
            Response({"error": {"message": "no key"}}, 401),
            id="auth",
        ),
        pytest.param(NOT_FOUND, Response({"error": {"message": "busy"}}, 503), id="busy"),
    ],
)
def test_failed_requests_never_read_as_findings(get: Response, post: Response) -> None:
    with ScriptedServer([_answering(get, post)] * 42) as server:
        with Client(server.base_url, KEY, max_retries=0) as client:
            report = endpoint_report(client, "m")
        requests = len(server.requests)
    assert [c.name for c in report.checks] == list(CHECKS)
    # The model list, at most 18 model requests (DESIGN, Round 4), tool_schemas' control
    # (plain refused: the other five are not sent) and agent_clients' first request of each
    # client (the run ends at the failure).
    assert requests <= 21 + len(CLIENTS)
    status = post.status
    verdicts = {c.name: c.verdict for c in report.checks}
    assert verdicts == {
        "tool_choice_unset": f"error {status}",
        "tool_choice_auto": f"error {status}",
        "tool_choice_required": f"error {status}",
        "reasoning_location": f"error {status}",
        "leak_dialects": f"error {status}",
        "text_tool_calls": f"error {status}",
        "native_call_hygiene": f"error {status}",
        "stream_parity": f"error {status}",
        "stream_grammar": "n/a",
        "usage_reported": "n/a",
        "reasoning_tokens_reported": "n/a",
        "structured_output": f"error {status}",
        "reasoning_replay": f"error {status}",
        "thinking_switch": f"error {status}",
        "concurrency": f"error {status}",
        "tool_schemas": f"error {status}",
        "honored_params": f"error {status}",
        "api_parity": f"error {status}",
        "agent_clients": (
            "claude-code n/a; codex n/a; opencode n/a"
            if status == 501
            else f"claude-code error {status}; codex error {status}; opencode error {status}"
        ),
        # No window known and no reply to continue: nothing is sent for these.
        "context_window": "n/a",
        "prefix_cache": "n/a",
    }
    assert [c.advice for c in report.checks] == [""] * len(CHECKS)


def test_advice_relies_on_tool_choice_auto_only_when_it_calls_tools() -> None:
    from rig_nb.capabilities.advice import advice

    assert "keep tool_choice" in advice("", "tool_choice_unset", "text", auto="tool call")
    assert 'send "auto"' in advice("", "tool_choice_required", "error 400", auto="tool call")
    for auto in ("text", "error 500", "length"):
        assert advice("", "tool_choice_unset", "text", auto=auto) == ""
        assert advice("", "tool_choice_required", "error 400", auto=auto) == ""
    for check in ("leak_dialects", "text_tool_calls", "stream_parity", "usage_reported"):
        assert advice("vllm", check, "error 501", auto="error 501") == ""
        assert advice("vllm", check, "n/a", auto="error 501") == ""


def test_an_unreachable_endpoint_is_a_report_not_an_exception(closed_port_url: str) -> None:
    with Client(closed_port_url, max_retries=0) as client:
        report = endpoint_report(client, "m")
    assert report.server == "unknown"
    assert report.check("tool_choice_auto").verdict == "error"
    assert "refused" in report.check("tool_choice_auto").evidence


# What each demo persona reproduces, as the doctor should see it (stream_parity is "same" and
# usage "yes" everywhere: the demo streams the very reply it would send whole).
PERSONAS = {
    "well-behaved": ("vllm", "tool call", "tool call", "none", "no", "no"),
    "qwen3-no-parser": ("vllm", "tool call", "tool call", "content:unopened", "no", "no"),
    "r1-json-sketch": ("vllm", "tool call", "tool call", "content:closed", "no", "no"),
    "budget-think": ("vllm", "length", "length", "content:unclosed", "no", "no"),
    "reasoning-field": ("vllm", "tool call", "tool call", "field:reasoning_content", "no", "no"),
    "ollama-reasoning": ("ollama", "tool call", "tool call", "field:reasoning", "no", "no"),
    "hermes-text-tools": (
        "vllm",
        "text",
        "text",
        "content:closed",
        "tool-call-tag",
        "tool-call-tag",
    ),
    "tool-spinner": ("llama.cpp", "text", "tool call", "none", "no", "no"),
    "html-injector": ("unknown", "tool call", "tool call", "content:closed", "no", "no"),
    "gpt-oss-raw-harmony": ("sglang", "text", "text", "none", "harmony", "harmony"),
    "gpt-oss-stripped-tokens": ("llama.cpp", "tool call", "tool call", "none", "harmony", "no"),
    "qwen3-coder-text-calls": (
        "ollama",
        "text",
        "text",
        "none",
        "tool-call-tag,function-tag",
        "tool-call-tag,function-tag",
    ),
    "mistral-text-calls": (
        "lm-studio",
        "text",
        "text",
        "none",
        "mistral-tool-calls",
        "mistral-tool-calls",
    ),
    "draft-then-call": ("vllm", "tool call", "tool call", "content:closed", "tool-call-tag", "no"),
    "answer-in-reasoning": (
        "lm-studio",
        "tool call",
        "tool call",
        "field:reasoning_content",
        "no",
        "no",
    ),
    "gateway-reasoning-details": (
        "unknown",
        "tool call",
        "tool call",
        "field:reasoning_details",
        "no",
        "no",
    ),
    "smollm2-recorded": ("llama.cpp", "text", "tool call", "none", "no", "no"),
}
# The server-side fix each persona's reported problem has, as the report must name it.
FIXES = {
    "qwen3-no-parser": ("reasoning_location", "--reasoning-parser"),
    "r1-json-sketch": ("reasoning_location", "--reasoning-parser"),
    "hermes-text-tools": ("tool_choice_auto", "pick the --tool-call-parser made for the model"),
    "tool-spinner": ("tool_choice_unset", 'keep tool_choice "auto"'),
    "gpt-oss-raw-harmony": ("leak_dialects", "harmony"),
    "gpt-oss-stripped-tokens": ("leak_dialects", "--jinja"),
    "qwen3-coder-text-calls": ("text_tool_calls", "ollama show --template"),
    "mistral-text-calls": ("tool_choice_auto", "tool use"),
    "budget-think": ("tool_choice_auto", "budget ran out"),
}


@pytest.mark.parametrize("model", list(PERSONAS))
def test_every_demo_persona_gets_the_report_it_reproduces(demo_client: Client, model: str) -> None:
    report = endpoint_report(demo_client, model)
    server, unset, auto, location, leaks, text_calls = PERSONAS[model]
    got = {c.name: c.verdict for c in report.checks}
    assert (report.server, got["tool_choice_unset"], got["tool_choice_auto"]) == (
        server,
        unset,
        auto,
    )
    assert (got["reasoning_location"], got["leak_dialects"], got["text_tool_calls"]) == (
        location,
        leaks,
        text_calls,
    )
    assert (got["stream_parity"], got["usage_reported"]) == ("same", "yes")
    if model in FIXES:
        name, fix = FIXES[model]
        assert fix in report.check(name).advice
    # Keeping tool_choice "auto" is advice only where "auto" gets a tool call.
    assert ("keep tool_choice" in report.check("tool_choice_unset").advice) == (
        unset == "text" and auto == "tool call"
    )
    if location == "none" and leaks == "no":
        assert report.check("reasoning_location").advice == ""


def test_the_probe_records_the_calls_it_got_without_running_them(demo_client: Client) -> None:
    trace = demo_client.probe_trace("well-behaved")
    [call] = trace.iterations[0].tool_calls
    assert (call.name, call.result, call.is_error) == ("ping", "", False)
    assert call.received_id and call.arguments.startswith("{")
    report = endpoint_report(demo_client, "well-behaved")
    assert "; 1 tool call;" in report.check("tool_choice_auto").evidence
