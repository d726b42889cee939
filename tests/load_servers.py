"""A loopback server that counts the requests in flight, and the threads compare leaves."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from rig_nb.compare import THREAD_PREFIX
from rig_nb.demo.personas import WellBehaved
from rig_nb.testing import LoopbackServer, RecordedRequest, Response


class CountingServer(LoopbackServer):
    """Answers as the well-behaved persona; counts requests and those in flight at once.

    `hook(request, n)` runs before the answer (n counts from 0) and may return a Response
    to send instead.
    """

    def __init__(self, hook: Callable[[RecordedRequest, int], Response | None] | None = None):
        super().__init__()
        self.persona = WellBehaved()
        self.hook = hook
        self.state = threading.Condition()
        self.count = 0
        self.in_flight = 0
        self.peak = 0

    def handle(self, request: RecordedRequest) -> Response | Mapping[str, Any]:
        with self.state:
            n = self.count
            self.count += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.state.notify_all()
        try:
            instead = self.hook(request, n) if self.hook is not None else None
            return instead if instead is not None else dict(self.persona.reply(request.json))
        finally:
            with self.state:
                self.in_flight -= 1


def compare_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]
