"""Two real llama.cpp servers with SmolLM2-135M on loopback, shared by the whole session.

One server speaks chatml-function-calling (real tool calls with tool_choice
"auto"), the other plain chatml (never calls tools). Both start on random free
ports once per session and are stopped by PID at its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_servers import TIMEOUT_S, LlamaServer, environment, serving

from rig_nb import Client


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
