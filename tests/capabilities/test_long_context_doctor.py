"""The long conversation in the doctor, the demo personas and every place an outcome shows:
context_window and prefix_cache, server_version and context_window from metadata routes that
may 404, lie or hang, and context_truncated in compare, the CLI, TraceView, HTML and OTel."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import pytest
from cli_helpers import cli
from shared import doctor_model_requests

from rig_nb import BackendError, Client, RunRequest
from rig_nb.capabilities import CHECKS, describe_report, endpoint_report
from rig_nb.capabilities.long_context import MAX_WINDOW_CHECKED, OLLAMA_DEFAULT_WINDOW
from rig_nb.compare import Endpoint, Scenario, compare
from rig_nb.demo import DEMO_SYSTEM, DemoServer
from rig_nb.demo.context_personas import (
    DEMO_LLAMA_BUILD,
    DEMO_OLLAMA_VERSION,
    LLAMA_DEMO_CTX,
    LONG_PROMPT,
    long_tools,
)
from rig_nb.report import save_html, to_otel
from rig_nb.testing import LoopbackServer, RecordedRequest, Response, chat_reply, streamed
from rig_nb.testing import tool_call as scripted_call

LONG = RunRequest(
    "ollama-truncates-silently", 512, system=DEMO_SYSTEM, prompt=LONG_PROMPT, tools=long_tools()
)
# DESIGN's bound on model requests, with this round's checks (shared.doctor_model_requests).
MODEL_REQUESTS = doctor_model_requests()


def _model_requests(requests: list[RecordedRequest]) -> int:
    return sum(
        1 for r in requests if urlsplit(r.path).path.startswith("/v1/") and r.method == "POST"
    )


# --- the personas ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_ollama_drops_the_oldest_messages_silently_and_the_run_says_so(
    demo_client: Client, stream: bool
) -> None:
    trace = demo_client.run_trace(RunRequest(**{**LONG.__dict__, "stream": stream}))
    cut = [it.context_cut for it in trace.iterations]
    assert cut == [False] * 4 + [True]
    assert trace.outcome == "context_truncated"
    tokens = [it.usage["prompt_tokens"] for it in trace.iterations]
    assert tokens[-1] < tokens[-2] and max(tokens) <= OLLAMA_DEFAULT_WINDOW
    assert "question" in trace.iterations[-1].text  # the question itself was dropped


def test_llama_server_refuses_past_its_window_with_kind_context(demo_client: Client) -> None:
    request = RunRequest(**{**LONG.__dict__, "model": "llama-context-error"})
    trace = demo_client.run_trace(request)
    exc = trace.exception
    assert isinstance(exc, BackendError) and exc.kind == "context"
    assert exc.context_window == LLAMA_DEMO_CTX and exc.prompt_tokens > LLAMA_DEMO_CTX
    assert trace.outcome == "BackendError"
    first, second = trace.iterations[:2]
    assert second.server_timings["cached_tokens"] > 0 and first.server_timings["decode_tokens"] > 0
    assert trace.prefix_reuse[1] == 1.0


def test_a_cache_breaking_template_reuses_less_each_turn(demo_client: Client) -> None:
    trace = demo_client.run_trace(
        RunRequest(**{**LONG.__dict__, "model": "cache-breaking-template"})
    )
    reuse = trace.prefix_reuse
    assert trace.outcome == "ok" and reuse[0] is None and reuse[1] == 1.0
    later = [r for r in reuse[2:] if r is not None]
    assert later and all(b < a for a, b in zip([1.0, *later], later, strict=False))


@pytest.mark.parametrize(
    ("model", "server", "version", "window", "verdict"),
    [
        pytest.param(
            "ollama-truncates-silently",
            "ollama",
            DEMO_OLLAMA_VERSION,
            OLLAMA_DEFAULT_WINDOW,
            f"truncates silently ({OLLAMA_DEFAULT_WINDOW} of 4608 tokens kept)",
            id="ollama",
        ),
        pytest.param(
            "llama-context-error",
            "llama.cpp",
            DEMO_LLAMA_BUILD,
            LLAMA_DEMO_CTX,
            f"error at {LLAMA_DEMO_CTX} tokens",
            id="llama.cpp",
        ),
        pytest.param("cache-breaking-template", "vllm", "", None, "n/a", id="vllm-no-window"),
    ],
)
def test_the_doctor_reads_the_window_and_tests_it(
    model: str, server: str, version: str, window: int | None, verdict: str
) -> None:
    # A demo of its own: the session's keeps only its latest requests.
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        with Client(demo.base_url) as client:
            report = endpoint_report(client, model)
        sent = list(demo.requests)
    assert (report.server, report.server_version, report.context_window) == (
        server,
        version,
        window,
    )
    check = report.check("context_window")
    assert check.verdict == verdict
    assert _model_requests(sent) <= MODEL_REQUESTS
    long = [r for r in sent if len(r.body) > 6_000]  # the request past the window, alone
    assert len(long) == (0 if window is None else 1)
    head = describe_report(report).splitlines()[0]
    assert head.startswith(f"{model}: server {server}")
    assert (version in head) and (f"context window {window} tokens" in head if window else True)
    if server == "ollama":
        assert "num_ctx" in check.advice and "OLLAMA_CONTEXT_LENGTH" in check.advice
    if server == "llama.cpp":
        assert "-np" in check.advice and "-c" in check.advice
        assert report.check("prefix_cache").verdict.startswith("reused ")
    assert report.to_dict()["context_window"] == window


# --- a llama.cpp-like server whose metadata and template the test controls ------------------

Props = Callable[[], Mapping[str, Any] | Response]


class LlamaLike(LoopbackServer):
    """llama-server's routes: a model list owned by llamacpp, chat completions with
    timings, `/props` as the test says, and `/apply-template` with a template that drops
    (or keeps) the reasoning of earlier assistant turns."""

    def __init__(
        self,
        props: Props,
        *,
        keep_reasoning: bool = False,
        cache_n: int = 10,
        long_usage: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.props, self.keep, self.cache_n = props, keep_reasoning, cache_n
        self.long_usage = long_usage  # the usage of a request past the window, when given
        self.release = threading.Event()

    def render(self, body: Mapping[str, Any]) -> str:
        out = []
        for m in body.get("messages") or []:
            text = f"<|{m.get('role')}|>"
            if m.get("role") == "assistant":
                if self.keep and m.get("reasoning_content"):
                    text += f"<think>\n{m['reasoning_content']}\n</think>"
                text += json.dumps(m.get("tool_calls") or [])
            out.append(text + str(m.get("content") or ""))
        return "".join(out) + "<|assistant|><think>\n"

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        path = urlsplit(request.path).path
        if path == "/v1/models":
            return {"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]}
        if path == "/props":
            return self.props()
        if path == "/apply-template":
            return {"prompt": self.render(request.json)}
        if path != "/v1/chat/completions":
            return Response({"error": {"message": "no route"}}, 404)
        body = request.json
        roles = [m.get("role") for m in body["messages"]]
        tokens = 40 * len(roles)
        usage = {"prompt_tokens": tokens, "completion_tokens": 5}
        if self.long_usage is not None and len(request.body) > 1000:
            usage = self.long_usage
        if body.get("tools") and body.get("tool_choice") == "auto" and roles[-1] == "user":
            reply = chat_reply(
                tool_calls=[scripted_call("ping", {"message": "hello"}, id="call_1")],
                reasoning_content="I should ping.",
                usage=usage,
            )
        else:
            reply = chat_reply("pong", usage=usage)
        cached = self.cache_n if "assistant" in roles else 0
        if self.keep and roles.count("assistant") > 1:
            cached = tokens - 80  # a template that keeps the prefix: all but the two newest
        reply["timings"] = {"cache_n": cached, "prompt_n": tokens - cached, "predicted_n": 5}
        return streamed(reply) if body.get("stream") else reply


def _hang() -> Response:
    raise AssertionError("replaced per test")


def _report(server: LlamaLike, **client: Any) -> Any:
    with server, Client(server.base_url, max_retries=0, **client) as c:
        return endpoint_report(c, "m", stream=False), list(server.requests)


@pytest.mark.parametrize(
    "props",
    [
        pytest.param(lambda: Response({"error": {"message": "not found"}}, 404), id="404"),
        pytest.param(
            lambda: Response(b"<html><script>alert(1)</script>props</html>", 200), id="html"
        ),
        pytest.param(lambda: {"default_generation_settings": {"n_ctx": 0}}, id="zero"),
        pytest.param(lambda: {"default_generation_settings": {"n_ctx": -4096}}, id="negative"),
        pytest.param(lambda: {"default_generation_settings": {"n_ctx": 10**12}}, id="huge"),
        pytest.param(lambda: {"default_generation_settings": {"n_ctx": "4096"}}, id="string"),
        pytest.param(lambda: {"n_ctx": True, "build_info": ["b1"]}, id="wrong-types"),
        pytest.param(lambda: [1, 2, 3], id="a-list"),
        pytest.param(lambda: Response(b"[" * 100_000, 200), id="deep"),
    ],
)
def test_metadata_routes_that_fail_or_lie_leave_the_window_unknown(props: Props) -> None:
    report, requests = _report(LlamaLike(props))
    assert report.server == "llama.cpp" and report.context_window is None
    assert report.server_version == ""
    assert report.check("context_window").verdict == "n/a"
    assert [c.name for c in report.checks] == list(CHECKS)
    assert _model_requests(requests) <= MODEL_REQUESTS
    assert sum(r.path.startswith("/props") for r in requests) == 1


def test_a_metadata_route_that_hangs_is_cut_by_the_clients_timeout() -> None:
    server = LlamaLike(_hang)

    def hang() -> Response:
        def body() -> Iterator[bytes]:
            server.release.wait(30)  # released when the test ends
            yield b"{}"

        return Response(body())

    server.props = hang
    try:
        report, requests = _report(server, timeout=0.5, deadline=5.0)
    finally:
        server.release.set()
    assert report.context_window is None and report.check("context_window").verdict == "n/a"
    assert "/props (failed)" in report.check("context_window").evidence
    assert sum(r.path.startswith("/props") for r in requests) == 1  # asked once, not retried
    assert [c.name for c in report.checks] == list(CHECKS)


def test_a_window_past_the_doctors_bound_fits_without_a_request() -> None:
    props = {"build_info": "b7000-abc", "default_generation_settings": {"n_ctx": 10**6}}
    report, requests = _report(LlamaLike(lambda: props))
    assert report.context_window == 10**6 and report.server_version == "b7000-abc"
    assert report.check("context_window").verdict == "fits"
    assert str(MAX_WINDOW_CHECKED) in report.check("context_window").evidence
    longest = max(len(r.body) for r in requests)
    assert longest < 20_000  # no request filled a window


@pytest.mark.parametrize(
    ("usage", "verdict"),
    [
        pytest.param(
            {"prompt_tokens": 300}, "truncates silently (300 of 364 tokens kept)", id="cut"
        ),
        pytest.param({"prompt_tokens": 370}, "fits", id="took-it-all"),
        pytest.param({}, "n/a", id="no-usage"),
        pytest.param({"prompt_tokens": 0, "completion_tokens": 0}, "n/a", id="zeros"),
        pytest.param({"prompt_tokens": "300"}, "n/a", id="string"),
    ],
)
def test_an_answer_past_the_window_is_judged_by_its_prompt_tokens(
    usage: dict[str, Any], verdict: str
) -> None:
    props = {"default_generation_settings": {"n_ctx": 300}}
    report, requests = _report(LlamaLike(lambda: props, long_usage=usage))
    check = report.check("context_window")
    assert check.verdict == verdict
    assert ("-np" in check.advice) == verdict.startswith("truncates")
    assert sum(len(r.body) > 1000 for r in requests if r.path == "/v1/chat/completions") == 1


def test_where_the_prefix_breaks_is_named_from_apply_template() -> None:
    props = {"build_info": "b7000-abc", "default_generation_settings": {"n_ctx": 10**6}}
    report, requests = _report(LlamaLike(lambda: props, cache_n=10))
    check = report.check("prefix_cache")
    assert check.verdict == "reused 10 of 40"
    assert "stops extending turn 1's at character" in check.evidence
    assert "'<think>\\n' became" in check.evidence
    assert "earlier reasoning dropped there" in check.evidence
    assert "template" in check.advice
    chats = [r.json for r in requests if r.path == "/v1/chat/completions"]
    (turn_two,) = [b for b in chats if b["messages"][-1].get("content") == "pong"]
    assert [m["role"] for m in turn_two["messages"]] == ["user", "assistant", "tool"]
    assert turn_two["messages"][1]["reasoning_content"] == "I should ping."  # as the loop echoes


def test_a_template_that_keeps_the_prefix_is_not_blamed() -> None:
    props = {"default_generation_settings": {"n_ctx": 10**6}}
    report, _ = _report(LlamaLike(lambda: props, keep_reasoning=True, cache_n=40))
    check = report.check("prefix_cache")
    assert check.verdict == "reused 40 of 40" and check.advice == ""
    assert "apply-template" not in check.evidence


def test_no_cache_reported_and_none_reused_are_told_apart() -> None:
    props = {"default_generation_settings": {"n_ctx": 10**6}}
    report, _ = _report(LlamaLike(lambda: props, cache_n=0))
    assert report.check("prefix_cache").verdict == "not reused"
    assert "keep" in report.check("prefix_cache").advice


# --- context_truncated wherever an outcome shows ------------------------------------------------


def test_compare_shows_context_truncated(demo: DemoServer) -> None:
    endpoint = Endpoint("ollama", demo.base_url, "ollama-truncates-silently")
    scenario = Scenario(
        "long", system=DEMO_SYSTEM, prompt=LONG_PROMPT, tools=long_tools(), max_tokens=512
    )
    df = compare([endpoint], scenarios=[scenario], progress=False)
    assert list(df["outcome"]) == ["context_truncated"]
    assert "dropped part of the conversation" in df["error"][0]


def test_trace_view_html_and_otel_show_the_cut_and_the_reuse(
    demo_client: Client, tmp_path: Any
) -> None:
    pytest.importorskip("ipywidgets")
    from rig_nb.widgets import TraceView

    trace = demo_client.run_trace(LONG)
    view = TraceView(trace)
    assert "context_truncated" in view.summary.value
    assert "cut: answer" in view.rows[-1].line
    reused = demo_client.run_trace(
        RunRequest(**{**LONG.__dict__, "model": "cache-breaking-template"})
    )
    lines = TraceView(reused).rows
    assert "100%" in lines[1].line and "%" not in lines[0].cells[6]
    path = tmp_path / "run.html"
    save_html(trace, path)
    page = path.read_text()
    assert "context_truncated" in page and "cut: answer" in page
    spans = to_otel(trace)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    run = spans[0]
    assert run["status"] == {"code": 2, "message": "context_truncated"}
    cut = [
        s
        for s in spans
        if {"key": "rig_nb.context_cut", "value": {"boolValue": True}} in s["attributes"]
    ]
    assert len(cut) == 1


def test_cli_run_exits_1_on_a_truncated_conversation(
    capsys: pytest.CaptureFixture[str], server: Any
) -> None:
    call = chat_reply(tool_calls=[scripted_call("get_weather", {"city": "Lisbon"})])
    server.push(
        {**call, "usage": {"prompt_tokens": 900, "completion_tokens": 5}},
        chat_reply("Lisbon is sunny.", usage={"prompt_tokens": 300, "completion_tokens": 5}),
    )
    ran = cli(capsys, "run", "--base-url", server.base_url, "--model", "m", "--prompt", "go")
    assert ran.returncode == 1
    assert "outcome context_truncated" in ran.stderr + ran.stdout
    assert "tokens in/out=300/5  CONTEXT CUT" in ran.stdout  # the iteration that was cut


def test_cli_run_says_the_prompt_does_not_fit(
    capsys: pytest.CaptureFixture[str], server: Any
) -> None:
    error = {
        "code": 400,
        "message": "request (5123 tokens) exceeds the available context size (4096 tokens)",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5123,
        "n_ctx": 4096,
    }
    server.push(Response({"error": error}, 400))
    ran = cli(capsys, "run", "--base-url", server.base_url, "--model", "m", "--prompt", "go")
    assert ran.returncode == 1
    assert "does not fit the server's context window of 4096 tokens (5123 tokens sent)" in (
        ran.stderr
    )
    assert "doctor names the flag" in ran.stderr


class KindLike(LoopbackServer):
    """A server of one kind: its model list entry, its metadata routes, plain answers."""

    def __init__(self, entry: dict[str, Any], routes: dict[str, Any], headers: dict[str, str]):
        super().__init__()
        self.entry, self.routes, self.headers = entry, routes, headers

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        path = urlsplit(request.path).path
        if path == "/v1/models":
            return {"object": "list", "data": [{"id": "m", **self.entry}]}
        if path in self.routes:
            return self.routes[path]
        if path != "/v1/chat/completions":
            return Response({"error": {"message": "no route"}}, 404)
        reply = chat_reply("ok", usage={"prompt_tokens": 12, "completion_tokens": 1})
        if request.json.get("stream"):
            return streamed(reply)
        return Response(reply, headers=self.headers)


@pytest.mark.parametrize(
    ("entry", "routes", "headers", "server", "version", "window"),
    [
        pytest.param(
            {"owned_by": "vllm", "max_model_len": 32768},
            {"/version": {"version": "0.11.2"}},
            {},
            "vllm",
            "0.11.2",
            32768,
            id="vllm",
        ),
        pytest.param(
            {"owned_by": "openai", "created": 1677610602},
            {
                "/model/info": {
                    "data": [{"model_name": "m", "model_info": {"max_input_tokens": 8192}}]
                }
            },
            {"x-litellm-version": "1.108.7"},
            "litellm",
            "1.108.7",
            8192,
            id="litellm",
        ),
        pytest.param(
            {"owned_by": "sglang"},
            {"/get_server_info": {"version": "0.5.1", "context_length": 65536}},
            {},
            "sglang",
            "0.5.1",
            65536,
            id="sglang",
        ),
        pytest.param(
            {"owned_by": "organization_owner"},
            {"/api/v0/models/m": {"loaded_context_length": 16384, "max_context_length": 131072}},
            {},
            "lm-studio",
            "",
            16384,
            id="lm-studio",
        ),
        pytest.param(
            {"owned_by": "library"},
            {"/api/version": {"version": "0.12.3"}, "/api/show": {"parameters": "num_ctx 8192"}},
            {},
            "ollama",
            "0.12.3",
            8192,
            id="ollama-num_ctx",
        ),
        # Issue 45: a Unicode digit in `parameters` crashed the doctor (int("\u00b2")) or was
        # read as a number; only ASCII digits are, else Ollama's default holds.
        pytest.param(
            {"owned_by": "library"},
            {"/api/version": {"version": "0.12.3"}, "/api/show": {"parameters": "num_ctx \u00b2"}},
            {},
            "ollama",
            "0.12.3",
            4096,
            id="ollama-superscript-digit",
        ),
        pytest.param(
            {"owned_by": "library"},
            {
                "/api/version": {"version": "0.12.3"},
                "/api/show": {"parameters": "num_ctx \u0668\u0661\u0669\u0662"},
            },
            {},
            "ollama",
            "0.12.3",
            4096,
            id="ollama-arabic-indic-digits",
        ),
        # Issue 45: Ollama lists a model named without its tag as `m:latest`.
        pytest.param(
            {"id": "m:latest", "owned_by": "library"},
            {"/api/version": {"version": "0.12.3"}, "/api/show": {"parameters": "num_ctx 8192"}},
            {},
            "ollama",
            "0.12.3",
            8192,
            id="ollama-listed-with-its-tag",
        ),
    ],
)
def test_each_server_kind_names_its_version_and_window_from_its_own_routes(
    entry: dict[str, Any],
    routes: dict[str, Any],
    headers: dict[str, str],
    server: str,
    version: str,
    window: int,
) -> None:
    with KindLike(entry, routes, headers) as fake, Client(fake.base_url, max_retries=0) as c:
        report = endpoint_report(c, "m", stream=False)
        asked = [
            urlsplit(r.path).path for r in fake.requests if r.method == "GET" or "/api/" in r.path
        ]
    assert (report.server, report.server_version, report.context_window) == (
        server,
        version,
        window,
    )
    assert len([p for p in asked if p in routes]) <= 2  # the metadata routes, at most two
    first = describe_report(report).splitlines()[0]
    assert (
        first
        == f"m: server {server}{' ' + version if version else ''}, context window {window} tokens"
    )


def test_probe_panel_names_the_servers_version_and_window(demo: DemoServer) -> None:
    pytest.importorskip("ipywidgets")
    from rig_nb.widgets import ProbePanel

    panel = ProbePanel(demo.base_url, "llama-context-error")
    assert panel.start_report() and panel.wait(60)
    assert f"server: <b>llama.cpp {DEMO_LLAMA_BUILD}</b>, context window 2048 tokens" in (
        panel.report.value
    )
    assert "error at 2048 tokens" in panel.report.value
