"""Real llama.cpp servers with SmolLM2-135M on loopback, shared by the whole session.

From llama-cpp-python (`python -m llama_cpp.server`): one server speaks
chatml-function-calling (real tool calls with tool_choice "auto"), the other plain chatml
(never calls tools). From llama.cpp's own C++ `llama-server`: four under a Qwen3-Thinking-style
template (reasoning formats deepseek / none / skipped parsing, and none with a reasoning
budget), one under the Hermes-2-Pro tool template, and a LiteLLM proxy in front of the four
think servers. Each starts on a random free port the first time a test asks for it and is
stopped by PID at the end of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server_procs import (
    LiteLLMProxy,
    Proc,
    ServerEnv,
    litellm_proxy,
    llama_server,
    server_environment,
)
from llama_servers import TIMEOUT_S, LlamaServer, environment, serving

from rig_nb import Client

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/real is in the `real` tier (`pytest -m real` selects it)."""
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.real)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    return environment()


@pytest.fixture(scope="session")
def fc_server(
    smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """The chatml-function-calling server: makes real tool calls with tool_choice "auto"."""
    with serving(smollm2_gguf, "chatml-function-calling", tmp_path_factory.mktemp("llama")) as s:
        yield s


@pytest.fixture(scope="session")
def chatml_server(
    smollm2_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """The plain chatml server: never calls tools."""
    with serving(smollm2_gguf, "chatml", tmp_path_factory.mktemp("llama")) as s:
        yield s


@pytest.fixture
def fc_client(fc_server: LlamaServer) -> Iterator[Client]:
    with Client(fc_server.base_url, timeout=TIMEOUT_S) as client:
        yield client


@pytest.fixture
def chatml_client(chatml_server: LlamaServer) -> Iterator[Client]:
    with Client(chatml_server.base_url, timeout=TIMEOUT_S) as client:
        yield client


# llama.cpp's own llama-server and a LiteLLM proxy (tests/real/llama_server_procs.py). The first
# use builds llama-server and installs LiteLLM through scripts/setup-llama-server (5-8 minutes
# once; then it returns at once).


@pytest.fixture(scope="session")
def server_env() -> ServerEnv:
    return server_environment()


@pytest.fixture(scope="session")
def llama_server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llama-server")


@pytest.fixture(scope="session")
def think_deepseek_server(server_env: ServerEnv, llama_server_logs: Path) -> Iterator[Proc]:
    """Qwen3-Thinking-style template, --reasoning-format deepseek: reasoning_content split off."""
    with llama_server(server_env, "think-deepseek", llama_server_logs) as s:
        yield s


@pytest.fixture(scope="session")
def think_none_server(server_env: ServerEnv, llama_server_logs: Path) -> Iterator[Proc]:
    """The same template, --reasoning-format none: thoughts left in content."""
    with llama_server(server_env, "think-none", llama_server_logs) as s:
        yield s


@pytest.fixture(scope="session")
def think_skip_server(server_env: ServerEnv, llama_server_logs: Path) -> Iterator[Proc]:
    """The same template, --skip-chat-parsing: the model's text verbatim in content."""
    with llama_server(server_env, "think-skip", llama_server_logs) as s:
        yield s


@pytest.fixture(scope="session")
def think_none_budget_server(server_env: ServerEnv, llama_server_logs: Path) -> Iterator[Proc]:
    """`none` plus --reasoning-budget 4: unforced replies close the think block (no grammar)."""
    with llama_server(server_env, "think-none-budget", llama_server_logs) as s:
        yield s


@pytest.fixture(scope="session")
def hermes_tools_server(server_env: ServerEnv, llama_server_logs: Path) -> Iterator[Proc]:
    """llama.cpp's Hermes-2-Pro tool-use template: real tool_calls with a `<tool_call>` prefill."""
    with llama_server(server_env, "hermes-tools", llama_server_logs) as s:
        yield s


@pytest.fixture(scope="session")
def litellm_server(
    server_env: ServerEnv,
    think_deepseek_server: Proc,
    think_none_server: Proc,
    think_skip_server: Proc,
    think_none_budget_server: Proc,
    llama_server_logs: Path,
) -> Iterator[LiteLLMProxy]:
    """One LiteLLM proxy in front of the four think servers: `.models[upstream name]` is the
    model name to send it, `.headers` the Bearer master key (`.api_key` the key itself)."""
    upstreams = [think_deepseek_server, think_none_server, think_skip_server]
    upstreams.append(think_none_budget_server)
    with litellm_proxy(server_env, upstreams, llama_server_logs) as proxy:
        yield proxy
