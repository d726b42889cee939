"""Fixtures and helpers shared by the whole suite: servers on loopback, a clean environment."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from loopback import TLSServer
from runs import LoopRunner

from rig_nb import Client
from rig_nb.demo import DemoServer
from rig_nb.testing import ScriptedServer

if TYPE_CHECKING:
    import pandas as pd

TESTS = Path(__file__).resolve().parent

# Variables the openai SDK, httpx or ssl would read: no test depends on the shell it ran from.
_AMBIENT_PREFIXES = ("OPENAI_",)
_AMBIENT = ("NETRC", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
# The terminal's size: tables fit it, and the shell pytest runs in must not cut what a test sees.
_TERMINAL = ("COLUMNS", "LINES")


def _selects_browser(config: pytest.Config) -> bool:
    """Whether `-m` can select a test of the browser tier (every test in tests/browser is
    marked browser; some also slow)."""
    from _pytest.mark.expression import Expression

    markexpr = config.getoption("markexpr")
    if not markexpr:
        return True
    expr = Expression.compile(markexpr)
    return expr.evaluate(lambda name, **_: name == "browser") or expr.evaluate(
        lambda name, **_: name in ("browser", "slow")
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/browser is not collected when `-m` deselects the browser tier: its modules import
    playwright (the `browser` extra), which the fast tier's install ('.[notebook,test]', the
    README) does not hold. A run that selects the tier collects it, and fails loudly without
    playwright."""
    if collection_path == TESTS / "browser" and not _selects_browser(config):
        return True
    return None


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


@pytest.fixture
def client(server: ScriptedServer) -> Iterator[Client]:
    """A Client on the `server` fixture, no retries (each scripted reply answers one try)."""
    with Client(server.base_url, max_retries=0) as c:
        yield c


@pytest.fixture
def closed_port_url() -> str:
    """A base URL on a loopback port nothing listens on (a refused connection)."""
    from loopback import free_port

    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.fixture
def frame(demo: DemoServer, closed_port_url: str) -> pd.DataFrame:
    """The report tests' compare frame (`report_runs.compare_frame`), one endpoint refusing."""
    # imported here: pandas and rig_nb.compare stay out of the modules that never ask for it
    from report_runs import compare_frame

    return compare_frame(demo, closed_port_url)


@pytest.fixture
def blackhole_url() -> Iterator[str]:
    """A base URL whose connection attempts are never answered: a listener whose accept
    queue is full drops every further SYN, as a firewalled host does."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(8):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    probe = socket.socket()
    probe.settimeout(0.3)
    with pytest.raises(TimeoutError):
        probe.connect(("127.0.0.1", port))
    probe.close()
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@pytest.fixture
def run_loop(server: ScriptedServer) -> LoopRunner:
    """Runs the loop against the `server` fixture in one call (`tests/runs.py`)."""
    return LoopRunner(server)
