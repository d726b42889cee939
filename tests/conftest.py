"""Fixtures and helpers shared by the whole suite: servers on loopback, a clean environment."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import TLSServer

from rig_nb import Client
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer

# Variables the openai SDK, httpx or ssl would read: no test depends on the shell it ran from.
_AMBIENT_PREFIXES = ("OPENAI_",)
_AMBIENT = ("NETRC", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
# The terminal's size: tables fit it, and the shell pytest runs in must not cut what a test sees.
_TERMINAL = ("COLUMNS", "LINES")


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_AMBIENT_PREFIXES) or name.upper() in _AMBIENT or name in _TERMINAL:
            monkeypatch.delenv(name)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(scope="session")
def demo() -> Iterator[DemoServer]:
    """One demo endpoint for the session; streams are sent unpaced (no delay per delta)."""
    with DemoServer(stream_first_delay=0, stream_interval=0) as srv:
        yield srv


@pytest.fixture(scope="session")
def demo_client(demo: DemoServer) -> Iterator[Client]:
    with Client(demo.base_url) as client:
        yield client


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]
        + ["-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_server(tls_cert: tuple[Path, Path]) -> Iterator[TLSServer]:
    srv = TLSServer(*tls_cert)
    try:
        yield srv
    finally:
        srv.close()
