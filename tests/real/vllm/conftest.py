"""The vLLM tier: one real vLLM server (CPU build, SmolLM2-135M) shared by the whole session.

The first use runs scripts/setup-vllm (minutes once, then it returns at once) and starts the
server on a free 127.0.0.1 port (about a minute to /health here); it is stopped by PID at the
end of the session. tests/real/conftest.py marks every test here `real`. A test that needs
another configuration starts its own with `vllm_server.serving(model_dir, logs, name, extra)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from vllm_server import TIMEOUT_S, VllmServer, environment, serving

from rig_nb import Client


@pytest.fixture(scope="session")
def vllm_model_dir() -> Path:
    return environment()


@pytest.fixture(scope="session")
def vllm_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm")


@pytest.fixture(scope="session")
def vllm(vllm_model_dir: Path, vllm_logs: Path) -> Iterator[VllmServer]:
    """The tier's server (vllm_server.SERVER_ARGS)."""
    with serving(vllm_model_dir, vllm_logs) as server:
        print(f"vLLM answered /health {server.started_s:.0f} s after its start")
        yield server


@pytest.fixture
def client(vllm: VllmServer) -> Iterator[Client]:
    with Client(vllm.base_url, timeout=TIMEOUT_S) as c:
        yield c
