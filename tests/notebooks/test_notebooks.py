"""Every notebook in notebooks/ is saved clean and runs top to bottom on the demo endpoint.

Notebooks are stored without outputs (Binder and a fresh checkout run them); this suite
executes each one and checks what it shows: printed lines, the DataFrames it displays (read
back from their HTML), and the widgets' state as nbclient saves it.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbrun import NOTEBOOKS, errors, execute, kernel_spec_dir, outputs, read

from rig_nb.capabilities import CHECKS
from rig_nb.compare import DEFAULT_SCENARIOS
from rig_nb.demo import DemoServer

PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MACHINE_PATHS = ("/work/", "/root/", "/home/", "/tmp/", "/Users/", "C:\\\\")
SERVER_KINDS = {
    "llama.cpp",
    "vllm",
    "ollama",
    "lm-studio",
    "sglang",
    "litellm",
    "openai",
    "unknown",
}
# pandas cuts a cell past display.max_colwidth (50 by default) and ends it with this.
CUT = "..."


@pytest.fixture(scope="session")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return kernel_spec_dir(tmp_path_factory.mktemp("kernels"))


@pytest.fixture(scope="session")
def demo_personas() -> dict[str, Any]:
    """The demo's personas by name, in the demo's order."""
    with DemoServer() as server:
        return dict(server.personas)


# --- reading an executed notebook -------------------------------------------------------------


def cell_outputs(nb: Any, snippet: str) -> list[Any]:
    """The outputs of the one code cell whose source contains `snippet`."""
    cells = [c for c in nb.cells if c.cell_type == "code" and snippet in c.source]
    assert len(cells) == 1, snippet
    return list(cells[0].outputs)


def exact_outputs(nb: Any, source: str) -> list[Any]:
    """The outputs of the one code cell whose whole source is `source`."""
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.strip() == source]
    assert len(cells) == 1, source
    return list(cells[0].outputs)


def markdown(nb: Any, snippet: str) -> str:
    cells = [c.source for c in nb.cells if c.cell_type == "markdown" and snippet in c.source]
    assert len(cells) == 1, snippet
    return str(cells[0])


def mimes(outs: list[Any]) -> set[str]:
    return {m for o in outs for m in o.get("data", {})}


def printed(outs: list[Any]) -> str:
    return "".join(o.get("text", "") for o in outs if o.output_type == "stream")


def plain(outs: list[Any]) -> list[str]:
    return [o.data["text/plain"] for o in outs if "text/plain" in o.get("data", {})]


def widget_values(nb: Any, model_name: str = "HTMLModel") -> list[str]:
    """The `value` of every saved widget of that model (HTML widgets: their markup)."""
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    return [
        str(m["state"].get("value", "")) for m in state.values() if m["model_name"] == model_name
    ]


def widget_models(nb: Any) -> set[str]:
    return {m["model_name"] for m in nb.metadata["widgets"][WIDGET_STATE]["state"].values()}


class _Rows(HTMLParser):
    """The rows of an HTML table as lists of cell texts (th and td alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.body: list[bool] = []
        self._cell: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr":
            self.rows.append([])
            self.body.append(self._in_body)
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def frames(outs: list[Any]) -> list[list[dict[str, str]]]:
    """Each DataFrame among `outs`, as records keyed by column ("" is the index)."""
    found = []
    for o in outs:
        html = o.get("data", {}).get("text/html", "")
        if "dataframe" not in html:
            continue
        parser = _Rows()
        parser.feed(html)
        header = parser.rows[0]
        body = [r for r, b in zip(parser.rows, parser.body, strict=True) if b]
        found.append([dict(zip(["", *header[1:]], r, strict=True)) for r in body])
    return found


def frame(outs: list[Any]) -> list[dict[str, str]]:
    tables = frames(outs)
    assert len(tables) == 1, f"{len(tables)} DataFrames"
    return tables[0]


def column(records: list[dict[str, str]], name: str) -> list[str]:
    return [r[name] for r in records]


def whole(cells: list[str]) -> None:
    """Text cells shown whole: some longer than pandas' default cut, none cut."""
    assert max(len(c) for c in cells) > 50
    assert not [c for c in cells if c.endswith(CUT)]


# --- what each notebook must show ---------------------------------------------------------


def check_quickstart(nb: Any, personas: dict[str, Any]) -> None:
    outs = outputs(nb)
    assert "qwen3-no-parser: tool calling works" in printed(outs)
    run = cell_outputs(nb, "stream=True")
    assert WIDGET in mimes(run)  # the live TraceView
    assert "Lisbon: 21 C" in printed(run)
    assert WIDGET in mimes(exact_outputs(nb, "result.trace"))  # a bare trace: a TraceView
    html = "\n".join(widget_values(nb))
    assert re.search(r"qwen3-no-parser @ 127\.0\.0\.1:\d+: ok, 3 iterations", html)
    assert "ending: how the turn ended" in html  # the legend
    # The first row, opened by the notebook, describes a streamed reply.
    assert re.search(r"streamed: \d+ chunks, first after \d\.\d{3} s", html)
    iterations = frame(cell_outputs(nb, "to_dataframe()"))
    assert column(iterations, "ending") == ["tool_calls", "tool_calls", "answer"]
    assert set(column(iterations, "reasoning_shape")) == {"unopened"}
    assert all(float(t) > 0 for t in column(iterations, "ttft_s"))
    calls = frame(cell_outputs(nb, "tool_calls_dataframe()"))
    assert column(calls, "name") == ["get_weather", "get_weather", "add"]
    assert "TextareaModel" in widget_models(nb)  # LeakLab
    explained = markdown(nb, "**shape**")
    for name in ("shape", "leaks", "ending"):
        assert re.search(rf"^- \*\*{name}\*\*: \S", explained, re.M), name
    following = markdown(nb, "## Next")
    for path in PATHS:
        if path.stem != "01-quickstart":
            assert f"`{path.name}`" in following, path.name


def check_probe(nb: Any, personas: dict[str, Any]) -> None:
    assert "ProbePanel(demo.base_url" in "".join(c.source for c in nb.cells)
    verdicts = [plain(c.outputs) for c in nb.cells if c.source.rstrip().endswith("panel.probe()")]
    assert verdicts == [["'ok'"], ["'OutputLimitError'"], ["'NoToolCallingError'"]]
    assert WIDGET in mimes(cell_outputs(nb, "panel.full_report()"))
    reports = [v for v in widget_values(nb) if "stream_parity" in v]
    assert len(reports) == 1
    assert "server: <b>vllm</b>" in reports[0]
    assert all(f">{name}<" in reports[0] for name in CHECKS)
    assert "--tool-call-parser" in reports[0]  # hermes-text-tools: vLLM's tool parser is off
    # The report cancelled after three requests (the panel's last): what was found, then cancelled.
    assert "cancelled after 3 of " in reports[0]
    background = cell_outputs(nb, "panel.start_report()")
    assert "started in the background: True" in printed(background)
    assert re.search(r"^cancelled after 3 of \d+ requests$", printed(background), re.M)
    found = {r["check"]: r["verdict"] for r in frame(background)}
    assert found["tool_choice_unset"] == "text" and found["tool_choice_auto"] == "text"
    assert (
        found["tool_choice_required"] == "cancelled" and found["structured_output"] == "cancelled"
    )
    doctor = frame(cell_outputs(nb, "endpoint_report(client, m)"))
    assert column(doctor, "") == [*CHECKS, "server (guessed)"]
    checked = [k for k in doctor[0] if k]
    assert len(checked) >= 4
    assert {doctor[-1][m] for m in checked} <= SERVER_KINDS
    assert len({tuple(r[m] for r in doctor) for m in checked}) == len(checked)  # all differ
    advice = frame(cell_outputs(nb, 'advice["advice"] != ""'))
    assert set(column(advice, "persona")) <= set(checked)
    whole(column(advice, "advice"))
    probes = frame(cell_outputs(nb, "client.probe_tool_calling(model)"))
    assert column(probes, "model") == list(personas)
    whole(column(probes, "why"))
    assert {r["verdict"] for r in probes if not r["why"]} == {"ok"}
    matrix = frame(cell_outputs(nb, "tool_choice_matrix(client, m)"))
    assert column(matrix, "") == list(personas)
    assert {"tool call", "text", "error 500"} <= {r["auto"] for r in matrix} | {
        r["required"] for r in matrix
    }
    assert "No endpoint configured" in printed(outputs(nb))
    check_tool_schemas(nb)


def check_tool_schemas(nb: Any) -> None:
    """Notebook 02's section "Your tools": an MCP server's tools under tool_schema_report."""
    table = {r[""]: r for r in frame(cell_outputs(nb, "tool_schema_report(client, m, mcp.tools)"))}
    assert list(table) == ["book_room", "set_priority", "add", "toolset tokens"]
    assert {m: table["book_room"][m] for m in table["add"] if m} == {
        "well-behaved": "ok",
        "schema-rejecting": "rejected 400",
        "schema-fails-open": "fails open",
        "args-as-string": "args as string",
    }
    assert table["set_priority"]["schema-fails-open"] == "fails open"
    assert table["add"]["schema-fails-open"] == "ok"
    assert int(table["toolset tokens"]["well-behaved"]) > 0
    evidence = frame(cell_outputs(nb, 'schema_evidence["verdict"] != "ok"'))
    whole(column(evidence, "evidence"))
    said = " ".join(column(evidence, "evidence"))
    assert "Pattern must start with '^' and end with '$'" in said
    assert "/when: 'any text' is not a 'date-time'" in said
    told = printed(cell_outputs(nb, "after sanitize_tools:"))
    assert "book_room: /properties/ticket/pattern: anchored" in told
    assert "after sanitize_tools: {'book_room': 'ok', 'set_priority': 'ok', 'add': 'ok'}" in told
    battery = {r["feature"]: r["verdict"] for r in frame(cell_outputs(nb, "battery = "))}
    assert battery["format_date_time"] == "fails open" and battery["plain"] == "ok"


def check_long_conversation(nb: Any) -> None:
    """Notebook 03's section "A long conversation": the cut, the refusal, the reuse."""
    long = {r["persona"]: r for r in frame(cell_outputs(nb, "long_runs = {m: run("))}
    ollama = long["ollama-truncates-silently"]
    assert (ollama["outcome"], ollama["cut at"]) == ("context_truncated", "4")
    assert long["llama-context-error"]["outcome"] == "BackendError"
    assert "exceeds the available context size" in long["llama-context-error"]["error"]
    assert long["cache-breaking-template"]["prefix reuse per turn"].startswith("- 100% ")
    shown = widget_values(nb)  # the TraceView: its title, and its last row's line
    assert any("context_truncated" in v for v in shown) and any("cut: answer" in v for v in shown)
    told = printed(cell_outputs(nb, 'for name in ("context_window", "prefix_cache")'))
    assert "truncates silently (4096 of 4608 tokens kept)" in told
    assert "error at 2048 tokens" in told and "context window 2048 tokens" in told


def check_prefix_break(nb: Any) -> None:
    """Notebook 03's section "Why the cache broke": Claude Code's profile (its attribution
    nonce) named where reuse falls, and the doctor's prefix_cache catching
    cache-breaking-template at turn 3 (issues 42 and 45)."""
    runs = {r["run"]: r for r in frame(cell_outputs(nb, "cache_runs = {"))}
    steady, nonce = runs["as the loop sends it"], runs["shaped as Claude Code"]
    assert (steady["client"], nonce["client"]) == ("-", "claude-code")
    assert (steady["outcome"], nonce["outcome"]) == ("ok", "ok")
    assert steady["prefix reuse per turn"] == "- 100% 100% 100% 100%"
    assert (steady["breaks"], steady["first break"]) == ("0", "-")
    assert "100%" not in nonce["prefix reuse per turn"] and nonce["breaks"] == "4"
    assert nonce["first break"].startswith("system changed at char 71: '")
    assert any("break: system changed at char 71" in v for v in widget_values(nb))
    told = printed(cell_outputs(nb, 'for name in ("context_window", "prefix_cache")'))
    assert "prefix_cache: reused 43 of 44" in told
    assert "reuse fell at turn 3: the requests as sent only grew" in told


def check_leaks(nb: Any, personas: dict[str, Any]) -> None:
    described = frame(cell_outputs(nb, '"what it reproduces"'))
    assert column(described, "persona") == list(personas)
    firsts = [(inspect.getdoc(p) or "").splitlines()[0] for p in personas.values()]
    assert column(described, "what it reproduces") == firsts  # whole, not cut at 50
    runs = frame(cell_outputs(nb, "traces = {m: run("))
    assert column(runs, "persona") == list(personas)
    assert [r for r in runs if r["outcome"] == "ok" and r["ending"] != "answer"] == []
    endings = {r["persona"]: r["ending"] for r in runs}
    assert endings["answer-in-reasoning"] == "reasoning_only"
    assert endings["draft-then-call"] == "answer"
    text_callers = [p for p, e in endings.items() if e == "text_tool_calls"]
    assert {"hermes-text-tools", "gpt-oss-raw-harmony", "qwen3-coder-text-calls"} <= set(
        text_callers
    )
    leaks = {name for r in runs for name in r["leaks"].split(",") if name}
    assert {"harmony", "tool-call-tag", "function-tag", "mistral-tool-calls"} <= leaks
    fields = {r["persona"]: r["reasoning field"] for r in runs}
    assert fields["gateway-reasoning-details"] == "reasoning_details"
    shown = printed(cell_outputs(nb, "leaky = next("))
    leaky = [r["persona"] for r in runs if r["leaks"]]
    assert re.findall(r"^=== ([\w.-]+):", shown, re.M) == leaky
    for block in shown.split("=== ")[1:]:  # each leaky reply whole, raw then stripped
        stripped = r"\n--- after strip_reasoning(\n.+|: the same)"
        assert re.search(r"\n--- raw reply\n.+" + stripped, block, re.S)
    assert "[TOOL_CALLS]get_weather[ARGS]" in shown and "<|channel|>analysis" in shown
    recovered = frame(cell_outputs(nb, "for m in text_callers"))
    assert column(recovered, "persona") == text_callers
    assert set(column(recovered, "ending without")) == {"text_tool_calls"}
    assert set(column(recovered, "ending with recovery")) == {"answer"}
    assert all(int(n) > 0 for n in column(recovered, "calls run from text"))
    assert {"minimax-xml-calls", "gemma4-text-calls", "deepseek-v31-tokens"} <= set(text_callers)
    families = frame(cell_outputs(nb, 'families = ["kimi-calls-in-reasoning"'))
    assert column(families, "ending") == ["tool_calls_in_reasoning", "answer"]
    assert column(families, "reasoning_leaks")[0] == "kimi-tool-calls"
    assert column(families, "calls refused")[1] == "2"
    whole(column(recovered, "answer"))
    mlx = frame(cell_outputs(nb, 'recovered["mistral-mlx-text-calls"]'))
    assert set(column(mlx, "source")) == {"text"} and set(column(mlx, "is_error")) == {"False"}
    draft = frame(cell_outputs(nb, '"draft-then-call", recover_text_tool_calls=True'))
    assert set(column(draft, "source")) == {"native"}
    calls = [(r["iteration"], r["name"], r["arguments"]) for r in draft]
    assert len(calls) == len(set(calls)) > 0  # the drafted call ran once
    decoded = frame(cell_outputs(nb, "decode_json_object(text)"))
    assert column(decoded, "persona") == list(personas)
    replay = {(r["persona"], r["replay"]): r for r in frame(cell_outputs(nb, "REPLAYS = {"))}
    off, on = replay["deepseek-thinking-tools", "off"], replay["deepseek-thinking-tools", "on"]
    assert (off["outcome"], on["outcome"]) == ("BackendError", "ok")
    assert "Missing `reasoning_content` field" in off["answer or error"]
    assert on["replayed"] == "reasoning_content,reasoning_content" and off["replayed"] == ""
    lost, kept = replay["vllm-reads-reasoning", "off"], replay["vllm-reads-reasoning", "on"]
    assert int(kept["tool calls"]) > int(lost["tool calls"])
    assert "no longer know" in lost["answer or error"] and "add(21, 4)" in kept["answer or error"]
    doctor = {
        (r["persona"], r["check"]): r["verdict"] for r in frame(cell_outputs(nb, "doctor = []"))
    }
    assert doctor["vllm-reads-reasoning", "reasoning_replay"] == "rendered via reasoning"
    assert doctor["deepseek-thinking-tools", "reasoning_replay"] == "rendered via reasoning_content"
    assert doctor["honors-thinking-switch", "thinking_switch"] == "honored"
    assert doctor["ignores-thinking-switch", "thinking_switch"] == "ignored"
    check_long_conversation(nb)
    check_prefix_break(nb)
    assert '{"country": "France", "capital": "Paris"}' in column(decoded, "decode_json_object")
    assert "TextareaModel" in widget_models(nb)  # LeakLab
    state = nb.metadata["widgets"][WIDGET_STATE]["state"].values()
    titles = [m["state"]["titles"] for m in state if m["model_name"] == "AccordionModel"]
    assert [tuple(t.split(": ")[0] for t in ts) for ts in titles] == [tuple(personas)]
    assert [t.split(": ")[1] for t in titles[0]] == column(runs, "outcome")


def check_compare(nb: Any, personas: dict[str, Any]) -> None:
    outs = outputs(nb)
    assert sum("image/png" in o.get("data", {}) for o in outs) == 2
    ran = cell_outputs(nb, "repeats=3")
    counts = re.search(r"(\d+) rows: (\d+) endpoints x (\d+) scenarios x 3", printed(ran))
    assert counts is not None
    rows, n_endpoints, n_scenarios = map(int, counts.groups())
    assert n_scenarios == len(DEFAULT_SCENARIOS) and rows == n_endpoints * n_scenarios * 3
    assert "IntProgressModel" in widget_models(nb)  # compare's progress bar
    matrix = frame(exact_outputs(nb, "summarize(df)"))
    assert column(matrix, "") == [s.name for s in DEFAULT_SCENARIOS]
    cells = [v for r in matrix for k, v in r.items() if k]
    assert len(cells) == n_endpoints * n_scenarios
    assert all(re.fullmatch(r"[0-3]/3 ok(, pass\^3|, flaky)?, \d+\.\d\d s", c) for c in cells), (
        cells
    )
    assert all(("pass^3" in c) == c.startswith("3/3") for c in cells), cells
    assert {c[:3] for c in cells} >= {"3/3", "0/3"}
    assert WIDGET in mimes(cell_outputs(nb, "CompareView(df)"))
    assert [v for v in widget_values(nb) if "3/3 ok" in v and "<table" in v]  # the matrix
    assert "AccordionModel" in widget_models(nb)  # the rows, on demand
    flaky = frame(cell_outputs(nb, "flaky_df = compare("))
    assert all(re.match(r"3/3 ok, pass\^3, ", r["well-behaved"]) for r in flaky)
    assert any(re.match(r"[12]/3 ok, flaky, ", r["flaky-answers"]) for r in flaky)
    assert [v for v in widget_values(nb) if "flaky<br>" in v and "<table" in v]
    evaluated = {r[""]: r for r in frame(cell_outputs(nb, "evaluation = compare("))}
    assert all(c.startswith("2/2 ok, pass^2") for k, c in evaluated["probe"].items() if k)
    assert evaluated["agentic"]["well-behaved"].startswith("2/2 ok, pass^2")
    assert evaluated["agentic"]["agent-shape-text-calls"].startswith("0/2 ok")
    assert evaluated["structured output"]["vllm-json-in-reasoning"].startswith("0/2 ok")
    failed = {
        (r["endpoint"], r["scenario"]): r["outcome"] for r in frame(cell_outputs(nb, "failed = "))
    }
    assert failed[("agent-shape-text-calls", "agentic")] == "NoToolCallingError"
    assert failed[("vllm-json-in-reasoning", "structured output")] == "json_in_reasoning"
    assert failed[("lmstudio-json-in-reasoning", "structured output")] == "json_in_reasoning"
    wires = frame(cell_outputs(nb, "wires = compare("))
    for model in ("well-behaved", "reasoning-field", "hermes-text-tools"):
        # One endpoint over every wire: the same outcomes, cell by cell.
        for api in ("responses", "messages", "ollama"):
            assert [r[f"{model} / chat"][:6] for r in wires] == [
                r[f"{model} / {api}"][:6] for r in wires
            ]
    swept = frame(cell_outputs(nb, "swept = compare("))
    assert "rows: loads [1, 4, 8], copies [0, 1, 2, 3, 4, 5, 6, 7]" in printed(
        cell_outputs(nb, "swept = compare(")
    )
    assert [(r["endpoint"], r["load"]) for r in swept] == [
        (e, str(n)) for e in ("well-behaved", "crossed-streams") for n in (1, 4, 8)
    ]
    assert [(r["ok"], r["runs"]) for r in swept[:3]] == [("2", "2"), ("8", "8"), ("16", "16")]
    assert (swept[3]["ok"], swept[3]["runs"]) == ("2", "2")  # alone, nothing crossed
    assert all(int(r["ok"]) < int(r["runs"]) for r in swept[4:])  # under load, it did
    crossed = printed(cell_outputs(nb, 'crossed = swept[swept["outcome"]'))
    assert "crossed-streams" in crossed and "well-behaved" not in crossed
    assert [v for v in widget_values(nb) if "p95 latency s" in v and "<table" in v]
    ttft = frame(cell_outputs(nb, "stream=True, concurrency=8"))
    values = [float(v) for r in ttft for k, v in r.items() if k]
    assert len(values) == n_endpoints * n_scenarios and min(values) > 0
    assert re.search(r"OutputLimitError - \S", printed(cell_outputs(nb, 'df.attrs["traces"][row]')))
    saved = printed(cell_outputs(nb, "save_html(df"))
    size = re.search(r"report\.html: ([\d,]+) bytes", saved)
    assert size is not None and int(size.group(1).replace(",", "")) > 10_000
    assert f"traces.jsonl: {rows} traces read back, identical: True" in saved
    spans = frame(cell_outputs(nb, "to_otel("))
    names = column(spans, "span")
    assert names[0] == "invoke_agent rig_nb"
    assert {"chat well-behaved", "execute_tool add"} <= set(names)
    parents = {r["span"]: r["parent"] for r in spans}
    assert parents["chat well-behaved"] == "invoke_agent rig_nb"
    assert parents["execute_tool add"] == "chat well-behaved"
    whole(column(spans, "attributes"))


def check_real_model(nb: Any, personas: dict[str, Any]) -> None:
    said = printed(outputs(nb))
    assert "recorded personas: ['smollm2-chatml-recorded', 'smollm2-recorded']" in said
    matrix = frame(cell_outputs(nb, "matrices(recorded_targets)"))
    by_name = {r[""]: r for r in matrix}
    assert by_name["smollm2-recorded"]["auto"] == "tool call"
    assert by_name["smollm2-recorded"]["required"] == "error 500"
    loop = cell_outputs(nb, 'weather_run(demo.base_url, "smollm2-recorded")')
    assert "outcome: IterationLimitError" in printed(loop)
    paris = frame(cell_outputs(nb, 'paris = paris_loop(demo.base_url, "smollm2-recorded")'))
    assert "True" in column(paris, "is_error")  # calls the tool could not serve, fed back
    budget = plain(cell_outputs(nb, "budget_trace = small_budget("))
    assert budget and re.match(r"\('OutputLimitError',\s+'length',", budget[0])
    side_by_side = frame(cell_outputs(nb, "df = compare(endpoints)"))
    assert set(column(side_by_side, "endpoint")) == {"smollm2-recorded", "smollm2-chatml-recorded"}
    assert "No live server" in said


CHECKS_BY_NOTEBOOK: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "01-quickstart": check_quickstart,
    "02-probe-your-endpoint": check_probe,
    "03-reasoning-leaks": check_leaks,
    "04-compare-endpoints": check_compare,
    "05-real-model": check_real_model,
}


def test_every_notebook_has_its_checks() -> None:
    assert {p.stem for p in PATHS} == set(CHECKS_BY_NOTEBOOK)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_saved_clean(path: Path) -> None:
    text = path.read_text()
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert "widgets" not in nb.metadata  # no saved widget state
    assert text.isascii()
    for marker in MACHINE_PATHS:
        assert marker not in text
    assert not re.search(r"\b(sk|hf|gsk|xai)-[A-Za-z0-9_-]{8,}", text)
    # Modules and files that moved away: a notebook naming them would mislead.
    for gone in ("rig_nb.testing.RecordingProxy", "rig_nb.replay", "rig_nb/recordings"):
        assert gone not in text, gone


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_runs_and_shows_what_it_says(
    path: Path, kernels: Path, demo_personas: dict[str, Any]
) -> None:
    nb = execute(read(path), kernels)
    assert errors(nb) == []
    stderr = [o.text for o in outputs(nb) if o.output_type == "stream" and o.name == "stderr"]
    assert stderr == []
    CHECKS_BY_NOTEBOOK[path.stem](nb, demo_personas)


# The variables the README names for pointing the notebooks at your own server.
README_VARIABLES = {"RIG_NB_BASE_URL", "RIG_NB_MODEL", "RIG_NB_API_KEY"}


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_reads_only_the_readme_variables(path: Path) -> None:
    nb = read(path)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert set(re.findall(r"RIG_NB_[A-Z_]+", code)) <= README_VARIABLES


def test_real_model_notebook_goes_live_on_the_readme_variables(demo: DemoServer) -> None:
    """Notebook 05's setup cell, run with RIG_NB_BASE_URL and RIG_NB_MODEL set, takes the
    live server from them (as the README says every notebook does)."""
    setup = next(
        c.source for c in read(NOTEBOOKS / "05-real-model.ipynb").cells if "LIVE_URL" in c.source
    )
    code = setup + "\nprint('->', LIVE_URL, LIVE_MODEL, LIVE_KEY)\ndemo.close()\n"
    env = {**os.environ, "RIG_NB_BASE_URL": demo.base_url, "RIG_NB_MODEL": "well-behaved"}
    env["RIG_NB_API_KEY"] = "k-123"
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert ran.returncode == 0, ran.stderr
    assert f"-> {demo.base_url} well-behaved k-123" in ran.stdout
    assert "live server: yes" in ran.stdout
