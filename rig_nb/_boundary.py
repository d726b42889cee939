"""Request boundaries: where long work counts its requests and can be cancelled.

    with request_scope(progress=on_progress, cancel=stop_event, planned=9):
        ...   # every request a Client sends from this thread is counted and may be cancelled

`Client` passes every request through `request_boundary()`. Inside a
`request_scope` (per thread: a ContextVar), a cancelled scope raises `Cancelled`
before a request is sent, and a request that fails after the cancel (cut by its
deadline) fails as `Cancelled` too; after each request `progress(done, planned)`
is called. Outside any scope the boundary does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import Cancelled

__all__ = [
    "CancelFlag",
    "Progress",
    "Scope",
    "cancel_check",
    "current_scope",
    "request_boundary",
    "request_scope",
]

Progress = Callable[[int, int], None]
CancelFlag = threading.Event | Callable[[], bool]


def cancel_check(cancel: CancelFlag | None) -> Callable[[], bool]:
    """`cancel` as a function saying whether the work is cancelled; ValueError for other types."""
    if cancel is None:
        return lambda: False
    if isinstance(cancel, threading.Event):
        return cancel.is_set
    if callable(cancel):
        return lambda: bool(cancel())
    raise ValueError("cancel must be a threading.Event or a callable returning a bool")


@dataclass
class Scope:
    """The requests of one piece of work: how many were planned and sent, and the cancel flag."""

    planned: int
    cancelled: Callable[[], bool]
    progress: Progress | None = None
    done: int = 0
    # The model requests among `done` (a reply asked of the model, not a metadata route).
    model_requests: int = 0
    # True once a request was refused or cut because of the cancel.
    stopped: bool = False

    def report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, max(self.planned, self.done))


_SCOPE: ContextVar[Scope | None] = ContextVar("rig_nb_request_scope", default=None)


def current_scope() -> Scope | None:
    """This thread's scope, or None outside any (work handed to other threads passes it on)."""
    return _SCOPE.get()


@contextmanager
def request_scope(
    *, planned: int, progress: Progress | None = None, cancel: CancelFlag | None = None
) -> Iterator[Scope]:
    """Count and guard the requests this thread sends inside the block."""
    if progress is not None and not callable(progress):
        raise ValueError("progress must be a callable (done, planned) or None")
    scope = Scope(planned, cancel_check(cancel), progress)
    token = _SCOPE.set(scope)
    try:
        scope.report()
        yield scope
    finally:
        _SCOPE.reset(token)


@contextmanager
def request_boundary(*, model: bool = True) -> Iterator[None]:
    """One request: refused when the scope is cancelled, counted when it ends (`model`: a
    request for a reply, counted apart from the server's metadata routes)."""
    scope = _SCOPE.get()
    if scope is None:
        yield
        return
    if scope.cancelled():
        scope.stopped = True
        raise Cancelled("cancelled before this request was sent")
    try:
        yield
    except Exception:
        if scope.cancelled():
            scope.stopped = True
            raise Cancelled("cancelled: the request in flight was cut") from None
        raise
    finally:
        scope.done += 1
        scope.model_requests += model
        scope.report()
