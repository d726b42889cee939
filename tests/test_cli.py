"""The command line, run as a subprocess: `python -m rig_nb demo|probe|run|compare|serve-demo`."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rig_nb import Trace
from rig_nb.__main__ import main
from rig_nb.compare import COLUMNS, DEFAULT_SCENARIOS
from rig_nb.demo import DEMO_PROMPT, DemoServer

KEY = "sk-test-0123456789abcdef"
DEMO_ROWS = [
    ("well-behaved", "tool call", "ok"),
    ("qwen3-no-parser", "tool call", "ok"),
    ("r1-json-sketch", "tool call", "ok"),
    ("budget-think", "OutputLimitError", "OutputLimitError"),
    ("reasoning-field", "tool call", "ok"),
    ("ollama-reasoning", "tool call", "ok"),
    ("hermes-text-tools", "NoToolCallingError", "ok"),
    ("tool-spinner", "tool call", "IterationLimitError"),
    ("html-injector", "tool call", "ok"),
    ("smollm2-chatml-recorded", "NoToolCallingError", "ok"),
    ("smollm2-recorded", "tool call", "IterationLimitError"),
]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(extra)
    return env


def rig(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rig_nb", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(**env),
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], status: int, *parts: str) -> None:
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("rig-nb: ") and proc.stderr.count("\n") == 1, proc.stderr
    for part in parts:
        assert part in proc.stderr


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer() as server:
        yield server


def check_demo_output(out: str) -> None:
    assert out.startswith(
        f"rig_nb demo: {len(DEMO_ROWS)} personas on the embedded endpoint http://127.0.0.1:"
    )
    assert re.search(r"^persona\s+probe\s+outcome\s+shapes\s+iters\s+calls", out, re.M)
    for persona, verdict, outcome in DEMO_ROWS:
        pattern = rf"^{re.escape(persona)}\s+{verdict}\s+{outcome}\s"
        assert re.search(pattern, out, re.M), persona
    assert re.search(r"^tool-spinner\s.*\s8\s+8\s", out, re.M)
    assert "Per-iteration trace of qwen3-no-parser" in out
    assert "    raw: Okay, the user asks" in out
    assert "    stripped: Here is what I found. Lisbon: 21 C" in out


def test_demo_prints_the_table() -> None:
    proc = rig("demo")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    check_demo_output(proc.stdout)


def test_demo_without_pandas_prints_a_plain_table() -> None:
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "from rig_nb.__main__ import main\n"
        "sys.exit(main(['demo']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert proc.returncode == 0, proc.stderr
    check_demo_output(proc.stdout)


@pytest.mark.parametrize("command", ["demo", "probe", "run", "compare", "serve-demo"])
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    # In process: argparse's help is the same text either way, and a process costs seconds.
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: rig-nb {command}")


def test_console_script_and_no_command() -> None:
    script = Path(sys.executable).with_name("rig-nb")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("rig_nb ")
    proc = rig()
    assert proc.returncode == 2 and "usage: rig-nb" in proc.stderr


def test_probe_yes(demo: DemoServer) -> None:
    proc = rig("probe", "--base-url", demo.base_url, "--model", "well-behaved")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tool calling: yes (well-behaved at 127.0.0.1:")
    bare = rig("probe", "--base-url", demo.origin, "--model", "qwen3-no-parser")
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
def test_probe_no(demo: DemoServer, model: str, tool_choice: str, verdict: str) -> None:
    proc = rig("probe", "--base-url", demo.base_url, "--model", model, "--tool-choice", tool_choice)
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"tool calling: no ({verdict}: ")
    assert proc.stderr == ""


def test_probe_sends_the_key_from_the_named_variable_only() -> None:
    with DemoServer() as server:
        args = ("probe", "--base-url", server.base_url, "--model", "well-behaved")
        proc = rig(*args, "--api-key-env", "RIG_TEST_KEY", RIG_TEST_KEY=KEY, OPENAI_API_KEY="amb")
        assert proc.returncode == 0, proc.stderr
        assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
        assert KEY not in proc.stdout + proc.stderr
        proc = rig(*args, OPENAI_API_KEY="ambient")
        assert proc.returncode == 0
        assert "authorization" not in server.requests[-1].headers
    argv_key = rig(*args, "--api-key", KEY)
    assert argv_key.returncode == 2
    assert "unrecognized arguments: --api-key (and 1 values, not shown)" in argv_key.stderr
    assert_one_line_error(rig(*args, "--api-key-env", KEY), 2, "not a key")
    for proc in (argv_key, rig(*args, f"--api-key={KEY}")):
        assert KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("extra", "status", "parts"),
    [
        pytest.param(
            ["--model", "gpt-nope"], 1, ["ai backend: HTTP 404", "not found"], id="unknown-model"
        ),
        pytest.param(
            ["--model", "tool-spinner", "--tool-choice", "required"],
            1,
            ["HTTP 500"],
            id="required-500",
        ),
        pytest.param(
            ["--model", "well-behaved", "--api-key-env", "RIG_UNSET_VAR"],
            2,
            ["RIG_UNSET_VAR", "not set"],
            id="missing-env",
        ),
    ],
)
def test_probe_failures(demo: DemoServer, extra: list[str], status: int, parts: list[str]) -> None:
    proc = rig("probe", "--base-url", demo.base_url, *extra)
    assert_one_line_error(proc, status, *parts)
    assert demo.origin not in proc.stderr


def test_probe_unreachable_and_bad_urls() -> None:
    port = closed_port()
    proc = rig("probe", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m")
    assert_one_line_error(proc, 1, "connection failed")
    assert str(port) not in proc.stderr
    for url in ("ftp://example.com", "http://user:pw@127.0.0.1:1/v1"):
        assert_one_line_error(rig("probe", "--base-url", url, "--model", "m"), 2, "--base-url")


def test_run_prints_the_trace(demo: DemoServer) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", "qwen3-no-parser")
    proc = rig(*args, "--prompt", DEMO_PROMPT, "--demo-tools")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("qwen3-no-parser at 127.0.0.1:")
    assert "outcome ok, 3 iterations, 3 tool calls" in out.splitlines()[0]
    assert out.count("shape=unopened") == 3
    assert 'call get_weather {"city": "Lisbon"} -> Lisbon: 21 C, clear sky' in out
    assert out.rstrip().endswith("add(21, 4) gives 25.")
    plain = rig(*args, "--prompt", "What is the capital of France?", "--system", "Be brief.")
    assert plain.returncode == 0
    assert "stripped: The capital of France is Paris." in plain.stdout


def test_run_json_is_a_trace(demo: DemoServer) -> None:
    args = ("run", "--base-url", demo.base_url, "--model", "r1-json-sketch", "--json")
    proc = rig(*args, "--prompt", DEMO_PROMPT, "--demo-tools", "--max-tokens", "300")
    assert proc.returncode == 0, proc.stderr
    trace = Trace.from_json(proc.stdout)
    assert trace.outcome == "ok" and trace.model == "r1-json-sketch"
    assert len(trace.iterations) == 3
    assert trace.settings["max_tokens"] == 300
    assert trace.settings["tools"] == ["get_weather", "add"]


def test_run_failure_prints_the_partial_trace(demo: DemoServer) -> None:
    args = ("run", "--base-url", demo.base_url, "--prompt", DEMO_PROMPT, "--demo-tools")
    proc = rig(*args, "--model", "budget-think", "--max-tokens", "100")
    assert_one_line_error(proc, 1, "OutputLimitError")
    assert "finish=length  shape=unclosed" in proc.stdout
    spin = rig(*args, "--model", "tool-spinner", "--max-iterations", "5", "--json")
    assert_one_line_error(spin, 1, "IterationLimitError")
    trace = Trace.from_json(spin.stdout)
    assert trace.outcome == "IterationLimitError"
    assert len(trace.iterations) == 5


def test_run_bad_input() -> None:
    port = closed_port()
    base = ("run", "--model", "m", "--prompt", "hi")
    proc = rig(*base, "--base-url", f"http://127.0.0.1:{port}/v1")
    assert_one_line_error(proc, 1, "connection failed")
    assert proc.stdout == ""
    zero = rig(*base, "--base-url", "http://127.0.0.1:1/v1", "--max-tokens", "0")
    assert zero.returncode == 2 and "positive integer" in zero.stderr


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "endpoints.toml"
    path.write_text(text)
    return str(path)


def test_compare(demo: DemoServer, tmp_path: Path) -> None:
    toml = write(
        tmp_path,
        f"""
[[endpoint]]
name = "clean"
base_url = "{demo.base_url}"
model = "well-behaved"
api_key_env = "RIG_TEST_KEY"

[[endpoint]]
name = "hermes"
base_url = "{demo.base_url}"
model = "hermes-text-tools"
""",
    )
    out_csv = tmp_path / "out.csv"
    proc = rig("compare", toml, "--csv", str(out_csv), RIG_TEST_KEY=KEY)
    assert proc.returncode == 0, proc.stderr
    scenarios = len(DEFAULT_SCENARIOS)
    assert proc.stderr == f"wrote {2 * scenarios} rows to {out_csv}\n"
    assert re.search(
        r"^\s*hermes\s+hermes-text-tools\s+probe\s+NoToolCallingError", proc.stdout, re.M
    )
    with out_csv.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == COLUMNS
    assert [r["endpoint"] for r in rows] == ["clean"] * scenarios + ["hermes"] * scenarios
    assert rows[0]["outcome"] == "ok"
    assert KEY not in proc.stdout + out_csv.read_text()
    assert f"Bearer {KEY}" in [r.headers.get("authorization") for r in demo.requests]
    as_json = json.loads(rig("compare", toml, "--json", RIG_TEST_KEY=KEY).stdout)
    assert [r["scenario"] for r in as_json[:scenarios]] == [s.name for s in DEFAULT_SCENARIOS]


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
            "[[endpoint]]\nname='a'\nbase_url='ftp://x'\nmodel='m'\n",
            ["base_url"],
            id="bad-url",
        ),
        pytest.param(
            "[[endpoint]]\nname='a'\nbase_url='http://h/v1'\nmodel='m'\n"
            "[[endpoint]]\nname='a'\nbase_url='http://h/v1'\nmodel='n'\n",
            ["duplicate name 'a'"],
            id="duplicate",
        ),
    ],
)
def test_compare_bad_input(tmp_path: Path, text: str, parts: list[str]) -> None:
    proc = rig("compare", write(tmp_path, text))
    assert_one_line_error(proc, 2, *parts)
    assert "sk-in-file" not in proc.stderr


def test_compare_missing_file(tmp_path: Path) -> None:
    assert_one_line_error(rig("compare", str(tmp_path / "nope.toml")), 2, "nope.toml")


def start_serve_demo(*args: str) -> tuple[subprocess.Popen[str], str, str]:
    """Start serve-demo; its process, base URL and models line, once it says it is serving."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rig_nb", "serve-demo", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None
    # Read line by line up to the last startup line: communicate() would skip what
    # readline() had buffered.
    lines = [proc.stdout.readline() for _ in range(3)]
    match = re.fullmatch(r"demo endpoint: (http://127\.0\.0\.1:\d+/v1)\n", lines[0])
    if match is None or lines[2] != "serving until Ctrl-C\n":
        proc.kill()
        raise AssertionError(f"unexpected start {lines!r}: {proc.communicate()}")
    return proc, match.group(1), lines[1]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_demo_serves_until_signalled(sig: signal.Signals) -> None:
    proc, url, models = start_serve_demo()
    assert models.startswith("models: well-behaved, qwen3-no-parser,")
    try:
        listing = httpx.get(f"{url}/models", timeout=10).json()
        assert [m["id"] for m in listing["data"]][:2] == ["well-behaved", "qwen3-no-parser"]
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert out == "demo endpoint stopped\n"
    assert err == ""


def test_serve_demo_port() -> None:
    port = closed_port()
    proc, url, _ = start_serve_demo("--port", str(port))
    try:
        assert url == f"http://127.0.0.1:{port}/v1"
        busy = rig("serve-demo", "--port", str(port))
        assert_one_line_error(busy, 1, f"cannot listen on 127.0.0.1:{port}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
