"""The endpoint doctor (`endpoint_report`) on real llama.cpp servers: verdicts match what they do.

The doctor sends no grammar, so SmolLM2 writes what it likes: greedy decoding on llama-server
(llama_server_procs.DETERMINISTIC) makes it repeatable on one machine, but which words a
135M-parameter model picks can change with the CPU's arithmetic, so where the verdict is the
model's choice the assertion is its category (never a tool call, a reasoning location of the
right kind). What the server decides (its kind, where it puts reasoning, its errors, its
usage fields, its streaming) is asserted exactly. Run with `pytest -s` to see the reports.

The LiteLLM proxy's reports are in test_litellm_proxy.py (among them the one on the
`think-none-budget` flavour, whose direct report would only repeat `none`'s with a closed block).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from client_view import client_for
from llama_server_procs import Proc
from llama_servers import LlamaServer
from shared import doctor_model_requests, report_checks

from rig_nb.capabilities import EndpointReport, describe_report, endpoint_report
from rig_nb.demo.recording import RecordingProxy

pytestmark = pytest.mark.real

# The tool_choice matrix words a server answers with when its model never writes a call.
NO_CALL = {"text", "length"}
# The leak dialects SmolLM2 could echo from a tool template's instructions, and nothing else.
NO_LEAK = {"no", "tool-call-tag"}

Reports = Callable[[str], EndpointReport]
# The checks of the second release, each made of its own requests to the model.
ASKING = (
    "tool_choice_unset",
    "tool_choice_auto",
    "tool_choice_required",
    "reasoning_location",
    "leak_dialects",
    "text_tool_calls",
    "stream_parity",
)
# What the doctor may send besides chat completions: the other wires, llama.cpp's own
# template and tokenizer routes for reasoning_replay and prefix_cache, and its /props.
OTHER_ROUTES = ("responses", "messages", "api/chat", "apply-template", "tokenize", "props")
# The model requests, on any wire.
MODEL_ROUTES = ("chat/completions", "responses", "messages", "api/chat")
# DESIGN's bound on model requests, with this round's checks (shared.doctor_model_requests).
MAX_MODEL_REQUESTS = doctor_model_requests()


@pytest.fixture(scope="module")
def report_of(request: pytest.FixtureRequest) -> Iterator[Reports]:
    """The doctor's report on a server fixture, computed once per module and printed."""
    done: dict[str, EndpointReport] = {}

    def get(server: str) -> EndpointReport:
        if server not in done:
            proc: Proc | LlamaServer = request.getfixturevalue(server)
            with client_for(proc.base_url) as client:
                done[server] = endpoint_report(client, proc.model, checks=report_checks())
            print(f"\n[{server}]\n{describe_report(done[server])}")
        return done[server]

    yield get


def check_common(report: EndpointReport) -> None:
    """What every llama.cpp server here reports, whatever its flags."""
    assert report.server == "llama.cpp"
    assert [c.name for c in report.checks] == report_checks()
    assert report.check("usage_reported").verdict == "yes"
    # Neither server reports completion_tokens_details (FINDINGS.md, "Usage").
    tokens = report.check("reasoning_tokens_reported")
    assert tokens.verdict == "no"
    if tokens.evidence == "reasoning seen in the replies":
        assert "llama-server does not report reasoning_tokens" in tokens.advice
    else:
        assert tokens.evidence == "no reasoning seen" and tokens.advice == ""
    # Every check that asks the model keeps what it got; the rest judge those replies (usage,
    # native calls: none here when no probe got a call) or apply only to some servers.
    for c in report.checks:
        if c.name in ASKING:
            assert c.trace is not None, c.name


LLAMA_SERVER = [
    # The template opens <think> and SmolLM2 never closes it: all it writes is reasoning, which
    # --reasoning-format deepseek moves to the field.
    pytest.param("think_deepseek_server", {"field:reasoning_content"}, id="deepseek"),
    # The same text left in content, opened by the server's `<think>\n`; unclosed (SmolLM2
    # stops inside it) unless the model happens to close it.
    pytest.param("think_none_server", {"content:unclosed", "content:closed"}, id="none"),
    # No parsing and no opening tag in the reply: unless SmolLM2 writes `</think>` (the bare
    # leak, `content:unopened`), nothing in the content marks it as reasoning, for the doctor
    # or for any client.
    pytest.param("think_skip_server", {"none", "content:unopened"}, id="skip"),
    # A template without reasoning.
    pytest.param("hermes_tools_server", {"none"}, id="hermes"),
]


@pytest.mark.parametrize(("server", "locations"), LLAMA_SERVER)
def test_the_doctor_on_llama_server(report_of: Reports, server: str, locations: set[str]) -> None:
    report = report_of(server)
    check_common(report)
    matrix = {k: report.check(f"tool_choice_{k}").verdict for k in ("unset", "auto", "required")}
    # SmolLM2 writes no call by itself on any template (only a prefill makes it call), and
    # llama-server accepts every tool_choice (no 500, unlike llama-cpp-python).
    assert set(matrix.values()) <= NO_CALL, matrix
    auto = report.check("tool_choice_auto")
    if auto.verdict == "text":
        assert "--jinja" in auto.advice
    location = report.check("reasoning_location")
    assert location.verdict in locations
    if location.verdict.startswith("content:"):
        assert "--reasoning-format deepseek" in location.advice
        assert "--skip-chat-parsing" in location.advice
    else:
        assert location.advice == ""
    # llama-server's streamed and non-streamed replies agree (FINDINGS.md).
    assert report.check("stream_parity").verdict == "same"
    assert report.check("leak_dialects").verdict in NO_LEAK
    assert report.check("text_tool_calls").verdict in NO_LEAK


def test_the_doctor_stays_within_its_request_bound(think_skip_server: Proc, tmp_path: Path) -> None:
    out = tmp_path / "doctor.jsonl"
    with RecordingProxy(think_skip_server.base_url, out) as proxy:
        with client_for(proxy.base_url) as client:
            report = endpoint_report(client, think_skip_server.model)
    # Read once the proxy has stopped: a streamed exchange is written when its stream ends.
    lines = out.read_text().splitlines()
    paths = [json.loads(line)["request"]["path"].split("?")[0] for line in lines]
    # The model list once, then the chat requests: the matrix, the question, and (stream=True)
    # the question and the "auto" probe streamed; then round 3's checks.
    assert paths[0] == "models"
    assert all(p in ("models", "chat/completions") or p.endswith(OTHER_ROUTES) for p in paths)
    model_requests = [p for p in paths if p.endswith(MODEL_ROUTES)]
    assert 6 <= len(model_requests) <= MAX_MODEL_REQUESTS, paths
    # Through a proxy that keeps no response header, the body still names llama.cpp (timings).
    assert report.server == "llama.cpp"


def test_the_doctor_on_llama_cpp_python_function_calling(report_of: Reports) -> None:
    report = report_of("fc_server")
    check_common(report)
    assert report.check("tool_choice_unset").verdict in NO_CALL
    assert report.check("tool_choice_auto").verdict == "tool call"
    assert report.check("tool_choice_auto").advice == ""
    required = report.check("tool_choice_required")
    assert required.verdict == "error 500"
    assert 'tool_choice "required"' in required.advice
    assert report.check("reasoning_location").verdict == "none"
    # llama-cpp-python answers a streamed request with tool_choice "auto" with a 200 and then
    # nothing: its chatml-function-calling handler raises "Automatic streaming tool choice is
    # not supported" inside the event stream. The doctor tells the two paths apart.
    parity = report.check("stream_parity")
    assert parity.verdict.startswith("differs: ")
    assert "auto probe: fails only when streamed" in parity.verdict
    assert parity.advice != ""


def test_the_doctor_on_llama_cpp_python_plain_chatml(report_of: Reports) -> None:
    report = report_of("chatml_server")
    check_common(report)
    matrix = {k: report.check(f"tool_choice_{k}").verdict for k in ("unset", "auto", "required")}
    # Plain chatml drops the tools: text, or rambling to the probe's budget.
    assert set(matrix.values()) <= NO_CALL, matrix
    auto = report.check("tool_choice_auto")
    if auto.verdict == "text":
        assert "--jinja" in auto.advice
    assert report.check("reasoning_location").verdict == "none"
    # Both paths work (nothing fails only one way); the sampled words may differ.
    assert "fails only when" not in report.check("stream_parity").verdict


def test_the_evidence_of_a_tool_call_verdict_counts_the_call(report_of: Reports) -> None:
    auto = report_of("fc_server").check("tool_choice_auto")
    assert auto.verdict == "tool call"
    assert "0 tool calls" not in auto.evidence, auto.evidence
