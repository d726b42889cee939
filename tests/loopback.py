"""Loopback plumbing shared by the test modules: free ports and bare socket servers.

A module of its own, not conftest: tests/browser and tests/real have conftest modules
too, and `from conftest import` would find whichever was imported last.
"""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

WAIT_S = 30.0


class CountingGate:
    """Counts the requests that pass `enter()`; the `hold`-th (0-based) waits there for `release`.

    The base of a server's handler or persona whose request a test wants in flight: the test
    waits on `arrived`, acts, then sets `release`.
    """

    def __init__(self, hold: int | None = None) -> None:
        self.hold = hold
        self.seen = 0
        self.arrived = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            n = self.seen
            self.seen += 1
        if n == self.hold:
            self.arrived.set()
            self.release.wait(WAIT_S)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SocketServer:
    """A bare socket server on 127.0.0.1: each connection goes to `serve(conn)`, one at a time.

    For what an HTTP server would refuse to send (raw bytes, a TLS listener that never speaks
    HTTP). A context manager; closing stops it.
    """

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                self.serve(conn)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        # shutdown wakes the accept() blocked in the serving thread; close alone does not.
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._thread.join(timeout=10)

    def __enter__(self) -> SocketServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RawServer(SocketServer):
    """Reads a request, writes `response` as given: whatever an HTTP library would refuse to."""

    def __init__(self, response: bytes) -> None:
        self.response = response
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(self.response)


class Held(SocketServer):
    """Accepts, reads the request unless `read` is False, then never answers until closed."""

    def __init__(self, read: bool = True) -> None:
        self.read = read
        self.release = threading.Event()
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def serve(self, conn: socket.socket) -> None:
        if self.read:
            conn.recv(65536)
        self.release.wait(30)

    def close(self) -> None:
        self.release.set()
        super().close()


class TLSServer(SocketServer):
    """A TLS listener with a self-signed certificate that answers nothing over HTTP.

    Enough to see what a client does when it speaks plain http to an https port, or
    completes a handshake with a server it does not trust.
    """

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        super().__init__()

    def serve(self, conn: socket.socket) -> None:
        with self.context.wrap_socket(conn, server_side=True) as tls:
            tls.recv(65536)
