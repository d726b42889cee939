"""The command line: `python -m rig_nb` start-up, help, usage errors, keys, serve-demo.

Commands run in process (`cli`: `main(argv)`, output captured) where the process
does not matter, and as subprocesses (`rig`) where it does: start-up imports, the
environment a key comes from, the console script, signals. Every endpoint is a real
server on 127.0.0.1. The helpers live in cli_helpers.py.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from cli_helpers import KEY, Ran, assert_one_line_error, child_env, cli, rig  # noqa: F401
from loopback import free_port

from rig_nb.cli import build_parser
from rig_nb.cli.hints import install_hint
from rig_nb.cli.text import plural
from rig_nb.demo import DemoServer

# --- start-up, help, usage errors ---------------------------------------------------------

_NO_SDK = """
import sys
from rig_nb.cli import main
for argv in {argvs!r}:
    try:
        main(argv)
    except SystemExit:
        pass
    assert "openai" not in sys.modules, argv
    assert "rig_nb.client" not in sys.modules, argv
import rig_nb.client  # the check above can fail: importing the client does import openai
assert "openai" in sys.modules
print("ok")
"""


@pytest.mark.slow
def test_help_and_usage_errors_do_not_import_the_sdk() -> None:
    argvs = [
        ["--help"],
        ["probe", "--help"],
        ["compare", "--help"],
        ["probe", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--timeout", "-1"],
        ["serve-demo", "--port", "99999"],
        ["run", "--model", "m"],
        ["no-such-command"],
    ]
    proc = subprocess.run(
        [sys.executable, "-c", _NO_SDK.format(argvs=argvs)],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("ok\n")


# How in-process tests are named: pytest, not the rig-nb console script, started them.
PROG = "python -m rig_nb"


def _subparsers(prog: str = PROG) -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(prog)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


COMMAND_NAMES = ["demo", "probe", "run", "compare", "bfcl", "doctor", "models", "serve-demo"]


def test_the_commands() -> None:
    assert list(_subparsers()) == COMMAND_NAMES


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_help_documents_every_option_and_its_default(command: str) -> None:
    sub = _subparsers()[command]
    text = " ".join(sub.format_help().split())
    for action in sub._actions:
        if not action.option_strings or action.dest == "help":
            continue
        assert action.help, action.option_strings
        if action.required or action.default in (None, False):
            continue
        shown = "none" if action.default in ("", {}) else str(action.default)
        assert f"(default: {shown})" in text, action.option_strings
    if any("--model" in a.option_strings for a in sub._actions) or command == "models":
        assert "/v1/models" in text and f"{PROG} models" in text


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    ran = cli(capsys, command, "--help")
    assert ran.returncode == 0
    assert ran.stdout.startswith(f"usage: {PROG} {command}")


@pytest.mark.slow
def test_console_script_and_no_command() -> None:
    script = Path(sys.executable).with_name("rig-nb")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("rig_nb ")
    proc = rig()
    assert proc.returncode == 2 and "usage: python -m rig_nb" in proc.stderr


@pytest.mark.slow
def test_help_and_hints_name_the_command_as_it_was_started(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = Path(sys.executable).with_name("rig-nb")
    for argv, prog in (([str(script)], "rig-nb"), ([sys.executable, "-m", "rig_nb"], PROG)):
        proc = subprocess.run(
            [*argv, "probe", "--help"], capture_output=True, text=True, timeout=60, env=child_env()
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage: {prog} probe ")
        text = " ".join(proc.stdout.split())
        assert f"({prog} models --base-url URL lists them)" in text
        assert ("rig-nb models" in text) == (prog == "rig-nb")
    monkeypatch.setattr(sys, "argv", ["/somewhere/bin/rig-nb"])
    ran = cli(capsys, "probe", "--model", "m")
    assert_one_line_error(ran, 2, "--base-url", "(see rig-nb probe --help)")
    monkeypatch.setattr(sys, "argv", ["/somewhere/rig_nb/__main__.py"])
    ran = cli(capsys, "probe", "--model", "m")
    assert_one_line_error(ran, 2, "--base-url", "(see python -m rig_nb probe --help)")


def test_install_hints_fit_a_source_checkout(tmp_path: Path) -> None:
    checkout = tmp_path / "clone"
    (checkout / "rig_nb").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'rig_nb'\n")
    package = checkout / "rig_nb"
    assert install_hint("notebook", package, checkout) == "pip install -e '.[notebook]'"
    assert install_hint("notebook", package, tmp_path) == f"pip install -e '{checkout}[notebook]'"
    installed = tmp_path / "site-packages" / "rig_nb"
    installed.mkdir(parents=True)
    assert install_hint("notebook", installed, tmp_path) == "pip install 'rig_nb[notebook]'"


@pytest.mark.slow
def test_compare_without_pandas_names_the_install_for_this_checkout(tmp_path: Path) -> None:
    toml = tmp_path / "endpoints.toml"
    toml.write_text("[[endpoint]]\nname='a'\nbase_url='http://127.0.0.1:1/v1'\nmodel='m'\n")
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "from rig_nb.cli import main\n"
        f"sys.exit(main(['compare', {str(toml)!r}]))\n"
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env=child_env(), cwd=root,
    )  # fmt: skip
    assert_one_line_error(proc, 1, "compare needs pandas: pip install -e '.[notebook]'")


PROBE = ("probe", "--base-url", "http://127.0.0.1:1/v1", "--model", "m")
RUN = ("run", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--prompt", "hi")


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        pytest.param(
            [*PROBE, "--timeout", "-1"], ["--timeout", "positive number"], id="timeout-neg"
        ),
        pytest.param([*PROBE, "--timeout", "0"], ["--timeout", "positive number"], id="timeout-0"),
        pytest.param([*PROBE, "--deadline", "nan"], ["--deadline", "'nan'"], id="deadline-nan"),
        pytest.param([*PROBE, "--deadline", "inf"], ["--deadline", "'inf'"], id="deadline-inf"),
        pytest.param(["serve-demo", "--port", "99999"], ["--port", "0 to 65535"], id="port-high"),
        pytest.param(["serve-demo", "--port", "-1"], ["--port", "0 to 65535"], id="port-neg"),
        pytest.param([*RUN, "--max-tokens", "0"], ["positive integer"], id="max-tokens-0"),
        pytest.param([*RUN, "--extra-body", "[1]"], ["--extra-body", "JSON object"], id="list"),
        pytest.param([*RUN, "--extra-body", "{x"], ["--extra-body", "not JSON"], id="not-json"),
        pytest.param([*RUN, "--extra-body", '{"a": NaN}'], ["not JSON"], id="nan-in-json"),
        pytest.param(
            [*RUN, "--extra-body", '{"stream": true, "grammar": "x"}'],
            ["--extra-body", "stream", "the loop sets"],
            id="owned-field",
        ),
        pytest.param(["compare", "x.toml", "--repeats", "0"], ["--repeats"], id="repeats-0"),
        pytest.param(["probe", "--model", "m"], ["required", "--base-url"], id="missing"),
    ],
)
def test_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], parts: list[str]
) -> None:
    ran = cli(capsys, *argv)
    assert_one_line_error(ran, 2, "--help", *parts)
    assert not re.search(r"ValueError|OverflowError", ran.stderr)


@pytest.mark.slow
def test_a_key_is_never_read_from_argv(demo: DemoServer) -> None:
    args = ("probe", "--base-url", demo.base_url, "--model", "well-behaved")
    argv_key = rig(*args, "--api-key", KEY)
    assert_one_line_error(
        argv_key, 2, "unrecognized arguments: --api-key (and 1 values, not shown)"
    )
    assert_one_line_error(rig(*args, "--api-key-env", KEY), 2, "not a key")
    for proc in (argv_key, rig(*args, f"--api-key={KEY}"), rig(*args, "--api-key-env", KEY)):
        assert KEY not in proc.stdout + proc.stderr


@pytest.mark.slow
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


# --- serve-demo ------------------------------------------------------------------------------

# What a shell does for `cmd &`: SIGINT ignored, then exec. Python keeps SIG_IGN on entry.
_BACKGROUND = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def start(*args: str, background: bool = False) -> subprocess.Popen[str]:
    prefix = [sys.executable, "-c", _BACKGROUND] if background else []
    return subprocess.Popen(
        [*prefix, sys.executable, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
        start_new_session=background,
    )  # fmt: skip


@pytest.mark.slow
def test_a_background_start_ignores_sigint_on_entry() -> None:
    code = "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
    proc = start("-c", code, background=True)
    try:
        assert proc.communicate(timeout=30)[0] == "True\n"
    finally:
        proc.kill()


def read_start(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The base URL and models line serve-demo prints once it serves."""
    assert proc.stdout is not None
    # Line by line up to the last startup line: communicate() would skip what readline() buffered.
    lines = [proc.stdout.readline() for _ in range(3)]
    match = re.fullmatch(r"demo endpoint: (http://127\.0\.0\.1:\d+/v1)\n", lines[0])
    assert match is not None and lines[2] == "serving until Ctrl-C or SIGTERM\n", lines
    return match.group(1), lines[1]


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_demo_stops_on_a_signal(background: bool, sig: signal.Signals) -> None:
    proc = start("-m", "rig_nb", "serve-demo", "--port", "0", background=background)
    try:
        url, models = read_start(proc)
        assert models.startswith("models: well-behaved, qwen3-no-parser,")
        listing = httpx.get(f"{url}/models", timeout=10).json()
        assert [m["id"] for m in listing["data"]][:2] == ["well-behaved", "qwen3-no-parser"]
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0
        out, err = proc.communicate(timeout=10)
        assert (out, err) == ("demo endpoint stopped\n", "")
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.slow
def test_serve_demo_port() -> None:
    port = free_port()
    proc = start("-m", "rig_nb", "serve-demo", "--port", str(port))
    try:
        assert read_start(proc)[0] == f"http://127.0.0.1:{port}/v1"
        busy = rig("serve-demo", "--port", str(port))
        assert_one_line_error(busy, 1, f"cannot listen on 127.0.0.1:{port}")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize(
    ("count", "word", "text"),
    [
        pytest.param(0, "tool call", "0 tool calls", id="zero"),
        pytest.param(1, "tool call", "1 tool call", id="one-call"),
        pytest.param(1, "iteration", "1 iteration", id="one-iteration"),
        pytest.param(2, "persona", "2 personas", id="two"),
        pytest.param(1, "run", "1 run", id="one-run"),
    ],
)
def test_plural(count: int, word: str, text: str) -> None:
    assert plural(count, word) == text
