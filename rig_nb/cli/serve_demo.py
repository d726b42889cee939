"""`serve-demo`: the embedded demo endpoint in the foreground until SIGINT or SIGTERM.

Its signal handling is the process's, not a command's: both handlers are installed
explicitly, since a shell starts a background job with SIGINT ignored.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from .hints import CommandError
from .text import terminal_width, wrap

__all__ = ["cmd_serve_demo"]


class _Stop(Exception):
    """Raised in the main thread by the SIGINT and SIGTERM handlers of serve-demo."""


def cmd_serve_demo(args: argparse.Namespace) -> int:
    from ..demo import DemoServer

    try:
        server = DemoServer(port=args.port)
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", 1) from None
    stopping = threading.Event()

    def stop(signum: int, frame: Any) -> None:
        if not stopping.is_set():  # a second signal during shutdown is not an error
            stopping.set()
            raise _Stop

    # Both handlers explicitly: a shell starts a background job with SIGINT ignored, and
    # Python then never installs its KeyboardInterrupt handler.
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with server:
            print(f"demo endpoint: {server.base_url}", flush=True)
            print(wrap(f"models: {', '.join(server.models)}", terminal_width()), flush=True)
            print("serving until Ctrl-C or SIGTERM", flush=True)
            # A lock wait in the main thread is interrupted by a signal whose handler raises.
            threading.Event().wait()
    except (_Stop, KeyboardInterrupt):
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("demo endpoint stopped", flush=True)
    return 0
