"""The doctor's prefix_cache over three turns (issue 45: cache-breaking-template keeps turn 1
and loses it from turn 3) and its evidence naming the first break in the requests as sent
(issue 42)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rig_nb import Client
from rig_nb.capabilities import CHECKS, endpoint_report
from rig_nb.demo import DemoServer
from rig_nb.wire import Turn


def test_a_template_that_breaks_the_prefix_at_turn_three_is_caught() -> None:
    # cache-breaking-template reuses all of turn 1 at turn 2 and stops there: only turn 3
    # shows the break, so the check runs a third turn when turn 2 reused everything.
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        with Client(demo.base_url) as client:
            report = endpoint_report(client, "cache-breaking-template", checks=["prefix_cache"])
    check = report.check("prefix_cache")
    assert check.verdict == "reused 43 of 44"
    assert "turn 2: 44 prompt tokens, 43 cached; turn 3: 56 prompt tokens, 43 cached" in (
        check.evidence
    )
    assert "reuse fell at turn 3: the requests as sent only grew" in check.evidence
    assert "preserve_thinking" in check.advice and check.ok is False
    assert report.requests == CHECKS["prefix_cache"] == 4  # auto, question, turns 2 and 3
    assert check.trace is not None and len(check.trace.iterations) == 3
    assert check.trace.prefix_reuse[1] == 1.0 and check.trace.prefix_reuse[2] < 1.0


def test_a_cache_that_keeps_the_prefix_over_three_turns_is_good_news() -> None:
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        with Client(demo.base_url) as client:
            report = endpoint_report(client, "prefix-keyed-cache", checks=["prefix_cache"])
    check = report.check("prefix_cache")
    assert check.verdict.startswith("reused ") and check.advice == "" and check.ok is True
    assert "turn 3: " in check.evidence and "fell" not in check.evidence
    assert check.trace is not None and check.trace.prefix_breaks == []


class StampsNonce:
    """A backend whose every request leads its system prompt with a fresh attribution nonce
    (anthropics/claude-code#68900), one added where the request has none."""

    def __init__(self, inner: Client) -> None:
        self.inner, self.count = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _stamped(self, request: Any) -> Any:
        self.count += 1
        line = f"cch={self.count % 16:x}{self.count:07x};"
        rest = tuple(t for t in request.turns if t.role != "system")
        return dataclasses.replace(request, turns=(Turn("system", line), *rest))

    def chat(self, request: Any, **options: Any) -> Any:
        return self.inner.chat(self._stamped(request), **options)

    def stream(self, request: Any, reader: Any, **options: Any) -> Any:
        return self.inner.stream(self._stamped(request), reader, **options)


def test_the_evidence_names_the_first_break_in_the_requests_as_sent() -> None:
    with DemoServer(stream_first_delay=0, stream_interval=0) as demo:
        with Client(demo.base_url) as client:
            stamped: Any = StampsNonce(client)
            report = endpoint_report(stamped, "prefix-keyed-cache", checks=["prefix_cache"])
    check = report.check("prefix_cache")
    assert check.verdict.startswith("reused ") and check.ok is False and check.advice
    assert "reuse fell at turn 2: first break: system changed at char 4: '" in check.evidence
    assert check.trace is not None and len(check.trace.iterations) == 2  # no third turn
