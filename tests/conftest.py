"""Fixtures and helpers shared by the whole suite: servers on loopback, a clean environment."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rig_nb import Client
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer

# Variables the openai SDK, httpx or ssl would read: no test depends on the shell it ran from.
_AMBIENT_PREFIXES = ("OPENAI_",)
_AMBIENT = ("NETRC", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_AMBIENT_PREFIXES) or name.upper() in _AMBIENT:
            monkeypatch.delenv(name)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


class TLSServer:
    """A TLS listener on 127.0.0.1 with a self-signed certificate that answers nothing over HTTP.

    Enough to see what a client does when it speaks plain http to an https port, or
    completes a handshake with a server it does not trust.
    """

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(65536)
            except (OSError, ssl.SSLError):
                pass
            finally:
                conn.close()

    def close(self) -> None:
        # shutdown wakes the accept() blocked in the serving thread; close alone does not.
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(timeout=10)


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
