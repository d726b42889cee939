"""A second vLLM configuration: no tool parser (the tier's flags without
`--enable-auto-tool-choice --tool-call-parser hermes`), seen from its start.

While vLLM loads (about a minute here) its port refuses connections: rig_nb fails at once with
kind `connect`, it does not wait for the server. Once up, this vLLM refuses tool_choice "auto"
and "required" with a 400 naming the flags, so a 200 to "auto" (the tier's server) means the
flags are set. The file sorts first so that this server has come and gone before the tier's
own one starts (two at once hold about 7.5 GB).
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import forced as F
from llama_servers import free_port
from vllm_server import MODEL, READY_DEADLINE_S, SERVER_ARGS, VllmServer, start, stop

from rig_nb import BackendError, Client, RunRequest
from rig_nb.capabilities.doctor import tool_choice_verdict

TOOL_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
BARE_ARGS = tuple(a for a in SERVER_ARGS if a not in TOOL_FLAGS)
# Bounds the wait for the server's first log line (it writes one within seconds).
FIRST_LINE_S = 60.0


def _refused(base_url: str, tool_choice: str) -> BackendError:
    with Client(base_url, timeout=60) as client:
        request = RunRequest(
            MODEL, 8, prompt=F.WEATHER_PROMPT, tools=[F.weather_tool()], tool_choice=tool_choice
        )
        exc = client.run_trace(request).exception
    assert isinstance(exc, BackendError)
    return exc


def test_a_loading_vllm_is_kind_connect_and_a_bare_one_refuses_tool_choice(
    vllm_model_dir: Path, vllm_logs: Path
) -> None:
    port = free_port()
    log = vllm_logs / "bare.log"
    started: list[tuple[subprocess.Popen[bytes], VllmServer]] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            started.append(start(vllm_model_dir, vllm_logs, "bare", args=BARE_ARGS, port=port))
        except BaseException as exc:  # raised again below, in the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + FIRST_LINE_S
    while thread.is_alive() and not (log.exists() and log.stat().st_size):
        assert time.monotonic() < deadline, "vLLM wrote no log line"
        thread.join(0.1)
    with Client(f"http://127.0.0.1:{port}/v1", timeout=60) as client:
        began = time.monotonic()
        exc = client.run_trace(RunRequest(MODEL, 8, prompt="Hi")).exception
        took = time.monotonic() - began
    loading = thread.is_alive()
    thread.join(READY_DEADLINE_S + 30)
    if failed:
        raise failed[0]
    [(proc, server)] = started
    try:
        assert loading, "vLLM was up before the request: nothing seen of its loading"
        assert isinstance(exc, BackendError) and exc.kind == "connect", exc
        assert took < 15, took
        auto = _refused(server.base_url, "auto")
        assert (auto.kind, auto.status_code) == ("http", 400)
        assert (
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
            "to be set" in auto.message
        )
        required = _refused(server.base_url, "required")
        assert (required.kind, required.status_code) == ("http", 400)
        assert 'tool_choice="required" requires --tool-call-parser to be set' in required.message
        with Client(server.base_url, timeout=60) as client:
            assert tool_choice_verdict(client, MODEL, "auto") == "error 400"
    finally:
        stop(proc)
