"""Outcome `leaked`: a final answer that still holds a leak dialect's markup after
strip_reasoning and split_reasoning is not ok (DESIGN, Round 5); harmony's token-stripped
form splits as the tokened form does."""

from __future__ import annotations

from typing import Any

import pytest
from cli_helpers import cli
from runs import LoopRunner

from rig_nb import Client, RunRequest, split_reasoning, strip_reasoning
from rig_nb.compare import Endpoint, Scenario, compare_rows, summarize
from rig_nb.demo import DEMO_PROMPT, DEMO_SYSTEM, DemoServer, demo_tools
from rig_nb.record import LEAKED
from rig_nb.report.html import trace_page
from rig_nb.testing import ScriptedServer, chat_reply
from rig_nb.widgets.compare_view import EXPLANATIONS

TOKENED = (
    "<|channel|>analysis<|message|>User asks the capital.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Paris.<|return|>"
)
# gpt-oss's reply with its special tokens stripped (oobabooga/text-generation-webui#7374).
STRIPPED = "analysisOkay, the user asks the capital.assistantfinalParis."


@pytest.mark.parametrize(
    ("content", "outcome", "text"),
    [
        pytest.param(
            "[THINK]plan[/THINK]Paris.", LEAKED, "[THINK]plan[/THINK]Paris.", id="brackets"
        ),
        pytest.param(
            "<seed:think>plan</seed:think>Paris.",
            LEAKED,
            "<seed:think>plan</seed:think>Paris.",
            id="seed-think",
        ),
        pytest.param(
            "<|channel|>analysis<|message|>plan<|end|>Paris.",
            LEAKED,
            "<|channel|>analysis<|message|>plan<|end|>Paris.",
            id="harmony-without-final",
        ),
        pytest.param(
            "<think>plan</think>[THINK]more[/THINK]Paris.", LEAKED, None, id="after-strip"
        ),
        pytest.param(TOKENED, "ok", "Paris.", id="harmony-tokened"),
        pytest.param(STRIPPED, "ok", "Paris.", id="harmony-stripped"),
        pytest.param("<think>plan</think>Paris.", "ok", "Paris.", id="think"),
        pytest.param("Write `[THINK]` to open one.", "ok", None, id="quoted"),
        pytest.param("analysis of the poll: Paris.", "ok", None, id="english-analysis"),
    ],
)
@pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
def test_an_answer_that_holds_markup_is_leaked(
    run_loop: LoopRunner, content: str, outcome: str, text: str | None, stream: bool
) -> None:
    trace = run_loop.trace(chat_reply(content), stream=stream)
    assert trace.outcome == outcome
    last = trace.iterations[-1]
    assert last.ending == "answer"
    assert last.text == (text if text is not None else strip_reasoning(content))
    assert ("holds" in last.error) == (outcome == LEAKED)


def test_leaked_run_returns_its_text_and_the_cli_exits_1(
    server: ScriptedServer, capsys: Any
) -> None:
    server.push(chat_reply("[THINK]plan[/THINK]Paris."))
    ran = cli(capsys, "run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi")
    assert ran.returncode == 1
    assert "outcome leaked" in ran.stderr


@pytest.mark.parametrize(
    ("text", "split"),
    [
        pytest.param(TOKENED, ("User asks the capital.", "Paris."), id="tokened"),
        pytest.param(STRIPPED, ("Okay, the user asks the capital.", "Paris."), id="stripped"),
        pytest.param(
            "<|start|>assistant<|channel|>analysis<|message|>a<|end|><|start|>assistant"
            "<|channel|>analysis<|message|>b<|end|><|start|>assistant<|channel|>final"
            "<|message|>c",
            ("a\nb", "c"),
            id="two-analysis-messages",
        ),
        pytest.param(
            "<think>t</think>analysisWe know.assistantfinalYes.",
            ("t\nWe know.", "Yes."),
            id="think",
        ),
        # English: the word "analysis" then a space, or not at the start, or no final channel.
        pytest.param("analysis of it: assistantfinal x", ("", "analysis of it: assistantfinal x")),
        pytest.param("Our analysisWe assistantfinal x", ("", "Our analysisWe assistantfinal x")),
        pytest.param("analysisOkay, no final here.", ("", "analysisOkay, no final here.")),
        pytest.param("analysis's scope", ("", "analysis's scope")),
    ],
)
def test_harmony_splits_tokened_or_stripped(text: str, split: tuple[str, str]) -> None:
    assert split_reasoning(text) == split


def test_harmony_split_is_linear() -> None:
    # 200k headers with no final one, and a final header after 200k analysis headers.
    for text in ("analysisX" + "assistantanalysis" * 20_000, STRIPPED * 20_000):
        reasoning, answer = split_reasoning(text)
        assert len(reasoning) + len(answer) <= len(text)


@pytest.mark.parametrize("api", ["chat", "responses", "messages", "ollama"])
def test_gemma_thought_channel_in_the_answer_is_leaked_on_every_wire(
    demo: DemoServer, api: str
) -> None:
    request = RunRequest(
        "gemma4-text-calls",
        512,
        system=DEMO_SYSTEM,
        prompt=DEMO_PROMPT,
        tools=demo_tools(),
        recover_text_tool_calls=True,
    )
    with Client(demo.base_url, api=api) as client:
        trace = client.run_trace(request)
    assert trace.outcome == LEAKED
    assert trace.iterations[-1].error == "the answer holds gemma-channel markup"
    assert len(trace.tool_calls) == 3  # the calls ran: only the answer leaked


def test_compare_counts_leaked_as_not_ok(server: ScriptedServer) -> None:
    import pandas as pd

    server.push(chat_reply("[THINK]plan[/THINK]Paris."))
    rows, traces = compare_rows(
        [Endpoint("e", server.base_url, "m")], scenarios=[Scenario("s", prompt="hi")]
    )
    assert [r["outcome"] for r in rows] == [LEAKED]
    assert summarize(pd.DataFrame(rows)).loc["s", "e"].startswith("0/1")
    assert "leaked" in EXPLANATIONS
    assert '<p class="bad">' in trace_page(traces[0])
