"""Every command's output within the terminal's width (DESIGN, round 5): `run`, `doctor`,
`probe`, `models` and compare's summaries at 80 and 120 columns, with long evidence, long
model and endpoint names, words longer than the terminal, and keys redacted (issue 45:
lines of 287 characters at 80 columns from run and doctor)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import cli, endpoints_toml
from doctor_fakes import FakeServer

from rig_nb.cli.tables import load_summary_rows, load_summary_text
from rig_nb.demo import DemoServer
from rig_nb.load import LOAD_SUMMARY_COLUMNS
from rig_nb.testing import ScriptedServer, chat_reply, tool_call

KEY = "sk-width-SECRET-0123456789abcdef"
LONG_MODEL = "org-with-a-long-name/" + "a-very-long-model-name-" * 4 + "Q4_K_M.gguf"
# A word no terminal line holds, and prose that must wrap.
UNBROKEN = "x" * 150
PROSE = " ".join(f"word{n}" for n in range(80))
WIDTHS = [80, 120]


def within(text: str, width: int) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert not long, f"{len(long)} lines over {width}: {long[0]!r}"


@pytest.mark.parametrize("columns", WIDTHS)
def test_run_fits_the_terminal(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIG_WIDTH_KEY", KEY)
    said = f"{PROSE} the key {KEY} and {UNBROKEN}\tafter a tab"
    with ScriptedServer(
        [
            chat_reply(None, tool_calls=[tool_call("add", {"a": 1, "b": 2, "why": PROSE})]),
            chat_reply(f"<think>{PROSE}</think>{said}"),
        ]
    ) as server:
        ran = cli(
            capsys, "run", "--base-url", server.base_url, "--model", LONG_MODEL,
            "--api-key-env", "RIG_WIDTH_KEY", "--prompt", "add", "--demo-tools",
            columns=columns,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    within(ran.stdout, columns)
    assert KEY not in ran.stdout.replace("\n", "").replace(" ", "")
    flat = "".join(ran.stdout.split())
    assert UNBROKEN in flat and "word79" in flat and LONG_MODEL in flat  # wrapped, not cut


@pytest.mark.parametrize("columns", WIDTHS)
def test_doctor_fits_the_terminal(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIG_WIDTH_KEY", KEY)
    fake = FakeServer(
        calls_with=("required",),
        content=f"<think>{PROSE}</think>{PROSE} {KEY} {UNBROKEN}",
        stream_content=f"streamed otherwise: {UNBROKEN} {PROSE}",
        owned_by="someone-" * 12,
    )
    with ScriptedServer([fake] * 60) as server:
        ran = cli(
            capsys, "doctor", "--base-url", server.base_url, "--model", LONG_MODEL,
            "--api-key-env", "RIG_WIDTH_KEY", columns=columns,
        )  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr
    assert "evidence:" in ran.stdout
    within(ran.stdout, columns)
    assert KEY not in "".join(ran.stdout.split())


def test_doctor_wraps_under_the_evidence(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeServer(calls_with=("required",), content=f"{PROSE} {PROSE}")
    with ScriptedServer([fake] * 60) as server:
        ran = cli(capsys, "doctor", "--base-url", server.base_url, "--model", "m", columns=80)
    lines = ran.stdout.splitlines()
    first = next(n for n, line in enumerate(lines) if len(line) > 60 and "evidence: " in line)
    start = lines[first].index("evidence: ") + len("evidence: ")
    # The next line continues the evidence's text, under it, not at the margin.
    assert lines[first + 1].startswith(" " * start) and lines[first + 1][start] != " "


@pytest.mark.parametrize("columns", WIDTHS)
def test_probe_and_models_fit_the_terminal(
    columns: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # An id longer than the terminal is the one line allowed over it: cut, --model could
    # not take it back.
    listed_id = "org/" + "long-model-name-" * 4 + "Q4_K_M"
    models = {"data": [{"id": "m", "owned_by": PROSE}, {"id": listed_id, "owned_by": "me"}]}
    with ScriptedServer([chat_reply(f"I will not call tools. {PROSE}"), models]) as server:
        probe = cli(
            capsys, "probe", "--base-url", server.base_url, "--model", LONG_MODEL,
            columns=columns,
        )  # fmt: skip
        listed = cli(capsys, "models", "--base-url", server.base_url, columns=columns)
    assert probe.returncode == 1 and probe.stdout.startswith("tool calling: no")
    within(probe.stdout, columns)
    assert listed.returncode == 0
    within(listed.stdout, columns)
    assert f"\n{listed_id}" in listed.stdout  # an id is never cut


@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_and_its_load_summary_fit_the_terminal(
    columns: int, demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "staging-cluster-" * 6 + "east"
    toml = endpoints_toml(
        tmp_path, (name, demo.base_url, "well-behaved"), ("b", demo.base_url, "tool-spinner")
    )
    for load in ("1", "1,2"):
        ran = cli(capsys, "compare", toml, "--load", load, "--stream", columns=columns)
        assert ran.returncode == 1, ran.stderr  # the tool-spinner's round trip never ends
        within(ran.stdout, columns)
        assert "IterationLimitError" in ran.stdout  # the verdict stays in the rows
    summary = ran.stdout.split("\n\n")[0].splitlines()
    assert any(line.startswith("staging-cluster-") for line in summary)


def test_the_load_summary_keeps_its_numbers_and_names_what_it_leaves_out() -> None:
    row = {
        "endpoint": "e" * 40,
        "scenario": "tool round trip",
        "load": 16,
        "ok": 15,
        "runs": 16,
        "p50_latency_s": 0.0123,
        "p95_latency_s": float("nan"),
        "p50_ttft_s": 1e308,
        "output_tokens_per_s": -5.0,
    }
    assert list(row) == LOAD_SUMMARY_COLUMNS
    cells = load_summary_rows([row])
    assert cells[0]["p95_latency_s"] == "-" and cells[0]["p50_latency_s"] == "0.012"
    whole = load_summary_text(cells, None)
    assert whole.splitlines()[0].split() == LOAD_SUMMARY_COLUMNS
    for width in (60, 80, 120):
        text = load_summary_text(cells, width)
        within(text, width)
        assert "16" in text and "15" in text and "0.012" in text
    narrow = load_summary_text(cells, 60)
    assert "left out to fit 60 columns:" in narrow
