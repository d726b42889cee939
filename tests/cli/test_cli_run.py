"""The command line: `demo`, `probe` and `run`.

The demo runs as a subprocess (once per module, and once streamed); probe and run in
process against the session's demo endpoint and scripted servers on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from cli_helpers import assert_one_line_error, child_env, cli, rig

from rig_nb import Trace
from rig_nb.cli.text import plural
from rig_nb.demo import DEMO_PROMPT, DemoServer
from rig_nb.testing import ScriptedServer, chat_reply, tool_call

# persona, probe verdict, outcome, ending, shapes, leaks
DEMO_ROWS = [
    ("well-behaved", "tool call", "ok", "answer", "none", "none"),
    ("qwen3-no-parser", "tool call", "ok", "answer", "unopened", "none"),
    ("r1-json-sketch", "tool call", "ok", "answer", "closed", "none"),
    (
        "budget-think",
        "OutputLimitError",
        "OutputLimitError",
        "length_in_reasoning",
        "unclosed",
        "none",
    ),
    ("reasoning-field", "tool call", "ok", "answer", "field", "none"),
    ("ollama-reasoning", "tool call", "reasoning_only", "reasoning_only", "field", "none"),
    (
        "hermes-text-tools",
        "NoToolCallingError",
        "text_tool_calls",
        "text_tool_calls",
        "closed",
        "tool-call-tag",
    ),
    ("tool-spinner", "tool call", "IterationLimitError", "tool_calls", "none", "none"),
    (
        "gpt-oss-raw-harmony",
        "NoToolCallingError",
        "text_tool_calls",
        "text_tool_calls",
        "none",
        "harmony",
    ),
    (
        "mistral-text-calls",
        "NoToolCallingError",
        "text_tool_calls",
        "text_tool_calls",
        "none",
        "mistral-tool-calls",
    ),
    # It answers the weather without calling the tools: not ok (require_tool_call).
    (
        "smollm2-chatml-recorded",
        "NoToolCallingError",
        "NoToolCallingError",
        "answer",
        "none",
        "none",
    ),
    ("smollm2-recorded", "tool call", "IterationLimitError", "tool_calls", "none", "none"),
]
DEMO_HEADER = ["persona", "probe", "outcome", "ending", "shapes", "leaks", "iterations"]


def demo_table(out: str) -> dict[str, dict[str, str]]:
    """The demo's table, persona -> column -> cell (cells are separated by 2+ spaces)."""
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("persona "))
    header = re.split(r"\s{2,}", lines[start])
    table = {}
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("shapes:"):
            break
        cells = re.split(r"\s{2,}", line)
        assert len(cells) == len(header), line
        table[cells[0]] = dict(zip(header, cells, strict=True))
    return table


@pytest.fixture(scope="module")
def demo_out() -> str:
    proc = rig("demo")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def test_demo_lists_every_persona(demo_out: str) -> None:
    with DemoServer() as server:
        models = server.models
    assert demo_out.startswith(
        f"rig_nb demo: {plural(len(models), 'persona')} on the embedded endpoint http://127.0.0.1:"
    )
    table = demo_table(demo_out)
    assert list(table) == models
    assert list(next(iter(table.values())))[: len(DEMO_HEADER)] == DEMO_HEADER
    for persona, row in table.items():
        # compare's outcome: no "ok" that is not an answer made with the tools.
        made = row["ending"] == "answer" and row["tool calls"] != "0"
        assert (row["outcome"] == "ok") == (made and row["outcome"] != "leaked"), persona
        assert (row["answer"] == "-") == (row["outcome"] != "ok"), persona


@pytest.mark.parametrize(
    ("persona", "probe", "outcome", "ending", "shapes", "leaks"),
    [pytest.param(*row, id=row[0]) for row in DEMO_ROWS],
)
def test_demo_row(
    demo_out: str, persona: str, probe: str, outcome: str, ending: str, shapes: str, leaks: str
) -> None:
    row = demo_table(demo_out)[persona]
    assert (row["probe"], row["outcome"], row["ending"]) == (probe, outcome, ending)
    assert (row["shapes"], row["leaks"]) == (shapes, leaks)


def table_lines(out: str) -> list[str]:
    """The demo's table, its header line first."""
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("persona "))
    end = next(
        n
        for n, line in enumerate(lines)
        if n > start and (not line.strip() or line.startswith(("shapes: ", "left out ")))
    )
    return lines[start:end]


def test_demo_fits_the_terminal(capsys: pytest.CaptureFixture[str], demo_out: str) -> None:
    assert max(map(len, table_lines(demo_out))) > 150  # a pipe gets every cell whole
    ran = cli(capsys, "demo", columns=100)
    assert ran.returncode == 0, ran.stderr
    before_trace = ran.stdout.split("Per-iteration trace")[0]
    assert max(map(len, before_trace.splitlines())) <= 100
    table = table_lines(ran.stdout)
    assert len(table) == len(table_lines(demo_out))
    assert table[0].split()[:3] == ["persona", "probe", "outcome"] and "..." in "".join(table)


def test_demo_explains_its_columns_and_shows_a_leaky_trace(demo_out: str) -> None:
    spinner = demo_table(demo_out)["tool-spinner"]
    assert (spinner["iterations"], spinner["tool calls"]) == ("8", "8")
    legend = [line for line in demo_out.splitlines() if line.startswith("shapes: ")]
    assert len(legend) == 1 and "leaks: " in legend[0] and "ending: " in legend[0]
    assert "Per-iteration trace of qwen3-no-parser" in demo_out
    assert "outcome ok, ending answer, 3 iterations, 3 tool calls" in demo_out
    assert "    raw: Okay, the user asks" in demo_out
    assert "    stripped: Here is what I found. Lisbon: 21 C" in demo_out
    # Named as the user started it: the fixture ran `python -m rig_nb demo`.
    assert "Your endpoint: python -m rig_nb models --base-url URL" in demo_out


@pytest.mark.slow
def test_demo_streamed_gives_the_same_table(demo_out: str) -> None:
    # A terminal wider than the table: nothing is cut, so the cells equal the piped ones.
    proc = rig("demo", "--stream", COLUMNS="300")
    assert proc.returncode == 0, proc.stderr
    assert "; streamed, over chat, each persona" in proc.stdout
    assert 150 < max(map(len, table_lines(proc.stdout))) <= 300
    columns = ("probe", "outcome", "ending", "shapes", "leaks", "iterations", "tool calls")
    columns += ("answer",)
    streamed, plain = demo_table(proc.stdout), demo_table(demo_out)
    assert {p: [r[c] for c in columns] for p, r in streamed.items()} == {
        p: [r[c] for c in columns] for p, r in plain.items()
    }


@pytest.mark.slow
def test_demo_without_pandas() -> None:
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "from rig_nb.cli import main\n"
        "sys.exit(main(['demo']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=child_env()
    )
    assert proc.returncode == 0, proc.stderr
    assert demo_table(proc.stdout)["qwen3-no-parser"]["outcome"] == "ok"


# --- probe, run --------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [[], ["--stream"]], ids=["plain", "streamed"])
def test_probe_yes(capsys: pytest.CaptureFixture[str], demo: DemoServer, stream: list[str]) -> None:
    ran = cli(capsys, "probe", "--base-url", demo.base_url, "--model", "well-behaved", *stream)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("tool calling: yes (well-behaved at 127.0.0.1:")
    assert ("streamed" in ran.stdout) == bool(stream)
    assert demo.requests[-1].json.get("stream", False) == bool(stream)
    bare = cli(capsys, "probe", "--base-url", demo.origin, "--model", "qwen3-no-parser")
    assert bare.returncode == 0, bare.stderr


@pytest.mark.parametrize(
    ("model", "tool_choice", "verdict"),
    [
        pytest.param("hermes-text-tools", "auto", "NoToolCallingError", id="text-tools"),
        pytest.param("budget-think", "auto", "OutputLimitError", id="budget"),
        pytest.param("tool-spinner", "unset", "NoToolCallingError", id="unset"),
        pytest.param("well-behaved", "none", "NoToolCallingError", id="none"),
    ],
)
def test_probe_no(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, model: str, tool_choice: str, verdict: str
) -> None:
    args = ("--base-url", demo.base_url, "--model", model, "--tool-choice", tool_choice)
    ran = cli(capsys, "probe", *args)
    assert ran.returncode == 1
    assert ran.stdout.startswith(f"tool calling: no ({verdict}: ")
    assert ran.stderr == ""


def test_probe_an_endpoint_error(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    args = ("--base-url", demo.base_url, "--model", "tool-spinner", "--tool-choice", "required")
    assert_one_line_error(cli(capsys, "probe", *args), 1, "ai backend: HTTP 500")
    args = ("--base-url", demo.base_url, "--model", "m", "--api-key-env", "RIG_UNSET_VAR")
    assert_one_line_error(cli(capsys, "probe", *args), 2, "RIG_UNSET_VAR", "not set")


def test_run_prints_the_trace(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", "qwen3-no-parser")
    ran = cli(capsys, *args, "--prompt", DEMO_PROMPT, "--demo-tools")
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout
    assert out.startswith("qwen3-no-parser at 127.0.0.1:")
    assert "outcome ok, ending answer, 3 iterations, 3 tool calls" in out.splitlines()[0]
    assert out.count("shape=unopened") == 3
    assert 'call get_weather {"city": "Lisbon"} -> Lisbon: 21 C, clear sky' in out
    assert out.rstrip().endswith("add(21, 4) gives 25.")
    plain = cli(
        capsys, *args, "--prompt", "What is the capital of France?", "--system", "Be brief."
    )
    assert plain.returncode == 0
    assert "stripped: The capital of France is Paris." in plain.stdout


@pytest.mark.parametrize("stream", [[], ["--stream"]], ids=["plain", "streamed"])
def test_run_counts_in_words(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, stream: list[str]
) -> None:
    server.push(chat_reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})]), chat_reply("3"))
    args = ("run", "--base-url", server.base_url, "--model", "m", "--prompt", "1+2?", *stream)
    ran = cli(capsys, *args, "--demo-tools")
    assert ran.returncode == 0, ran.stderr
    assert "outcome ok, ending answer, 2 iterations, 1 tool call," in ran.stdout
    assert 'call add {"a": 1, "b": 2} -> 3' in ran.stdout
    assert all(r.json.get("stream", False) == bool(stream) for r in server.requests)
    server.push(chat_reply("hello"))
    assert "1 iteration, 0 tool calls" in cli(capsys, *args).stdout


def test_run_extra_body_reaches_every_request(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer
) -> None:
    server.push(chat_reply("ok"))
    extra = {"grammar": 'root ::= "ok"', "chat_template_kwargs": {"enable_thinking": False}}
    args = ("--base-url", server.base_url, "--model", "m", "--prompt", "hi")
    ran = cli(capsys, "run", *args, "--extra-body", json.dumps(extra))
    assert ran.returncode == 0, ran.stderr
    body = server.requests[-1].json
    assert {k: body[k] for k in extra} == extra


def test_run_recovers_text_tool_calls(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", "hermes-text-tools", "--demo-tools")
    off = cli(capsys, *args, "--prompt", DEMO_PROMPT)
    assert off.returncode == 1
    assert "ending text_tool_calls, 1 iteration, 0 tool calls" in off.stdout
    on = cli(capsys, *args, "--prompt", DEMO_PROMPT, "--recover-text-tool-calls", "--json")
    assert on.returncode == 0, on.stderr
    trace = Trace.from_json(on.stdout)
    assert trace.tool_calls and {c.source for c in trace.tool_calls} == {"text"}


@pytest.mark.parametrize(
    ("model", "outcome", "meaning"),
    [
        pytest.param(
            "hermes-text-tools",
            "text_tool_calls",
            "wrote its tool calls as text; --recover-text-tool-calls runs such calls, and "
            "python -m rig_nb doctor names the server-side fix",
            id="text-tool-calls",
        ),
        pytest.param(
            "ollama-reasoning",
            "reasoning_only",
            "the reply held reasoning but no answer",
            id="reasoning-only",
        ),
    ],
)
def test_run_exits_1_unless_it_ended_in_an_answer(
    capsys: pytest.CaptureFixture[str],
    demo: DemoServer,
    demo_out: str,
    model: str,
    outcome: str,
    meaning: str,
) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", model, "--demo-tools")
    ran = cli(capsys, *args, "--prompt", DEMO_PROMPT, "--max-tokens", "512")
    assert_one_line_error(ran, 1, f"rig-nb: outcome {outcome}: ", meaning)
    assert f": outcome {outcome}, ending {outcome}, " in ran.stdout.splitlines()[0]
    # The demo table shows the same one outcome for the same run.
    assert demo_table(demo_out)[model]["outcome"] == outcome
    as_json = cli(capsys, *args, "--prompt", DEMO_PROMPT, "--json")
    assert as_json.returncode == 1
    assert Trace.from_json(as_json.stdout).outcome == outcome


def test_probe_names_a_tool_call_written_as_text(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    ran = cli(capsys, "probe", "--base-url", demo.base_url, "--model", "hermes-text-tools")
    assert ran.returncode == 1 and ran.stderr == ""
    verdict, hint = ran.stdout.splitlines()
    assert verdict == (
        "tool calling: no (NoToolCallingError: the reply wrote a tool call as text "
        "(tool-call-tag), not as a tool_calls entry)"
    )
    assert "python -m rig_nb doctor" in hint and "run --recover-text-tool-calls" in hint
    assert "the reply had none" not in ran.stdout
    plain = cli(capsys, "probe", "--base-url", demo.base_url, "--model", "well-behaved")
    assert plain.returncode == 0
    prose = cli(
        capsys, "probe", "--base-url", demo.base_url, "--model", "tool-spinner",
        "--tool-choice", "unset",
    )  # fmt: skip
    assert prose.stdout.strip().endswith("the reply had none)")


def test_run_json_is_a_trace(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", "r1-json-sketch", "--json")
    ran = cli(capsys, *args, "--prompt", DEMO_PROMPT, "--demo-tools", "--max-tokens", "300")
    assert ran.returncode == 0, ran.stderr
    trace = Trace.from_json(ran.stdout)
    assert trace.outcome == "ok" and trace.model == "r1-json-sketch"
    assert len(trace.iterations) == 3
    assert trace.settings["max_tokens"] == 300
    assert trace.settings["tools"] == ["get_weather", "add"]


def test_run_failure_prints_the_partial_trace(
    capsys: pytest.CaptureFixture[str], demo: DemoServer
) -> None:
    args = ("run", "--base-url", demo.base_url, "--prompt", DEMO_PROMPT, "--demo-tools")
    ran = cli(capsys, *args, "--model", "budget-think", "--max-tokens", "100")
    assert_one_line_error(ran, 1, "OutputLimitError")
    assert "finish=length  ending=length_in_reasoning  shape=unclosed" in ran.stdout
    spin = cli(capsys, *args, "--model", "tool-spinner", "--max-iterations", "5", "--json")
    assert_one_line_error(spin, 1, "IterationLimitError")
    trace = Trace.from_json(spin.stdout)
    assert trace.outcome == "IterationLimitError"
    assert len(trace.iterations) == 5
