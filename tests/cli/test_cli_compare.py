"""The command line: `compare`, `doctor` and `models`.

In process against the session's demo endpoint; the progress line as a subprocess
whose stderr is a terminal.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from cli_helpers import KEY, assert_one_line_error, child_env, cli, endpoints_toml
from loopback import free_port

from rig_nb.capabilities import CHECKS
from rig_nb.cli.compare_command import read_endpoints
from rig_nb.compare import COLUMNS, DEFAULT_SCENARIOS
from rig_nb.demo import DemoServer
from rig_nb.report import load_traces
from rig_nb.testing import RecordedRequest, Response, ScriptedServer


def test_compare(
    demo: DemoServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("RIG_TEST_KEY", KEY)
    toml = endpoints_toml(
        tmp_path,
        ("clean", demo.base_url, "well-behaved"),
        ("hermes", demo.base_url, "hermes-text-tools"),
    )
    out = {name: str(tmp_path / name) for name in ("out.csv", "report.html", "traces.jsonl")}
    ran = cli(
        capsys, "compare", toml, "--api-key-env", "RIG_TEST_KEY", "--repeats", "2",
        "--csv", out["out.csv"], "--html", out["report.html"], "--traces", out["traces.jsonl"],
    )  # fmt: skip
    assert ran.returncode == 1  # hermes writes its tool calls as text: a row not ok
    rows_n = 2 * 2 * len(DEFAULT_SCENARIOS)
    assert ran.stderr.splitlines() == [
        f"wrote {rows_n} rows to {out['out.csv']}",
        f"wrote the report to {out['report.html']}",
        f"wrote {rows_n} traces to {out['traces.jsonl']}",
        ran.stderr.splitlines()[-1],
    ]
    assert re.fullmatch(rf"rig-nb: \d+ of {rows_n} runs not ok", ran.stderr.splitlines()[-1])
    summary, rows = ran.stdout.split("\n\n")
    assert summary.startswith("summary: ")
    assert re.search(r"^probe\s+2/2 ok, pass\^2, [\d.]+ s\s+0/2 ok, [\d.]+ s$", summary, re.M)
    assert "pass^k: all k repeats ok; flaky: some ok, some not" in summary
    assert re.search(r"^hermes\s+hermes-text-tools\s+probe\s+0\s+NoToolCallingError\s", rows, re.M)
    with open(out["out.csv"]) as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == COLUMNS
    assert [r["endpoint"] for r in table] == ["clean"] * (rows_n // 2) + ["hermes"] * (rows_n // 2)
    assert [r["repeat"] for r in table[:2]] == ["0", "1"]
    assert [t.model for t in load_traces(out["traces.jsonl"])][0] == "well-behaved"
    assert "hermes-text-tools" in Path(out["report.html"]).read_text()
    for text in (ran.stdout, ran.stderr, *(Path(p).read_text() for p in out.values())):
        assert KEY not in text
    assert f"Bearer {KEY}" in [r.headers.get("authorization") for r in demo.requests]
    as_json = json.loads(cli(capsys, "compare", toml, "--json", "--stream").stdout)
    assert [r["scenario"] for r in as_json[: len(DEFAULT_SCENARIOS)]] == [
        s.name for s in DEFAULT_SCENARIOS
    ]


def test_compare_exits_0_when_every_run_is_ok(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = cli(capsys, "compare", endpoints_toml(tmp_path, ("clean", demo.base_url, "well-behaved")))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stderr == ""


def test_compare_evaluation_runs_structured_output_and_agentic(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = endpoints_toml(
        tmp_path,
        ("clean", demo.base_url, "well-behaved"),
        ("agent", demo.base_url, "agent-shape-text-calls"),
    )
    ran = cli(capsys, "compare", toml, "--evaluation", "--repeats", "2")
    assert ran.returncode == 1  # the agent-shaped request fails on agent-shape-text-calls
    summary = ran.stdout.split("\n\n")[0]
    assert re.search(r"^agentic\s+2/2 ok, pass\^2, [\d.]+ s\s+0/2 ok, [\d.]+ s$", summary, re.M)
    assert re.search(r"^structured output\s+2/2 ok, pass\^2, ", summary, re.M)
    assert re.search(
        r"^agent\s+agent-shape-text-calls\s+agentic\s+0\s+NoToolCallingError", ran.stdout, re.M
    )


def test_compare_names_what_to_change_for_a_dead_endpoint(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    toml = endpoints_toml(
        tmp_path,
        ("clean", demo.base_url, "well-behaved"),
        ("dead", f"http://127.0.0.1:{port}/v1", "m"),
    )
    ran = cli(capsys, "compare", toml)
    assert ran.returncode == 1
    assert ran.stderr.splitlines() == [
        f"rig-nb: endpoint 'dead': nothing answers at 127.0.0.1:{port}: check that the server "
        "is running and listens on that host and port",
        f"rig-nb: {len(DEFAULT_SCENARIOS)} of {2 * len(DEFAULT_SCENARIOS)} runs not ok",
    ]


@pytest.mark.parametrize(
    ("option", "make", "parts"),
    [
        pytest.param("--html", "dir", ["--html: ", "is a directory"], id="html-dir"),
        pytest.param("--traces", "dir", ["--traces: ", "is a directory"], id="traces-dir"),
        pytest.param(
            "--traces", "no-parent", ["--traces: ", "does not exist"], id="traces-no-parent"
        ),
        pytest.param("--csv", "dir", ["--csv: ", "is a directory"], id="csv-dir"),
    ],
)
def test_compare_checks_output_paths_before_any_request(
    capsys: pytest.CaptureFixture[str],
    server: ScriptedServer,
    tmp_path: Path,
    option: str,
    make: str,
    parts: list[str],
) -> None:
    target = tmp_path / "out"
    if make == "dir":
        target.mkdir()
    else:
        target = tmp_path / "missing" / "out"
    toml = endpoints_toml(tmp_path, ("scripted", server.base_url, "m"))
    ran = cli(capsys, "compare", toml, option, str(target))
    assert_one_line_error(ran, 2, *parts)
    assert ran.stdout == "" and server.requests == []


def test_compare_two_outputs_may_not_share_a_file(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, tmp_path: Path
) -> None:
    toml = endpoints_toml(tmp_path, ("scripted", server.base_url, "m"))
    same = str(tmp_path / "out")
    ran = cli(capsys, "compare", toml, "--html", same, "--traces", same)
    assert_one_line_error(ran, 2, "--traces: ", "also the --html file")
    assert server.requests == []


def test_compare_prints_its_results_before_it_writes_and_writes_every_file(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    html, traces = tmp_path / "report.html", tmp_path / "traces.jsonl"

    def forward(request: RecordedRequest) -> Response:
        # Once the compare has started, the --html path becomes a directory: its write fails.
        html.mkdir(exist_ok=True)
        reply = httpx.request(
            request.method,
            demo.origin + request.path,
            content=request.body,
            headers={"content-type": "application/json"},
            timeout=30,
        )
        return Response(reply.content, reply.status_code, {"content-type": "application/json"})

    with ScriptedServer([forward] * 100) as proxy:
        toml = endpoints_toml(tmp_path, ("clean", proxy.base_url, "well-behaved"))
        ran = cli(capsys, "compare", toml, "--html", str(html), "--traces", str(traces))
    assert ran.returncode == 1
    assert ran.stdout.startswith("summary: ")
    assert re.search(r"^clean\s+well-behaved\s+probe\s+0\s+ok\s", ran.stdout, re.M)
    lines = ran.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"rig-nb: --html: {html}: ")
    assert lines[1] == f"wrote {len(DEFAULT_SCENARIOS)} traces to {traces}"
    assert len(load_traces(traces)) == len(DEFAULT_SCENARIOS)


def test_compare_after_an_all_ok_run_writes_both_files(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    html, traces = tmp_path / "report.html", tmp_path / "traces.jsonl"
    toml = endpoints_toml(tmp_path, ("clean", demo.base_url, "well-behaved"))
    ran = cli(capsys, "compare", toml, "--html", str(html), "--traces", str(traces))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("summary: ")
    assert ran.stderr.splitlines() == [
        f"wrote the report to {html}",
        f"wrote {len(DEFAULT_SCENARIOS)} traces to {traces}",
    ]
    assert "well-behaved" in html.read_text() and len(load_traces(traces)) == 5


def test_compare_a_misspelled_model_gets_the_models_hint_once(
    capsys: pytest.CaptureFixture[str], demo: DemoServer, tmp_path: Path
) -> None:
    toml = endpoints_toml(
        tmp_path,
        ("clean", demo.base_url, "well-behaved"),
        ("typo", demo.base_url, "well-behavd"),
    )
    ran = cli(capsys, "compare", toml, columns=100)
    assert ran.returncode == 1
    hints = [line for line in ran.stderr.splitlines() if "lists the model names" in line]
    assert len(hints) == 1
    assert hints[0].startswith("rig-nb: endpoint 'typo': ai backend: HTTP 404")
    assert "'well-behavd'" in hints[0]
    assert hints[0].endswith(
        "; python -m rig_nb models --base-url ... lists the model names the endpoint knows"
    )
    # The row table fits the terminal: the error column is cut first.
    rows = ran.stdout.split("\n\n")[1].splitlines()
    assert rows[0].startswith("end") and max(map(len, rows)) <= 100
    assert all(line.endswith("...") for line in rows if line.startswith("typo "))
    wide = cli(capsys, "compare", toml)
    assert max(map(len, wide.stdout.split("\n\n")[1].splitlines())) > 100


def test_the_example_endpoints_file(monkeypatch: pytest.MonkeyPatch) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "endpoints.toml"
    endpoints = read_endpoints(str(example))
    assert len(endpoints) >= 4
    for endpoint in endpoints:
        assert endpoint.name and endpoint.base_url and endpoint.model
        assert endpoint.base_url.rstrip("/").endswith("/v1")
    text = example.read_text()
    for server in ("vLLM", "Ollama", "llama.cpp", "serve-demo"):
        assert server in text
    assert text.isascii()


@pytest.mark.slow
def test_compare_progress_on_a_terminal(demo: DemoServer, tmp_path: Path) -> None:
    import pty

    toml = endpoints_toml(tmp_path, ("clean", demo.base_url, "well-behaved"))
    parent, child = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "rig_nb", "compare", toml],
            stdout=subprocess.PIPE, stderr=child, timeout=120, env=child_env(),
        )  # fmt: skip
        os.close(child)
        child = -1
        err = b""
        while True:
            try:
                chunk = os.read(parent, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(parent)
        if child != -1:
            os.close(child)
    total = len(DEFAULT_SCENARIOS)
    assert proc.returncode == 0
    assert (
        err.decode()
        == "".join(f"\rcompare: {n}/{total} runs" for n in range(1, total + 1)) + "\r\n"
    )
    assert b"\r" not in proc.stdout


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        pytest.param("[[endpoint]\nname = ", ["invalid TOML"], id="bad-toml"),
        pytest.param("title = 'x'\n", ["no [[endpoint]] tables"], id="no-endpoints"),
        pytest.param(
            "[[endpoint]]\nname = 'a'\nbase_url = 'http://127.0.0.1:1/v1'\n",
            ["endpoint 1", "'model'"],
            id="no-model",
        ),
        pytest.param(
            "[[endpoint]]\nname='a'\nbase_url='http://127.0.0.1:1/v1'\nmodel='m'\n"
            "api_key='sk-in-file'\n",
            ["unknown key 'api_key'", "environment variable"],
            id="key-in-file",
        ),
        pytest.param(
            "[[endpoint]]\nname='a'\nbase_url='http://127.0.0.1:1/v1'\nmodel='m'\n"
            "api_key_env='RIG_UNSET_VAR'\n",
            ["RIG_UNSET_VAR", "not set"],
            id="missing-env",
        ),
        pytest.param(
            "[[endpoint]]\nname='a'\nbase_url='ftp://x'\nmodel='m'\n", ["base_url"], id="bad-url"
        ),
        pytest.param(
            "[[endpoint]]\nname='a'\nbase_url='localhost:8000/v1'\nmodel='m'\n",
            ["endpoint 1: base_url: add a scheme: http://localhost:8000/v1"],
            id="no-scheme",
        ),
        pytest.param(
            "[[endpoint]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\n"
            "[[endpoint]]\nname='a'\nbase_url='http://h/v1'\nmodel='n'\n",
            ["duplicate name 'a'"],
            id="duplicate",
        ),
    ],
)
def test_compare_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, parts: list[str]
) -> None:
    path = tmp_path / "endpoints.toml"
    path.write_text(text)
    ran = cli(capsys, "compare", str(path))
    assert_one_line_error(ran, 2, *parts)
    assert "sk-in-file" not in ran.stderr
    assert_one_line_error(cli(capsys, "compare", str(tmp_path / "nope.toml")), 2, "nope.toml")


# --- doctor, models ------------------------------------------------------------------------


def test_doctor(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    args = ("doctor", "--base-url", demo.base_url, "--model", "hermes-text-tools")
    ran = cli(capsys, *args)
    assert ran.returncode == 1, ran.stderr  # every call written as text: not ok
    assert ran.stdout.startswith("hermes-text-tools: server ")
    assert re.search(r"^  text_tool_calls\s+tool-call-tag$", ran.stdout, re.M)
    assert "fix: " in ran.stdout
    # "auto" gets no tool call either: no advice to rely on it.
    assert re.search(r"^  tool_choice_auto\s+text$", ran.stdout, re.M)
    assert "keep tool_choice" not in ran.stdout
    report = json.loads(cli(capsys, *args, "--json", "--no-stream").stdout)
    assert report["model"] == "hermes-text-tools"
    checks = {c["name"]: c["verdict"] for c in report["checks"]}
    assert list(checks) == list(CHECKS)
    assert checks["stream_parity"] == "not checked"


def test_models(capsys: pytest.CaptureFixture[str], demo: DemoServer) -> None:
    ran = cli(capsys, "models", "--base-url", demo.origin)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert re.fullmatch(r"id\s+owned_by", lines[0])
    listed = httpx.get(f"{demo.base_url}/models", timeout=10).json()["data"]
    assert [m["id"] for m in listed] == demo.models
    assert [line.split() for line in lines[1:]] == [[m["id"], m["owned_by"]] for m in listed]
