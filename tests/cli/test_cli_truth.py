"""The command line says no more than is true: outcomes, the doctor on a server that is not
OpenAI-compatible, advice that agrees with the verdicts, hints that name a change, no key.

Every endpoint is a real server on 127.0.0.1: the demo, scripted servers, and the standard
library's own `http.server` (it answers every POST with 501).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_one_line_error, cli

from rig_nb.testing import RecordedRequest, Response, ScriptedServer, chat_reply, tool_call

# 60 characters; an echo of any 8 of them in a row counts as a leak.
LONG_KEY = "sk-live-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQR"[:52]


def leaked(text: str, key: str = LONG_KEY, run: int = 8) -> list[str]:
    return [key[n : n + run] for n in range(len(key) - run + 1) if key[n : n + run] in text]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def static_server(tmp_path: Path) -> Iterator[str]:
    """`python -m http.server` on 127.0.0.1: no /v1/models (404), every POST a 501."""

    def handler(*args: Any, **kwargs: Any) -> _Quiet:
        return _Quiet(*args, directory=str(tmp_path), **kwargs)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()


# --- redaction runs before any cut -----------------------------------------------------------


def echoing(request: RecordedRequest) -> Response | dict[str, Any]:
    """Echoes the key in the content, the reasoning field and an error body, at offsets where
    the doctor's cuts (80, 60 and 160 characters) land inside it."""
    if request.method == "GET":
        return {"data": [{"id": "m", "owned_by": "vllm"}]}
    body = request.json
    if body.get("tool_choice") == "required":
        message = "x" * 100 + f" rejected key {LONG_KEY} for tool_choice required"
        return Response({"error": {"message": message}}, status=400)
    if body.get("tools"):
        return chat_reply("y" * 30 + f" ping? key {LONG_KEY} is what you sent")
    return chat_reply(
        "z" * 40 + f" key {LONG_KEY}",
        reasoning_content="w" * 30 + f" {LONG_KEY} thinking",
    )


def test_doctor_redacts_an_echoed_key_before_it_cuts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(LONG_KEY) == 60
    monkeypatch.setenv("RIG_TEST_KEY", LONG_KEY)
    with ScriptedServer([echoing] * 20) as server:
        args = ("doctor", "--base-url", server.base_url, "--model", "m")
        ran = cli(capsys, *args, "--api-key-env", "RIG_TEST_KEY")
        as_json = cli(capsys, *args, "--api-key-env", "RIG_TEST_KEY", "--json")
    assert ran.returncode == 1, ran.stderr  # "auto" got text: not ok
    assert "[redacted]" in ran.stdout  # the echo was there to be cut
    for out in (ran.stdout, ran.stderr, as_json.stdout, as_json.stderr):
        assert leaked(out) == []


def test_run_redacts_an_echoed_key_in_the_trace_it_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIG_TEST_KEY", LONG_KEY)
    echo = "a" * 1990 + f" {LONG_KEY} " + "b" * 40  # the 2000-character cut lands in the key
    with ScriptedServer([chat_reply(echo, reasoning_content=echo)]) as server:
        args = ("run", "--base-url", server.base_url, "--model", "m", "--prompt", "hi")
        ran = cli(capsys, *args, "--api-key-env", "RIG_TEST_KEY")
    assert ran.returncode == 0, ran.stderr
    assert "more characters)" in ran.stdout  # the text was cut
    assert leaked(ran.stdout + ran.stderr) == []


# --- a server that is not OpenAI-compatible --------------------------------------------------


def test_doctor_on_a_server_that_is_not_openai_compatible(
    capsys: pytest.CaptureFixture[str], static_server: str
) -> None:
    ran = cli(capsys, "doctor", "--base-url", f"{static_server}/v1", "--model", "m")
    assert ran.returncode == 1
    assert ran.stderr == ""
    assert ran.stdout.splitlines() == [
        "m: server unknown",
        "  not_openai_compatible      yes",
        "                             evidence: GET models: HTTP 404; "
        "POST chat/completions: HTTP 501",
        "                             fix: this address does not serve an OpenAI-compatible "
        "API: check the base URL (--base-url; it should end at /v1)",
    ]
    for wrong in ("stream_parity", "leak_dialects", "same", '"auto"'):
        assert wrong not in ran.stdout
    as_json = cli(capsys, "doctor", "--base-url", static_server, "--model", "m", "--json")
    assert as_json.returncode == 1
    assert '"name": "not_openai_compatible"' in as_json.stdout


@pytest.mark.parametrize("path", ["/v1", ""], ids=["v1", "bare"])
def test_models_does_not_offer_the_url_the_user_gave(
    capsys: pytest.CaptureFixture[str], static_server: str, path: str
) -> None:
    ran = cli(capsys, "models", "--base-url", static_server + path)
    port = static_server.rsplit(":", 1)[1]
    assert_one_line_error(ran, 1, f"HTTP 404 from 127.0.0.1:{port}: no models route under /v1")
    assert "(e.g. " not in ran.stderr and "should end at /v1" not in ran.stderr
    other = cli(capsys, "models", "--base-url", static_server + "/api")
    assert_one_line_error(other, 1, f"it should end at /v1 (e.g. {static_server}/v1)")


# --- advice that agrees with the verdicts ------------------------------------------------------


def _no_tool_calls_at_all(request: RecordedRequest) -> Response | dict[str, Any]:
    if request.method == "GET":
        return {"data": [{"id": "m", "owned_by": "vllm"}]}
    if request.json.get("tool_choice") == "required":
        return Response({"error": {"message": "tool_choice required is not supported"}}, 400)
    return chat_reply("I would call ping.")


def test_doctor_never_advises_a_tool_choice_that_fails_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ScriptedServer([_no_tool_calls_at_all] * 20) as server:
        ran = cli(capsys, "doctor", "--base-url", server.base_url, "--model", "m", "--json")
    assert ran.returncode == 1, ran.stderr  # no tool call at all: not ok
    checks = {c["name"]: c for c in json.loads(ran.stdout)["checks"]}
    verdicts = [checks[f"tool_choice_{k}"]["verdict"] for k in ("unset", "auto", "required")]
    assert verdicts == ["text", "text", "error 400"]
    assert "--tool-call-parser" in checks["tool_choice_auto"]["advice"]
    assert checks["tool_choice_unset"]["advice"] == ""
    assert checks["tool_choice_required"]["advice"] == ""
    with ScriptedServer([tool_call_server] * 20) as server:
        ok = cli(capsys, "doctor", "--base-url", server.base_url, "--model", "m")
    assert 'keep tool_choice "auto"' in ok.stdout and 'send "auto"' in ok.stdout


def tool_call_server(request: RecordedRequest) -> Response | dict[str, Any]:
    """Calls tools only when tool_choice is "auto"; rejects "required"."""
    if request.method == "GET":
        return {"data": [{"id": "m", "owned_by": "vllm"}]}
    body = request.json
    if body.get("tool_choice") == "required":
        return Response({"error": {"message": "tool_choice required is not supported"}}, 400)
    if body.get("tool_choice") == "auto":
        return chat_reply(None, tool_calls=[tool_call("ping", {"message": "hi"})])
    return chat_reply("391.")
