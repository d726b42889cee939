"""A second vLLM configuration: no tool parser (the tier's flags without
`--enable-auto-tool-choice --tool-call-parser hermes`), seen from its start to its engine's
death.

While vLLM loads (about a minute here) its port refuses connections: rig_nb fails at once with
kind `connect`, it does not wait for the server. Once up, this vLLM refuses tool_choice "auto"
and "required" with a 400 naming the flags, so a 200 to "auto" (the tier's server) means the
flags are set. Then its engine core is killed under a streamed reply: the stream's last event
is `{"error": {"message": "EngineCore encountered an issue. ...", "code": 500}}`, the API
server exits by itself, and the next request is refused. The file sorts first so that this
server has come and gone before the tier's own one starts (two at once hold about 7.5 GB).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import forced as F
from llama_servers import free_port
from vllm_server import (
    MODEL,
    READY_DEADLINE_S,
    SERVER_ARGS,
    VllmServer,
    engine_core_pid,
    start,
    stop,
)

from rig_nb import BackendError, Client, RunRequest, Trace
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


def test_a_bare_vllm_loading_refusing_tool_choice_and_losing_its_engine(
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
        _engine_dies_under_a_stream(proc, server)
    finally:
        stop(proc)


def _engine_dies_under_a_stream(proc: subprocess.Popen[bytes], server: VllmServer) -> None:
    growing = threading.Event()
    trace = Trace()
    trace.add_listener(
        lambda t: growing.set() if t.iterations and t.iterations[-1].raw_content else None
    )
    # ignore_eos: the reply runs to its budget, so it is still streaming when the engine dies.
    request = RunRequest(
        MODEL, 200, prompt="Tell me a story.", stream=True, extra_body={"ignore_eos": True}
    )

    def story() -> None:
        with Client(server.base_url, timeout=120) as client:
            client.run_trace(request, trace=trace)

    thread = threading.Thread(target=story, daemon=True)
    thread.start()
    assert growing.wait(120), "no text arrived"
    os.kill(engine_core_pid(proc.pid), signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive(), "the run did not end after the engine died"
    exc = trace.exception
    assert isinstance(exc, BackendError), trace.error
    # The in-stream error event's code is an HTTP status: read as that status, as the same
    # refusal before the stream starts would be; the text before it is kept.
    assert (exc.kind, exc.status_code) == ("http", 500)
    assert "EngineCore encountered an issue" in exc.message
    [it] = trace.iterations
    assert it.ending == "error" and it.raw_content
    # The API server exits by itself; then nothing listens.
    assert proc.wait(timeout=60) is not None
    with Client(server.base_url, timeout=60) as client:
        after = client.run_trace(RunRequest(MODEL, 4, prompt="Hi")).exception
    assert isinstance(after, BackendError) and after.kind == "connect"
